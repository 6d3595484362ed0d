"""Alertmanager: one alert posted to every target of a cluster, as the engine's
``alertmanager`` service sends it.

Options: ``targets`` (``host:port`` list, default ``127.0.0.1:9093``), ``scheme`` (default
``http``), ``apiPath`` (default ``/api/v2/alerts``), ``basicAuth`` (``username``,
``password``) or else ``bearerToken``, ``insecureSkipVerify`` and ``timeout`` (seconds per
request, default 3, and never longer than the context's timeout when not given). The recipient
is not used. The rendered ``alertmanager`` block (``labels``, at least one, ``annotations``,
``generatorURL``, ``startsAt``) is posted as a one-element JSON list to
``<scheme>://<target><apiPath>`` on every target at once; the send succeeds when at least one
target answers 200, as the engine's does. When none does, the error is retryable if any
target's failure was (no answer, 429, 5xx), final otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError
from rollout_workers.notifications.services.calls import (
    check,
    config_error,
    request,
    string_option,
)

SERVICE = "alertmanager"
DEFAULT_TARGET = "127.0.0.1:9093"
DEFAULT_API_PATH = "/api/v2/alerts"
DEFAULT_TIMEOUT = 3.0


def target_urls(options: Mapping[str, Any]) -> list[str]:
    targets = options.get("targets") or [DEFAULT_TARGET]
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise config_error(SERVICE, "option 'targets' must be a list of host:port strings")
    scheme = string_option(options, "scheme", SERVICE) or "http"
    api_path = string_option(options, "apiPath", SERVICE) or DEFAULT_API_PATH
    return [f"{scheme}://{target}{api_path}" for target in targets]


def _credentials(options: Mapping[str, Any]) -> tuple[tuple[str, str] | None, dict[str, str]]:
    basic = options.get("basicAuth")
    if basic is not None:
        if not isinstance(basic, Mapping):
            raise config_error(SERVICE, "option 'basicAuth' must be a map")
        user = string_option(basic, "username", SERVICE)
        return (user, string_option(basic, "password", SERVICE)), {}
    token = string_option(options, "bearerToken", SERVICE)
    return None, ({"Authorization": f"Bearer {token}"} if token else {})


def _timeout(options: Mapping[str, Any], ctx: SendContext) -> float:
    value = options.get("timeout")
    if isinstance(value, int | float) and not isinstance(value, bool) and value:
        return float(value)
    return min(DEFAULT_TIMEOUT, ctx.timeout)


def send(
    options: Mapping[str, Any], notification: Notification, recipient: str, ctx: SendContext
) -> None:
    alert = notification.blocks.get("alertmanager")
    if alert is None:
        raise config_error(SERVICE, "notification alertmanager no config")
    if not alert.get("labels"):
        raise config_error(SERVICE, "alertmanager at least one label pair required")
    urls = target_urls(options)
    auth, headers = _credentials(options)
    timeout = _timeout(options, ctx)
    verify = not options.get("insecureSkipVerify", False)

    def post(url: str) -> SendError | None:
        try:
            response = request(
                ctx,
                SERVICE,
                "POST",
                url,
                headers={"Content-Type": "application/json", **headers},
                json_body=[alert],
                auth=auth,
                timeout=timeout,
                verify=verify,
            )
            check(SERVICE, response)
        except SendError as e:
            return e
        return None

    # Every target is tried, at once, as the engine's goroutines do.
    with ThreadPoolExecutor(max_workers=len(urls)) as pool:
        failures = list(pool.map(post, urls))
    if any(f is None for f in failures):
        return
    errors = [f for f in failures if f is not None]
    waits = [e.retry_after for e in errors if e.retry_after is not None]
    raise SendError(
        "alertmanager: no events were successfully received by alertmanager ("
        + "; ".join(str(e).removeprefix(f"{SERVICE}: ") for e in errors)
        + ")",
        final=all(e.final for e in errors),
        status=errors[-1].status,
        retry_after=max(waits) if waits else None,
    )

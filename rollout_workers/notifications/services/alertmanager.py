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
from rollout_workers.notifications.services.options import Options, config_error
from rollout_workers.notifications.services.transport import check_status, request

SERVICE = "alertmanager"
DEFAULT_TARGET = "127.0.0.1:9093"
DEFAULT_API_PATH = "/api/v2/alerts"
DEFAULT_TIMEOUT = 3.0


def target_urls(options: Mapping[str, Any]) -> list[str]:
    opts = Options(SERVICE, options)
    targets = opts.text_list("targets") or [DEFAULT_TARGET]
    scheme = opts.text("scheme") or "http"
    api_path = opts.text("apiPath") or DEFAULT_API_PATH
    return [f"{scheme}://{target}{api_path}" for target in targets]


def _credentials(opts: Options) -> tuple[tuple[str, str] | None, dict[str, str]]:
    basic = opts.basic_auth()
    if basic is not None:
        return basic, {}
    token = opts.text("bearerToken")
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
    opts = Options(SERVICE, options)
    urls = target_urls(options)
    auth, headers = _credentials(opts)
    timeout = _timeout(options, ctx)
    verify = not opts.flag("insecureSkipVerify")

    def post(url: str) -> SendError | None:
        try:
            response = request(
                ctx,
                service=SERVICE,
                method="POST",
                url=url,
                headers={"Content-Type": "application/json", **headers},
                json_body=[alert],
                auth=auth,
                timeout=timeout,
                verify=verify,
                follow_redirects=False,
            )
            check_status(response, service=SERVICE, ok=(200,))
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

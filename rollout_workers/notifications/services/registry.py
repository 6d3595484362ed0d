"""Service type -> sender, as notifications-engine's ``pkg/services`` names the types, and the
dispatch over them: one attempt of a send, and the retry policy of a service."""

from __future__ import annotations

from dataclasses import replace

from rollout_workers.notifications.config import Service
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import (
    RetryPolicy,
    SendContext,
    Sender,
    SendError,
    alertmanager,
    email,
    googlechat,
    grafana,
    mattermost,
    opsgenie,
    pagerdutyv2,
    pushover,
    rocketchat,
    slack,
    teams,
    teams_workflows,
    telegram,
    webex,
    webhook,
)

SENDERS: dict[str, Sender] = {
    "webhook": webhook.send,
    "slack": slack.send,
    "email": email.send,
    "teams": teams.send,
    "teams-workflows": teams_workflows.send,
    "googlechat": googlechat.send,
    "mattermost": mattermost.send,
    "rocketchat": rocketchat.send,
    "opsgenie": opsgenie.send,
    "pagerdutyv2": pagerdutyv2.send,
    "alertmanager": alertmanager.send,
    "grafana": grafana.send,
    "telegram": telegram.send,
    "webex": webex.send,
    "pushover": pushover.send,
}


def send(service: Service, notification: Notification, recipient: str, ctx: SendContext) -> None:
    """One attempt to deliver ``notification`` to ``recipient`` through ``service``."""
    sender = SENDERS.get(service.type)
    if sender is None:
        raise SendError(
            f"notification service type {service.type!r} (service {service.name!r}) is not "
            "supported",
            final=True,
        )
    sender(service.options, notification, recipient, replace(ctx, service=service.name))


def supported_types() -> frozenset[str]:
    return frozenset(SENDERS)


def retry_policy(service: Service) -> RetryPolicy:
    """The webhook service's ``retryMax`` (retries after the first attempt, default 3),
    ``retryWaitMin`` and ``retryWaitMax`` (Go durations, default 1s and 5s), as the engine's
    go-retryablehttp client reads them; every other service gets the default policy."""
    if service.type != "webhook":
        return RetryPolicy()
    return webhook.webhook_retry_policy(service.options)

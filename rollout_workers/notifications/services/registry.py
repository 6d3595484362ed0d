"""Service type -> sender, as notifications-engine's ``pkg/services`` names the types."""

from __future__ import annotations

from rollout_workers.notifications.services import (
    Sender,
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

"""Service type -> sender. Each sender module adds its line here."""

from __future__ import annotations

from rollout_workers.notifications.services import (
    Sender,
    email,
    googlechat,
    mattermost,
    slack,
    teams,
    teams_workflows,
    webhook,
)

SENDERS: dict[str, Sender] = {}

# Group A: webhook and the chat/mail services.
SENDERS["webhook"] = webhook.send
SENDERS["slack"] = slack.send
SENDERS["email"] = email.send
SENDERS["teams"] = teams.send
SENDERS["teams-workflows"] = teams_workflows.send
SENDERS["googlechat"] = googlechat.send
SENDERS["mattermost"] = mattermost.send

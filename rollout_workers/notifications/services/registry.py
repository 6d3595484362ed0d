"""Service type -> sender. Each sender module adds its line here."""

from __future__ import annotations

from rollout_workers.notifications.services import (
    Sender,
    alertmanager,
    grafana,
    opsgenie,
    pagerdutyv2,
    pushover,
    rocketchat,
    telegram,
    webex,
)

SENDERS: dict[str, Sender] = {}
SENDERS["rocketchat"] = rocketchat.send
SENDERS["opsgenie"] = opsgenie.send
SENDERS["pagerdutyv2"] = pagerdutyv2.send
SENDERS["alertmanager"] = alertmanager.send
SENDERS["grafana"] = grafana.send
SENDERS["telegram"] = telegram.send
SENDERS["webex"] = webex.send
SENDERS["pushover"] = pushover.send

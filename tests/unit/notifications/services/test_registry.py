"""The registry names every sender of this group."""

from __future__ import annotations

from rollout_workers.notifications.services import alertmanager, registry, telegram

GROUP_B = {
    "rocketchat",
    "opsgenie",
    "pagerdutyv2",
    "alertmanager",
    "grafana",
    "telegram",
    "webex",
    "pushover",
}


def test_group_b_senders_are_registered() -> None:
    assert set(registry.SENDERS) >= GROUP_B
    assert registry.SENDERS["telegram"] is telegram.send
    assert registry.SENDERS["alertmanager"] is alertmanager.send

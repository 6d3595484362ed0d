"""Service type -> sender. Each sender module adds its line here."""

from __future__ import annotations

from rollout_workers.notifications.services import Sender

SENDERS: dict[str, Sender] = {}

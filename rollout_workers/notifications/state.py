"""Which notifications to send, and the send-once keys, after notifications-engine's state.

Two rules meet here:

- Argo Rollouts v1.9.1 (``sendNotifications``, utils/record/record.go) sends on every recorded
  event whose trigger has destinations: for each destination and each condition, when the
  condition triggered, or when its ``when`` is empty (the engine evaluates an empty ``when`` as
  false; Argo special-cases it by the key's ``sha1("")`` part). It keeps no notified state and
  ignores ``oncePer``. :func:`should_send` is that rule.
- notifications-engine's controller (Argo CD's; ``pkg/controller/state.go``) remembers what it
  sent in the ``notified.notifications.argoproj.io`` annotation, keyed by
  :func:`state_item_key`: ``[<oncePer>:][<namespace>:]<trigger>:<condition key>:<service>:
  <recipient>``. Without ``oncePer`` a key is forgotten when its condition stops holding (so it
  fires again on the next transition); with ``oncePer`` it is never forgotten. At most 100 keys
  are kept, oldest first out. :class:`NotificationsState` ports it, with the clock injected.

A reconcile on a Celery worker can run twice (a retry, a redelivery); sends are made once per
recorded event by the outbox's job keys (outbox.py), and within a job :func:`state_item_key`
names each destination's condition (delivery.py).
"""

from __future__ import annotations

import json

from rollout_workers.notifications.subscriptions import Destination
from rollout_workers.notifications.triggers import ConditionResult, condition_key

NOTIFIED_ANNOTATION = "notified.notifications.argoproj.io"
NOTIFIED_HISTORY_MAX_SIZE = 100
EMPTY_CONDITION = condition_key(0, "").split(".", 1)[1]


def should_send(result: ConditionResult) -> bool:
    """Argo's rule: a triggered condition, or one with an empty ``when``."""
    return result.triggered or result.key.split(".", 1)[1] == EMPTY_CONDITION


def state_item_key(
    trigger: str,
    result: ConditionResult,
    dest: Destination,
    self_config_namespace: str | None = None,
) -> str:
    """The engine's ``StateItemKey``; ``self_config_namespace`` is its ``apiNamespace`` when the
    configuration is self-service (``isSelfConfig``)."""
    parts = [trigger, result.key, dest.service, dest.recipient]
    if self_config_namespace is not None:
        parts.insert(0, self_config_namespace)
    key = ":".join(parts)
    if result.once_per:
        key = f"{result.once_per}:{key}"
    return key


class NotificationsState(dict[str, int]):
    """The engine's ``NotificationsState``: key -> Unix time it was notified."""

    def truncate(self, max_size: int) -> None:
        """Keep the newest ``max_size`` keys (Go's sort.Slice is not stable: equal times drop in
        no defined order; here, by key)."""
        excess = len(self) - max_size
        if excess > 0:
            for key in sorted(self, key=lambda k: (self[k], k))[:excess]:
                del self[key]

    def set_already_notified(
        self,
        trigger: str,
        result: ConditionResult,
        dest: Destination,
        is_notified: bool,
        *,
        now: int,
        self_config_namespace: str | None = None,
    ) -> bool:
        """``SetAlreadyNotified``: record (or forget) a notification; whether the state changed.
        A ``oncePer`` key is never forgotten."""
        key = state_item_key(trigger, result, dest, self_config_namespace)
        if (key in self) == is_notified:
            return False
        if is_notified:
            self[key] = now
        else:
            if result.once_per:
                return False
            del self[key]
        return True

    def persist(self, annotations: dict[str, str]) -> dict[str, str]:
        """``Persist``: the annotations with the state (truncated) written, or removed if
        empty."""
        self.truncate(NOTIFIED_HISTORY_MAX_SIZE)
        out = dict(annotations)
        if not self:
            out.pop(NOTIFIED_ANNOTATION, None)
        else:
            # Go's json.Marshal of a map: keys sorted, no spaces.
            out[NOTIFIED_ANNOTATION] = json.dumps(dict(sorted(self.items())), separators=(",", ":"))
        return out

    @classmethod
    def from_annotation(cls, value: str | None) -> NotificationsState:
        """``NewState``: an empty or malformed annotation is an empty state."""
        if not value:
            return cls()
        try:
            data = json.loads(value)
        except ValueError:
            return cls()
        if not isinstance(data, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in data.values()
        ):
            return cls()
        return cls(data)

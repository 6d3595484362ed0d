"""The reconcile's side of notifications: an event becomes a job in Redis and a queued key.

Argo Rollouts sends notifications from its event recorder, inline, while the reconcile waits
(utils/record/record.go). Here a recorded event whose trigger has a destination is written to
Redis as a *job* (the object as it stood when the event was recorded, the reason, type and
message) and its key is added to the ``notifications`` workqueue; a worker sends it
(delivery.py). The reconcile never waits on a notification service.

Exactly once, however often the event is recorded: the job's key names the object and the
*transition*, not the attempt. A reconcile that records an event and then fails (a write
conflict, a lost lease, kill -9 before its status patch) runs again over the same state and
records the same event; its job key is the same, the job is already there (``HSETNX``), and the
add coalesces with it or finds it delivered. The transition is a digest of the object's UID, the
event's reason and message, and what the status says about where the object stands (revision,
step, pod hashes, phase, abort, pause conditions, and each condition's type, status, reason and
last transition time), so the next real transition of the same kind (a second abort after a
retry) is a new job. Replica counts and resourceVersions are left out: they change between a
failed attempt and its retry without any transition. A job is remembered for
``notifications.remember`` seconds.

The job is written before its key is added: a worker killed between the two leaves a job that
its retried reconcile queues (the add is repeated even when the job exists).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from rollout_workers.notifications.source import ConfigCache, config_cache
from rollout_workers.notifications.subscriptions import destinations
from rollout_workers.notifications.triggers import trigger_for_reason
from rollout_workers.objects import Obj
from rollout_workers.reconcile.runtime import Runtime
from rollout_workers.redisclient import Script

log = logging.getLogger(__name__)


REVISION_ANNOTATION = "rollout.argoproj.io/revision"
#: A job key's name part: the object's name, cut to leave room for the digest (253 in all).
_NAME_ROOM = 253 - 17


#: The job's hash with its payload and lifetime, unless it exists (Redis 6.2: no EXPIRE NX).
_CREATE = """
if redis.call('HSETNX', KEYS[1], 'payload', ARGV[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
"""


class Queue(Protocol):
    def add(self, keys: Sequence[str]) -> Any: ...


def job_hash_key(prefix: str, key: str) -> str:
    """The Redis hash of a job: ``payload`` and one field per destination's state."""
    return f"{prefix}:notifications:job:{key}"


def _status_digest(status: Mapping[str, Any]) -> list[Any]:
    conditions = sorted(
        (
            str(c.get("type", "")),
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("lastTransitionTime", "")),
        )
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    )
    pauses = sorted(
        (str(p.get("reason", "")), str(p.get("startTime", "")))
        for p in status.get("pauseConditions") or []
        if isinstance(p, Mapping)
    )
    return [
        status.get("phase"),
        status.get("currentStepIndex"),
        status.get("currentPodHash"),
        status.get("stableRS"),
        status.get("abort"),
        status.get("abortedAt"),
        status.get("promoteFull"),
        pauses,
        conditions,
    ]


def job_key(obj: Mapping[str, Any], reason: str, message: str) -> str:
    """``<namespace>/<name>.<digest of the transition>`` (see the module docstring)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    identity = [
        meta.get("uid", ""),
        (meta.get("annotations") or {}).get(REVISION_ANNOTATION, ""),
        reason,
        message,
        _status_digest(status or {}),
    ]
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    name = str(meta.get("name", ""))[:_NAME_ROOM].rstrip("-.")
    return f"{meta.get('namespace', '')}/{name}.{digest}"


@dataclass(frozen=True)
class Job:
    """What a worker needs to send an event's notifications."""

    object: Obj  # with apiVersion and kind
    reason: str
    type: str  # Normal or Warning
    message: str

    @property
    def trigger(self) -> str:
        return trigger_for_reason(self.reason)

    @property
    def namespace(self) -> str:
        return str((self.object.get("metadata") or {}).get("namespace", ""))

    @property
    def name(self) -> str:
        return str((self.object.get("metadata") or {}).get("name", ""))

    def dumps(self) -> str:
        return json.dumps(
            {
                "object": self.object,
                "reason": self.reason,
                "type": self.type,
                "message": self.message,
            },
            separators=(",", ":"),
        )

    @classmethod
    def loads(cls, text: str | bytes) -> Job:
        """Raises ValueError on anything but a job as `dumps` writes it."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("object"), dict):
            raise ValueError("not a notification job")
        fields = {name: data.get(name) for name in ("reason", "type", "message")}
        if not all(isinstance(v, str) for v in fields.values()):
            raise ValueError("not a notification job")
        return cls(
            data["object"], str(fields["reason"]), str(fields["type"]), str(fields["message"])
        )


class Outbox:
    """Turns recorded events into queued notification jobs."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        prefix: str,
        configs: ConfigCache,
        queue: Queue,
        remember: float,
    ) -> None:
        self._redis, self._prefix = client, prefix
        self._configs = configs
        self._queue = queue
        self._remember = max(1, round(remember))
        self._create = Script(client, _CREATE)

    def subscribed(self, obj: Mapping[str, Any], trigger: str) -> bool:
        """Whether any config that applies to `obj` has a destination for `trigger`."""
        namespace = str((obj.get("metadata") or {}).get("namespace", ""))
        return any(
            destinations(c.config, obj, trigger) for c in self._configs.for_object(namespace)
        )

    def event(self, obj: Obj, *, reason: str, message: str, warning: bool) -> str | None:
        """Queue the notifications of an event about `obj` (which carries its apiVersion and
        kind); returns the job key, or None when nobody is subscribed to its trigger. Redis
        errors propagate: the reconcile fails and records the event again when it is retried."""
        if not self.subscribed(obj, trigger_for_reason(reason)):
            return None
        key = job_key(obj, reason, message)
        job = Job(obj, reason, "Warning" if warning else "Normal", message)
        self._create(keys=[job_hash_key(self._prefix, key)], args=[job.dumps(), self._remember])
        self._queue.add([key])
        log.debug("notification job %s queued for %s", key, reason)
        return key


def make_outbox(runtime: Runtime) -> Outbox:
    """The outbox of a worker process: the cached configs, the `notifications` queue."""
    settings = runtime.settings
    return Outbox(
        runtime.redis,
        prefix=settings.redis.key_prefix,
        configs=config_cache(runtime.redis, settings),
        queue=runtime.queue("notifications"),
        remember=settings.notifications.remember,
    )

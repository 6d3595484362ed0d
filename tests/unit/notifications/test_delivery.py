"""outbox and delivery over a real Redis: an event becomes one job, a job is sent once per
destination and condition, retries wait on the queue's timers, failures are final and leave
an event; the job key follows the transition, not the attempt."""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from rollout_workers.keys import ObjectKey
from rollout_workers.notifications.delivery import (
    FAILED_REASON,
    Delivery,
    Metrics,
    analysis_runs_of,
)
from rollout_workers.notifications.outbox import Job, Outbox, job_hash_key, job_key
from rollout_workers.notifications.render import Notification
from rollout_workers.notifications.services import SendContext, SendError, registry
from rollout_workers.notifications.source import CONFIGMAP_NAME, SECRET_NAME, ConfigCache
from rollout_workers.reconcile.handlers import SyncRequest
from rollout_workers.workqueue import Outcome

PREFIX = "rwtest"
Obj = dict[str, Any]

ROLLOUT: Obj = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Rollout",
    "metadata": {
        "namespace": "team",
        "name": "web",
        "uid": "u-1",
        "resourceVersion": "10",
        "labels": {"app": "web"},
        "annotations": {
            "rollout.argoproj.io/revision": "2",
            "notifications.argoproj.io/subscribe.on-rollout-step-completed.test": "a;b",
        },
    },
    "status": {
        "phase": "Progressing",
        "currentStepIndex": 1,
        "currentPodHash": "abc",
        "readyReplicas": 1,
        "conditions": [
            {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
        ],
    },
}  # fmt: skip

CONFIG: dict[str, str] = {
    "service.test": "token: $token",
    "template.step": "message: 'step {{.rollout.status.currentStepIndex}} of "
    "{{.rollout.metadata.name}}'",
    "template.env": "message: '{{env \"HOME\"}}'",
    "trigger.on-rollout-step-completed": "- send: [step]",
    "trigger.on-rollout-aborted": "- when: rollout.status.phase == 'Degraded'\n  send: [step]",
    "trigger.on-rollout-paused": "- send: [env]",
}  # fmt: skip


@dataclass
class Sent:
    options: Mapping[str, Any]
    message: str
    recipient: str


@dataclass
class FakeService:
    """A sender registered as service type `test` for these tests: records each attempt and
    fails as told (per recipient, errors consumed one per attempt)."""

    sent: list[Sent] = field(default_factory=list)
    errors: dict[str, list[SendError]] = field(default_factory=dict)

    def __call__(
        self, options: Mapping[str, Any], n: Notification, recipient: str, ctx: SendContext
    ) -> None:
        if self.errors.get(recipient):
            raise self.errors[recipient].pop(0)
        self.sent.append(Sent(options, n.message, recipient))


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setitem(registry.SENDERS, "test", fake)
    return fake


@dataclass
class Objects:
    configmaps: dict[tuple[str, str], Obj] = field(default_factory=dict)
    secrets: dict[tuple[str, str], Obj] = field(default_factory=dict)

    def cache(self, *, self_service: bool = False) -> ConfigCache:
        return ConfigCache(
            configmaps=lambda ns, name: self.configmaps.get((ns, name)),
            secrets=lambda ns, name: self.secrets.get((ns, name)),
            controller_namespace="argo-rollouts",
            self_service=self_service,
        )

    def put(self, namespace: str, data: Mapping[str, str], version: str = "1") -> None:
        self.configmaps[(namespace, CONFIGMAP_NAME)] = {
            "metadata": {"uid": f"cm-{namespace}", "resourceVersion": version},
            "data": dict(data),
        }
        self.secrets[(namespace, SECRET_NAME)] = {
            "metadata": {"uid": f"s-{namespace}", "resourceVersion": "1"},
            "data": {"token": base64.b64encode(b"s3cret").decode()},
        }


class Queue:
    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, keys: list[str]) -> None:
        self.added.extend(keys)


class Lease:
    def lost(self) -> bool:
        return False

    def check(self) -> None:
        pass


@dataclass
class Recorded:
    events: list[tuple[str, str]] = field(default_factory=list)
    metrics: list[tuple[str, bool]] = field(default_factory=list)


class RecordingMetrics(Metrics):
    def __init__(self, rec: Recorded) -> None:
        self.rec = rec

    def send(self, job: Job, *, ok: bool) -> None:
        self.rec.metrics.append((job.reason, ok))


@dataclass
class World:
    rdb: redis.Redis
    objects: Objects
    queue: Queue
    outbox: Outbox
    delivery: Delivery
    recorded: Recorded

    def sync(self, key: str) -> Any:
        return self.delivery.sync(SyncRequest("notifications", ObjectKey(key), Lease()))


def world(rdb: redis.Redis, objects: Objects, *, self_service: bool = False) -> World:
    cache = objects.cache(self_service=self_service)
    queue = Queue()
    rec = Recorded()
    outbox = Outbox(rdb, prefix=PREFIX, configs=cache, queue=queue, remember=60)
    delivery = Delivery(
        rdb,
        prefix=PREFIX,
        configs=cache,
        analysis_runs=lambda ns: [],
        record_event=lambda obj, reason, message: rec.events.append((reason, message)),
        context=SendContext(),
        metrics=RecordingMetrics(rec),
    )
    return World(rdb, objects, queue, outbox, delivery, rec)


@pytest.fixture
def w(rdb: redis.Redis) -> Iterator[World]:
    objects = Objects()
    objects.put("argo-rollouts", CONFIG)
    yield world(rdb, objects)
    for k in rdb.scan_iter(f"{PREFIX}:*"):
        rdb.delete(k)


def step_event(w: World, obj: Obj = ROLLOUT) -> str | None:
    return w.outbox.event(
        obj, reason="RolloutStepCompleted", message="Rollout step 1/2 completed", warning=False
    )


def test_an_event_nobody_subscribes_to_queues_nothing(w: World, service: FakeService) -> None:
    assert w.outbox.event(ROLLOUT, reason="RolloutUpdated", message="x", warning=False) is None
    assert w.queue.added == []


def test_an_event_is_sent_once_to_each_recipient(w: World, service: FakeService) -> None:
    key = step_event(w)
    assert key is not None and w.queue.added == [key]
    result = w.sync(key)
    assert result.outcome is Outcome.GONE
    assert [(s.recipient, s.message) for s in service.sent] == [
        ("a", "step 1 of web"),
        ("b", "step 1 of web"),
    ]
    assert service.sent[0].options == {"token": "s3cret"}  # the Secret's value
    assert w.recorded.metrics == [("RolloutStepCompleted", True)] * 2
    # The same event again (a retried reconcile), and the job handled again: nothing more.
    assert step_event(w) == key
    assert w.sync(key).outcome is Outcome.GONE
    assert len(service.sent) == 2


def test_the_job_key_follows_the_transition_not_the_attempt() -> None:
    retried = copy.deepcopy(ROLLOUT)
    retried["metadata"]["resourceVersion"] = "11"  # a fresher read
    retried["status"]["readyReplicas"] = 2
    key = job_key(ROLLOUT, "RolloutStepCompleted", "m")
    assert job_key(retried, "RolloutStepCompleted", "m") == key
    assert key.startswith("team/web.")
    later = copy.deepcopy(ROLLOUT)
    later["status"]["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:05:00Z"
    for other in (
        job_key(later, "RolloutStepCompleted", "m"),
        job_key(ROLLOUT, "RolloutStepCompleted", "n"),
        job_key(ROLLOUT, "RolloutPaused", "m"),
        job_key({**ROLLOUT, "metadata": {**ROLLOUT["metadata"], "uid": "u-2"}}, "R", "m"),
    ):
        assert other != key
    long = {**ROLLOUT, "metadata": {**ROLLOUT["metadata"], "name": "x" * 253}}
    assert len(job_key(long, "R", "m").split("/")[1]) <= 253


def test_the_job_renders_the_object_as_recorded(w: World, service: FakeService) -> None:
    key = step_event(w)
    assert key is not None
    # The job carries the object as the event saw it, whatever the cache says later.
    assert Job.loads(w.rdb.hget(job_hash_key(PREFIX, key), "payload") or b"").object == ROLLOUT


def test_a_transient_error_is_retried_after_the_policys_wait(
    w: World, service: FakeService
) -> None:
    service.errors = {"a": [SendError("503", final=False, status=503)]}
    key = step_event(w)
    assert key is not None
    first = w.sync(key)
    assert first.outcome is Outcome.AFTER and first.delay == 1.0
    assert [s.recipient for s in service.sent] == ["b"]
    assert w.sync(key).outcome is Outcome.GONE
    assert [s.recipient for s in service.sent] == ["b", "a"]
    assert w.recorded.events == []


def test_a_429_waits_as_long_as_it_is_told(w: World, service: FakeService) -> None:
    service.errors = {"a": [SendError("429", final=False, status=429, retry_after=30)]}
    key = step_event(w)
    assert key is not None
    assert w.sync(key).delay == 30


def test_retries_end_after_the_policys_attempts(w: World, service: FakeService) -> None:
    service.errors = {"a": [SendError("down", final=False)] * 3}
    key = step_event(w)
    assert key is not None
    assert w.sync(key).outcome is Outcome.AFTER  # a: attempt 1; b sent
    assert w.sync(key).outcome is Outcome.AFTER  # a: attempt 2
    assert w.sync(key).outcome is Outcome.GONE  # a: attempt 3, the last
    assert [s.recipient for s in service.sent] == ["b"]
    (event,) = w.recorded.events
    assert event == (
        FAILED_REASON,
        "Failed to send notification on-rollout-step-completed to test:a: down",
    )
    assert ("RolloutStepCompleted", False) in w.recorded.metrics


def test_a_final_error_is_not_retried(w: World, service: FakeService) -> None:
    service.errors = {"a": [SendError("401 invalid_auth", final=True, status=401)]}
    key = step_event(w)
    assert key is not None
    assert w.sync(key).outcome is Outcome.GONE
    assert [s.recipient for s in service.sent] == ["b"]
    assert [reason for reason, _ in w.recorded.events] == [FAILED_REASON]


def test_a_send_interrupted_by_a_crash_is_tried_again(w: World, service: FakeService) -> None:
    key = step_event(w)
    assert key is not None
    hash_key = job_hash_key(PREFIX, key)
    w.sync(key)
    # As if the worker had died after starting the attempt at `b` and before recording it.
    (field_b,) = [f for f in w.rdb.hkeys(hash_key) if f.endswith(b":test:b")]
    w.rdb.hset(hash_key, field_b, "attempt:1")
    w.sync(key)
    assert [s.recipient for s in service.sent] == ["a", "b", "b"]


def test_env_in_a_template_sends_nothing_and_leaves_an_error_event(
    w: World, service: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/the/workers/home")
    obj = copy.deepcopy(ROLLOUT)
    obj["metadata"]["annotations"] = {
        "notifications.argoproj.io/subscribe.on-rollout-paused.test": "a"
    }
    key = w.outbox.event(obj, reason="RolloutPaused", message="paused", warning=False)
    assert key is not None
    assert w.sync(key).outcome is Outcome.GONE
    assert service.sent == []
    ((reason, message),) = w.recorded.events
    assert reason == FAILED_REASON and "env" in message and "/the/workers/home" not in message


def test_a_when_condition_filters(w: World, service: FakeService) -> None:
    obj = copy.deepcopy(ROLLOUT)
    obj["metadata"]["annotations"] = {
        "notifications.argoproj.io/subscribe.on-rollout-aborted.test": "a"
    }
    key = w.outbox.event(obj, reason="RolloutAborted", message="aborted", warning=True)
    assert key is not None
    w.sync(key)
    assert service.sent == []  # phase Progressing: the condition does not hold
    obj["status"]["phase"] = "Degraded"
    key = w.outbox.event(obj, reason="RolloutAborted", message="aborted", warning=True)
    assert key is not None
    w.sync(key)
    assert [s.recipient for s in service.sent] == ["a"]


def test_failures_of_configuration_are_final_and_reported(w: World, service: FakeService) -> None:
    obj = copy.deepcopy(ROLLOUT)
    obj["metadata"]["annotations"] = {
        "notifications.argoproj.io/subscribe.on-rollout-step-completed.nope": "x",
        "notifications.argoproj.io/subscribe.on-rollout-updated.test": "y",
    }
    for reason in ("RolloutStepCompleted", "RolloutUpdated"):
        key = w.outbox.event(obj, reason=reason, message=reason, warning=False)
        assert key is not None
        assert w.sync(key).outcome is Outcome.GONE
    assert [m for _, m in w.recorded.events] == [
        "Failed to send notification on-rollout-step-completed to nope:x: notification service "
        "'nope' is not configured",
        "Failed to send notification on-rollout-updated to test:y: trigger 'on-rollout-updated' "
        "is not configured",
    ]


def test_an_unsupported_service_type_is_named(w: World) -> None:
    obj = copy.deepcopy(ROLLOUT)
    obj["metadata"]["annotations"] = {
        "notifications.argoproj.io/subscribe.on-rollout-step-completed.carrier-pigeon": "x"
    }
    w.objects.put("argo-rollouts", {**CONFIG, "service.carrier-pigeon": "{}"})
    key = step_event(w, obj)
    assert key is not None
    w.sync(key)
    ((_, message),) = w.recorded.events
    assert "type 'carrier-pigeon'" in message and message.endswith("is not supported")


def test_self_service_adds_the_objects_own_namespace(
    rdb: redis.Redis, service: FakeService
) -> None:
    objects = Objects()
    objects.put("argo-rollouts", CONFIG)
    objects.put("team", {**CONFIG, "template.step": "message: own config"})
    for self_service, expected in (
        (False, ["step 1 of web"]),
        (True, ["step 1 of web", "own config"]),
    ):
        service.sent.clear()
        w = world(rdb, objects, self_service=self_service)
        key = step_event(
            w, {**ROLLOUT, "metadata": {**ROLLOUT["metadata"], "uid": f"u-{self_service}"}}
        )
        assert key is not None
        w.sync(key)
        assert sorted({s.message for s in service.sent}) == sorted(expected)


def test_a_malformed_job_is_dropped(w: World) -> None:
    w.rdb.hset(job_hash_key(PREFIX, "team/web.0"), "payload", "{not json")
    assert w.sync("team/web.0").outcome is Outcome.GONE
    assert not w.rdb.exists(job_hash_key(PREFIX, "team/web.0"))


def test_no_config_map_means_no_notifications(rdb: redis.Redis, service: FakeService) -> None:
    w = world(rdb, Objects())
    assert step_event(w) is None


def test_analysis_runs_of_the_current_revision_newest_first() -> None:
    def run(name: str, pod_hash: str, revision: str, created: str) -> Obj:
        meta = {"name": name, "creationTimestamp": created,
                "labels": {"rollouts-pod-template-hash": pod_hash},
                "annotations": {"rollout.argoproj.io/revision": revision}}  # fmt: skip
        return {"metadata": meta}

    runs = [
        run("old", "abc", "2", "2026-01-01T00:00:00Z"),
        run("other-hash", "def", "2", "2026-01-01T00:00:01Z"),
        run("other-revision", "abc", "1", "2026-01-01T00:00:02Z"),
        run("new", "abc", "2", "2026-01-01T00:00:03Z"),
    ]
    found = analysis_runs_of(ROLLOUT, runs)
    assert [r["metadata"]["name"] for r in found or []] == ["new", "old"]
    assert analysis_runs_of(ROLLOUT, runs[1:3]) is None


def test_unsupported_types_are_known() -> None:
    assert "carrier-pigeon" not in registry.supported_types()

"""The batched sync sender, real Redis: the messages it puts on the broker are the ones
`app.send_task` would, every key gets one, and a worker host's publish records are cleared."""

from __future__ import annotations

import json
from typing import Any

import redis

from rollout_workers.celeryapp.app import create_app
from rollout_workers.celeryapp.sender import BATCH, Envelopes, SyncSender
from rollout_workers.celeryapp.tasks import build_runtime
from rollout_workers.celeryapp.transport import KEY_HEADER
from rollout_workers.keys import ObjectKey
from rollout_workers.settings import Settings
from rollout_workers.workqueue import Claim, Outcome

A = ObjectKey("default/a")

#: Fields that hold a fresh id per message.
FRESH = {("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id")}


def _envelopes(rdb: redis.Redis, queue: str) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in reversed(rdb.lrange(queue, 0, -1))]


def _without_ids(envelope: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(envelope))
    for section, name in FRESH:
        assert out[section].pop(name)
    assert out["properties"].pop("delivery_tag")
    return out


def test_a_batched_message_is_the_message_send_task_sends(
    rdb: redis.Redis, settings: Settings
) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    app.send_task("rollouts.sync", args=(A,), queue="rollouts", headers={KEY_HEADER: A})
    SyncSender(app, name="rollouts.sync", queue="rollouts")([A])
    by_send_task, batched = _envelopes(rdb, "rollouts")
    assert _without_ids(batched) == _without_ids(by_send_task)
    headers = batched["headers"]
    assert headers["root_id"] == headers["id"] == batched["properties"]["correlation_id"]


def test_every_key_gets_one_message_across_pipelines(rdb: redis.Redis, settings: Settings) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    keys = [ObjectKey(f"ns/k-{i}") for i in range(2 * BATCH + 7)]
    SyncSender(app, name="analysisruns.sync", queue="analysis")(keys)
    envelopes = _envelopes(rdb, "analysis")
    assert [e["headers"][KEY_HEADER] for e in envelopes] == keys
    assert {e["headers"]["task"] for e in envelopes} == {"analysisruns.sync"}
    assert len({e["headers"]["id"] for e in envelopes}) == len(keys)


def test_a_worker_host_resync_sends_every_key_and_clears_its_publish_records(
    rdb: redis.Redis, settings: Settings
) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "rollouts_host": "h1",
    }
    queue = build_runtime(app, settings, settings.redis.url).queue("rollouts")
    keys = sorted(ObjectKey(f"ns/k-{i:04d}") for i in range(BATCH + 500))
    rdb.sadd(queue.k_known, *keys)
    assert queue.resync().queued == keys
    assert queue.held() == {}, "every record cleared once its message was sent"
    sent = [e["headers"][KEY_HEADER] for e in _envelopes(rdb, "rollouts")]
    assert sorted(sent) == keys


def test_an_envelope_is_the_message_the_sender_sends(rdb: redis.Redis, settings: Settings) -> None:
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    sender = SyncSender(app, name="rollouts.sync", queue="rollouts")
    envelopes = Envelopes(sender)
    sender([A])
    (sent,) = _envelopes(rdb, "rollouts")
    assert envelopes.list_key == "rollouts"
    assert rdb.llen("rollouts") == 1, "capturing the template pushed nothing"
    made = json.loads(envelopes(A))
    assert _without_ids(made) == _without_ids(sent)
    headers = made["headers"]
    assert headers["root_id"] == headers["id"] == made["properties"]["correlation_id"]
    assert headers[KEY_HEADER] == A and headers["argsrepr"] == repr((A,))
    other = json.loads(envelopes(ObjectKey("ns/b")))
    assert other["headers"]["id"] != headers["id"]
    assert other["properties"]["delivery_tag"] != made["properties"]["delivery_tag"]


def test_done_pushes_a_dirty_keys_message_itself(rdb: redis.Redis, settings: Settings) -> None:
    """A worker host's queue: the dirty key's message is on the broker when `done` returns,
    with no publish afterwards and no record of it being published."""
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "rollouts_host": "h1",
    }
    queue = build_runtime(app, settings, settings.redis.url).queue("rollouts")
    queue.add([A])
    rdb.delete("rollouts")  # the add's own message: not the one under test
    claimed = queue.claim(A, "h1/1:x")
    assert claimed.status is Claim.CLAIMED
    assert queue.add([A]).dirty == [A]
    assert queue.done(A, "h1/1:x", Outcome.OK)
    (message,) = _envelopes(rdb, "rollouts")
    assert message["headers"][KEY_HEADER] == A
    assert message["headers"]["task"] == "rollouts.sync"
    assert queue.held() == {}


def test_add_pushes_a_new_keys_message_itself(rdb: redis.Redis, settings: Settings) -> None:
    """A worker host's queue, as the watcher's and beat's: a newly queued key's message is on
    the broker when `add` returns, the message SyncSender would send, with nothing recorded as
    being published; a key already queued gets none."""
    assert settings.redis.url
    app = create_app(settings, settings.redis.url)
    app.conf.broker_transport_options = {
        **app.conf.broker_transport_options,
        "rollouts_host": "h1",
    }
    runtime = build_runtime(app, settings, settings.redis.url)
    queue = runtime.queue("rollouts")
    assert queue.add([A]).queued == [A]
    assert queue.held() == {}
    (pushed,) = _envelopes(rdb, "rollouts")
    assert queue.add([A]).coalesced == [A]
    assert rdb.llen("rollouts") == 1, "a queued key is not sent twice"
    rdb.delete("rollouts")
    SyncSender(app, name="rollouts.sync", queue="rollouts")([A])
    (sent,) = _envelopes(rdb, "rollouts")
    assert _without_ids(pushed) == _without_ids(sent)

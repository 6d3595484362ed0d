"""The publisher of sync messages: one pipelined batch per call.

`app.send_task` costs about 1.4 ms a message on Redis: kombu builds a `redis.Redis` client and
makes one LPUSH round trip per publish, and Celery routes the task, reads its options and
declares its queue each time. A workqueue call that queues many keys (an add, a resync, a
tick, a hand-back) sends them all here at once: the route, the parent task and the queue
declaration are worked out once, each message is built by Celery's own `create_task_message`
and published through kombu's `Producer.publish`, and kombu's publish batch sends the LPUSHes
to Redis in pipelines of `BATCH` commands. The messages are the ones `app.send_task` would
send (tests/integration/test_sender.py compares them), so any worker consumes them.

A batch that fails raises, as a failed `send_task` did: its keys stay queued in the workqueue
(recorded as being published when the caller is a worker host), and the tick sends them again.

`Envelopes` makes the same message without kombu, for the workqueue's `done` to push in its own
script: a dirty key queued again after its reconcile, which is most reconciles' end (their own
status write is an event while they hold the key). One message built and pushed there costs no
producer, no client and no round trip, and leaves nothing to record as being published.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from typing import Any

from celery import Celery
from celery.utils import uuid

from rollout_workers.celeryapp.transport import KEY_HEADER
from rollout_workers.keys import ObjectKey

#: LPUSHes per pipeline (kombu flushes the batch each time it holds this many).
BATCH = 1000

#: Options `send_task` takes out of the task's execution options and passes to
#: `create_task_message` itself (it does so with `expires` too, which no sync task sets).
_POPPED = ("time_limit", "soft_time_limit", "ignore_result")


class SyncSender:
    """Sends one `<name>` message per key to `queue`, the key as its argument and header."""

    def __init__(self, app: Celery, *, name: str, queue: str) -> None:
        self._app = app
        self._name = name
        self._queue = queue

    def __call__(self, keys: Sequence[ObjectKey]) -> None:
        if not keys:
            return
        with self._app.producer_or_acquire() as producer, producer.batch(max_size=BATCH):
            self._publish(producer, keys)

    def capture(self, key: ObjectKey) -> tuple[str, str]:
        """The entry `__call__` would push for `key` and the list it would push it on, made by
        the same path but not pushed (transport.Channel's capture)."""
        with self._app.producer_or_acquire() as producer:
            channel = producer.channel
            captured: list[tuple[str, str]] = []
            channel.rollouts_capture = captured
            try:
                self._publish(producer, [key])
            finally:
                channel.rollouts_capture = None
        ((list_key, message),) = captured
        return list_key, message

    def lineage(self) -> tuple[str | None, str | None]:
        """(root_id, parent_id) of a message sent now: the task running in this thread's."""
        parent = self._app.current_worker_task
        if not parent:
            return None, None
        return parent.request.root_id or parent.request.id, parent.request.id

    def _publish(self, producer: Any, keys: Sequence[ObjectKey]) -> None:
        app, amqp = self._app, self._app.amqp
        options = self._options()
        queue = options["queue"]
        limits = {name: options.pop(name, None) for name in _POPPED}
        root_id, parent_id = self.lineage()
        producer.maybe_declare(queue)
        for key in keys:
            task_id = uuid()
            message = amqp.create_task_message(
                task_id,
                self._name,
                args=(key,),
                kwargs={},
                reply_to=app.thread_oid,
                create_sent_event=app.conf.task_send_sent_event,
                root_id=root_id,
                parent_id=parent_id,
                # What Celery's saferepr gives for a tuple of one short string.
                argsrepr=repr((key,)),
                kwargsrepr="{}",
                **limits,
                **options,
            )
            amqp.send_task_message(
                producer, self._name, message, declare=[], headers={KEY_HEADER: key}, **options
            )

    def _options(self) -> dict[str, Any]:
        """What `send_task` derives for this task and queue: the task's own execution options
        and the route (the queue entity, its exchange and routing key)."""
        app = self._app
        # The registry itself, as send_task reads it: `app.tasks` would finalize the app.
        task = app._tasks.get(self._name)
        options: dict[str, Any] = {}
        if task is not None:
            options = {k: v for k, v in task._get_exec_options().items() if v is not None}
        options["queue"] = self._queue
        routed: dict[str, Any] = app.amqp.router.route(options, self._name, None, None, task)
        return routed


class Envelopes:
    """The broker entry SyncSender would push for a key, made without kombu, for a script to
    push itself (the workqueue's `done`: a dirty key queued again and its message in one step).

    The entry of one placeholder key is captured once from the real publish path
    (`SyncSender.capture`); each key's entry is that one with the key, a fresh task id and
    delivery tag, and this moment's root and parent task put in: what changes from one message
    to the next (tests/integration/test_sender.py compares them with `SyncSender`'s).
    """

    _PLACEHOLDER = ObjectKey("rollout-workers/envelope")

    def __init__(self, sender: SyncSender) -> None:
        self._sender = sender
        self._lock = threading.Lock()
        self._template: tuple[str, dict[str, Any], list[Any]] | None = None

    def _load(self) -> tuple[str, dict[str, Any], list[Any]]:
        with self._lock:
            if self._template is None:
                list_key, raw = self._sender.capture(self._PLACEHOLDER)
                entry = json.loads(raw)
                body = json.loads(base64.b64decode(entry["body"]))
                self._template = (list_key, entry, body)
            return self._template

    @property
    def list_key(self) -> str:
        return self._load()[0]

    def __call__(self, key: ObjectKey) -> str:
        _, entry, (_, kwargs, embed) = self._load()
        task_id = uuid()
        root_id, parent_id = self._sender.lineage()
        headers = {
            **entry["headers"],
            "id": task_id,
            "root_id": root_id or task_id,
            "parent_id": parent_id,
            "argsrepr": repr((key,)),
            KEY_HEADER: key,
        }
        properties = {**entry["properties"], "correlation_id": task_id, "delivery_tag": uuid()}
        body = json.dumps([[key], kwargs, embed]).encode()
        return json.dumps(
            {
                **entry,
                "body": base64.b64encode(body).decode(),
                "headers": headers,
                "properties": properties,
            }
        )

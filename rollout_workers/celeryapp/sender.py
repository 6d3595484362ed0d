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
import os
import re
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
    (`SyncSender.capture`) and turned into a template whose slots are what changes from one
    message to the next: the key, a fresh task id and delivery tag, and this moment's root and
    parent task. A message is the template's text with the slots filled in, which costs a few
    string joins where encoding the entry again cost two JSON encodings of its dozens of
    fields (tests/integration/test_sender.py compares the result with `SyncSender`'s).
    """

    _PLACEHOLDER = ObjectKey("rollout-workers/envelope")

    def __init__(self, sender: SyncSender, *, lineage: bool = True) -> None:
        """`lineage`: the process runs tasks (a worker), whose messages name the task running
        as their parent; elsewhere (the watcher) there is none to look up."""
        self._sender, self._lineage = sender, lineage
        self._lock = threading.Lock()
        self._template: tuple[str, _Template, _Template] | None = None

    def _load(self) -> tuple[str, _Template, _Template]:
        with self._lock:
            if self._template is None:
                list_key, raw = self._sender.capture(self._PLACEHOLDER)
                entry = json.loads(raw)
                _, kwargs, embed = json.loads(base64.b64decode(entry["body"]))
                headers = {
                    **entry["headers"],
                    "id": _slot("ID"),
                    "root_id": _slot("ROOT"),
                    "parent_id": _slot("PARENT"),
                    "argsrepr": _slot("ARGSREPR"),
                    KEY_HEADER: _slot("KEY"),
                }
                properties = {
                    **entry["properties"],
                    "correlation_id": _slot("ID"),
                    "delivery_tag": _slot("TAG"),
                }
                message = {**entry, "body": _slot("BODY"), "headers": headers}
                message["properties"] = properties
                body = [[_slot("KEY")], kwargs, embed]
                self._template = (
                    list_key,
                    _Template(json.dumps(message)),
                    _Template(json.dumps(body)),
                )
            return self._template

    @property
    def list_key(self) -> str:
        return self._load()[0]

    def __call__(self, key: ObjectKey) -> str:
        _, message, body = self._load()
        task_id = _uuid4()
        root_id, parent_id = self._sender.lineage() if self._lineage else (None, None)
        quoted = _quote(key)
        text = body.fill({"KEY": quoted})
        return message.fill(
            {
                "ID": f'"{task_id}"',
                "ROOT": _quote(root_id or task_id),
                "PARENT": "null" if parent_id is None else _quote(parent_id),
                "ARGSREPR": _quote(repr((key,))),
                "KEY": quoted,
                "TAG": f'"{_uuid4()}"',
                "BODY": f'"{base64.b64encode(text.encode()).decode()}"',
            }
        )


#: Characters a JSON string must escape, or that repr() may have escaped already.
_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')


def _quote(text: str) -> str:
    """`text` as a JSON string: as it is between quotes when nothing in it needs escaping (a
    key, an id, the repr of a key), else json.dumps'."""
    return json.dumps(text) if _UNSAFE.search(text) else f'"{text}"'


def _uuid4() -> str:
    """A random (version 4) UUID as text, as `celery.utils.uuid` gives, for a fraction of its
    cost (two a message)."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _slot(name: str) -> str:
    return f"@@{name}@@"


class _Template:
    """JSON text with slots: each `"@@NAME@@"` string is replaced by a JSON value."""

    _SLOT = re.compile(r'"@@([A-Z]+)@@"')

    def __init__(self, text: str) -> None:
        parts = self._SLOT.split(text)
        self._literals, self._names = parts[0::2], parts[1::2]

    def fill(self, values: dict[str, str]) -> str:
        out = [self._literals[0]]
        for name, literal in zip(self._names, self._literals[1:], strict=True):
            out += (values[name], literal)
        return "".join(out)

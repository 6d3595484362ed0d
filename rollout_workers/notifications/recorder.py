"""Recording an event: the core/v1 Event, then the notifications it triggers.

Argo Rollouts' ``EventRecorderAdapter`` (utils/record/record.go) does both for every event its
controllers record, rollouts, analysis runs and experiments alike: the Event first, then
``sendNotifications``. Here the second is queuing a job in the outbox (outbox.py), so a
reconcile never waits on a notification service.

The Event goes to an event sink (kube/eventsink.py): in a worker, the process' background
sink, which writes it after the reconcile, through client-go's EventCorrelator, and may drop it
(queue full, spam); without one, it is written at once through the reconcile's writer. Either
way it never fails the reconcile (events are informational). The notifications hook on the
event as recorded, before any of that filtering, synchronously: a notification job that cannot
be queued because Redis failed raises, the reconcile fails and is retried, and records the
event again, with the same job key.
"""

from __future__ import annotations

import datetime as dt
import logging

import redis

from rollout_workers.kube import resources as r
from rollout_workers.kube.events import event_body
from rollout_workers.kube.eventsink import EventSink, WriterSink
from rollout_workers.kube.writer import Writer
from rollout_workers.notifications.outbox import Outbox
from rollout_workers.objects import Obj
from rollout_workers.timefmt import format_time

log = logging.getLogger(__name__)


class EventRecorder:
    """Records events about objects of one type (its ``apiVersion``/``kind`` are added to the
    objects read from the cache, which carry neither)."""

    def __init__(
        self,
        writer: Writer,
        resource: r.Resource,
        *,
        outbox: Outbox | None = None,
        sink: EventSink | None = None,
    ) -> None:
        """`sink`: where Events go (the process' background sink); None writes each one at
        once through `writer`."""
        self.writer, self.outbox = writer, outbox
        self.sink = sink if sink is not None else WriterSink(writer)
        self._type = {"apiVersion": resource.api_version, "kind": resource.kind}

    def record(
        self,
        obj: Obj,
        *,
        reason: str,
        message: str,
        warning: bool,
        now: dt.datetime,
        notify: bool = True,
    ) -> None:
        """The Event, then its notifications (unless `notify` is False: they were queued
        ahead, see `notify`)."""
        full = {**obj, **self._type}
        body = event_body(
            full, reason=reason, message=message, warning=warning, now=format_time(now)
        )
        self.sink.emit(body)  # never raises
        if notify:
            self.notify(obj, reason=reason, message=message, warning=warning)

    def notify(self, obj: Obj, *, reason: str, message: str, warning: bool) -> None:
        """Queue the notifications of an event alone. A reconcile calls this before a write
        whose retry could not tell the event is due (the write that sets a rollout's revision:
        once it lands, nothing records the event again), so a kill -9 between the write and
        the event loses no notification; the job key makes the retried call a no-op."""
        if self.outbox is None:
            return
        try:
            self.outbox.event(
                {**obj, **self._type}, reason=reason, message=message, warning=warning
            )
        except redis.RedisError:
            raise
        except Exception:  # a bad config or object: logged, never a failed reconcile
            log.exception("notifications of event %s could not be queued", reason)

"""The broker transport: kombu's Redis transport, hardened against malformed messages.

Stock kombu decodes each popped message without handling errors, so one entry on a queue list
that is not a kombu envelope (a stray LPUSH, a truncated write, another tool's data) raises out
of the worker's event loop and Celery stops with "Unrecoverable error". Here such an entry is
logged with a prefix of its bytes and dropped; the worker keeps serving. Dropping loses nothing
of ours: a message only wakes a key, and the workqueue resends for keys left queued.
"""

from __future__ import annotations

import logging
from queue import Empty
from typing import Any

from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)

#: Errors that mean "this entry is not a message", as opposed to connection failures.
MALFORMED = (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError)


def _check_envelope(payload: Any) -> None:
    if not isinstance(payload, dict):
        raise TypeError(f"message is a {type(payload).__name__}, not an object")
    properties = payload.get("properties")
    if not isinstance(properties, dict) or "delivery_tag" not in properties:
        raise KeyError("message has no properties.delivery_tag")
    if "body" not in payload:
        raise KeyError("message has no body")


class Channel(kombu_redis.Channel):
    def _brpop_read(self, **options: Any) -> bool:
        try:
            result: bool = super()._brpop_read(**options)  # type: ignore[no-untyped-call]
            return result
        except MALFORMED as err:
            log.error("dropped a malformed message from the broker: %s", err)
            return True

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        try:
            return super()._get(queue)  # type: ignore[no-untyped-call]
        except MALFORMED as err:
            log.error("dropped a malformed message from queue %s: %s", queue, err)
            raise Empty() from err


class Transport(kombu_redis.Transport):
    Channel = Channel

    def _deliver(self, message: Any, queue: str) -> Any:
        # Valid JSON that is not an envelope would fail deep in the consumer; refuse it here.
        _check_envelope(message)
        return super()._deliver(message, queue)  # type: ignore[no-untyped-call]

"""The broker transport: kombu's Redis transport, hardened against malformed messages.

Stock kombu decodes each popped message without handling errors, so one entry on a queue list
that is not a kombu envelope (a stray LPUSH, a truncated write, another tool's data) raises out
of the worker's event loop and Celery stops with "Unrecoverable error". Here such an entry is
logged with a prefix of its bytes and dropped; the worker keeps serving. Dropping loses nothing
of ours: a message only wakes a key, and the workqueue resends for keys left queued.

On a worker host it also records, as it takes a message off the broker (reserves or prefetches
it), which host has that key's message in hand: `HSET <prefix>:wq:<kind>:held key host`, in
the pipeline kombu already sends to record the message as unacked, so it costs no round trip.
If the host dies before a process claims the key, the workqueue's tick sends the key again as
soon as the host's heartbeat lapses, instead of the message's visibility timeout or the
workqueue's `stale_after` later.

Two economies: kombu builds a `redis.Redis` client for every publish, ack and unacked record;
here a channel keeps one per connection pool. And a channel can capture what it would push
instead of pushing it, which is how `sender.Envelopes` learns the exact broker entry of a sync
message once, to build the next ones without kombu.

Under Redis Sentinel the broker uses `SentinelTransport`: the same hardening over kombu's
SentinelChannel, whose connection pool asks the Sentinels for the master on every connection.
Celery is given one `sentinel://` URL and the Sentinels' addresses as the `rollouts_sentinels`
transport option, never kombu's `;`-separated list: kombu takes a list for failover alternates,
and on switching to one it loads the transport the URL's scheme names (stock kombu's), which
would drop the hardening the first time a connection attempt failed during a failover.
"""

from __future__ import annotations

import logging
from queue import Empty
from time import time
from typing import Any

import redis
from kombu.transport import redis as kombu_redis
from kombu.utils.json import dumps
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

log = logging.getLogger(__name__)

#: The message header that carries a sync message's key (set by the sender).
KEY_HEADER = "rollouts_key"
#: Transport options set on a worker host only: its id, and for each sync task's name the
#: workqueue hash that records who holds its messages.
HOST_OPTION = "rollouts_host"
HELD_OPTION = "rollouts_held"
#: Transport option of the Sentinel transport: the Sentinels' addresses, [[host, port], ...].
SENTINELS_OPTION = "rollouts_sentinels"


def worker_host(app: Any) -> str | None:
    """The id of the worker host this process belongs to (its main process and prefork
    children); None in other processes (watcher, beat, CLI)."""
    options = app.conf.broker_transport_options or {}
    host = options.get(HOST_OPTION)
    return str(host) if host else None


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


class QoS(kombu_redis.QoS):
    def append(self, message: Any, delivery_tag: Any) -> None:
        # kombu's append (redis-py >= 3), plus the workqueue's record of who holds the message.
        delivery = message.delivery_info
        exchange, routing_key = delivery["exchange"], delivery["routing_key"]
        record = self.channel.held_record(message)
        with self.pipe_or_acquire() as pipe:
            pipe.zadd(self.unacked_index_key, {delivery_tag: time()})
            pipe.hset(self.unacked_key, delivery_tag, dumps([message._raw, exchange, routing_key]))  # type: ignore[no-untyped-call]
            if record is not None:
                pipe.hset(*record)
            pipe.execute()
            super(kombu_redis.QoS, self).append(message, delivery_tag)  # type: ignore[no-untyped-call]


class Channel(kombu_redis.Channel):
    QoS = QoS
    from_transport_options = (  # type: ignore[assignment]
        *kombu_redis.Channel.from_transport_options,
        HOST_OPTION,
        HELD_OPTION,
    )
    rollouts_host: str | None = None
    rollouts_held: dict[str, str] | None = None
    #: While a list: what would be pushed, as (list, serialized message), instead of pushing.
    rollouts_capture: list[tuple[str, str]] | None = None
    _rollouts_client: redis.Redis | None = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        # kombu builds a redis.Redis, with its few hundred response callbacks, for every
        # publish, ack and unacked record. One client over the channel's pool serves them all
        # (redis-py clients are thread-safe); a new pool (after a connection error) gets a new
        # one.
        if asynchronous:
            return super()._create_client(asynchronous=True)  # type: ignore[no-untyped-call]
        client = self._rollouts_client
        if client is None or client.connection_pool is not self.pool:
            client = super()._create_client(asynchronous=False)  # type: ignore[no-untyped-call]
            self._rollouts_client = client
        return client

    def _put(self, queue: Any, message: Any, **kwargs: Any) -> None:
        if self.rollouts_capture is None:
            super()._put(queue, message, **kwargs)  # type: ignore[no-untyped-call]
            return
        priority = self._get_message_priority(message, reverse=False)  # type: ignore[no-untyped-call]
        self.rollouts_capture.append((self._q_for_pri(queue, priority), dumps(message)))  # type: ignore[no-untyped-call]

    def held_record(self, message: Any) -> tuple[str, str, str] | None:
        """(hash, key, host) to record that this host reserved a sync message, else None."""
        if not self.rollouts_host or not self.rollouts_held:
            return None
        try:
            headers = message.headers or {}
            held, key = self.rollouts_held.get(str(headers.get("task"))), headers.get(KEY_HEADER)
        except MALFORMED:
            return None
        if held is None or not isinstance(key, str):
            return None
        return held, key, self.rollouts_host

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


class SentinelChannel(Channel, kombu_redis.SentinelChannel):
    """Channel's hardening over kombu's SentinelChannel (the MRO puts ours first)."""

    from_transport_options = (  # type: ignore[assignment]
        *kombu_redis.SentinelChannel.from_transport_options,
        HOST_OPTION,
        HELD_OPTION,
        SENTINELS_OPTION,
    )
    rollouts_sentinels: list[list[Any]] | None = None

    def _sentinel_managed_pool(self, asynchronous: bool = False) -> Any:
        # kombu's, with the Sentinels from our option rather than from the URL alternates
        # (see the module docstring), and no retries of a dead Sentinel: the next is asked.
        if not self.rollouts_sentinels:
            return super()._sentinel_managed_pool(asynchronous)  # type: ignore[no-untyped-call]
        params = dict(self._connparams(asynchronous))  # type: ignore[no-untyped-call]
        params.pop("host", None)
        params.pop("port", None)
        sentinel_kwargs = {**(getattr(self, "sentinel_kwargs", None) or {})}
        sentinel_kwargs.setdefault("retry", Retry(NoBackoff(), 0))
        manager = Sentinel(  # type: ignore[no-untyped-call]
            [(str(host), int(port)) for host, port in self.rollouts_sentinels],
            min_other_sentinels=getattr(self, "min_other_sentinels", 0),
            sentinel_kwargs=sentinel_kwargs,
            **params,
        )
        # Kept so that kombu's _disconnect_pools closes the Sentinel connections too.
        if asynchronous:
            self._async_sentinel_manager = manager
        else:
            self._sentinel_manager = manager
        master_name = getattr(self, "master_name", None)
        if master_name is None:
            raise ValueError("'master_name' transport option must be specified.")
        login = {k: params[k] for k in ("username", "password") if k in params}
        master = manager.master_for(master_name, redis.Redis, **login)  # type: ignore[no-untyped-call]
        return master.connection_pool


class SentinelTransport(Transport, kombu_redis.SentinelTransport):
    """The Sentinel transport: sentinel:// URLs, the hardened SentinelChannel."""

    Channel = SentinelChannel
    default_port = kombu_redis.SentinelTransport.default_port

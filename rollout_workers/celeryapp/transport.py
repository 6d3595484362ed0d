"""The broker transport: kombu's Redis transport, hardened against malformed messages.

Stock kombu decodes each popped message without handling errors, so one entry on a queue list
that is not a kombu envelope (a stray LPUSH, a truncated write, another tool's data) raises out
of the worker's event loop and Celery stops with "Unrecoverable error". Here such an entry is
logged with a prefix of its bytes and dropped; the worker keeps serving. Dropping loses nothing
of ours: a message only wakes a key, and the workqueue resends for keys left queued.

On a worker host it also records, as it takes a sync message off the broker (reserves or
prefetches it), which host has that key's message in hand: `HSET <prefix>:wq:<kind>:held key
host`. If the host dies before a process claims the key, the workqueue's tick sends the key
again as soon as the host's heartbeat lapses, instead of the message's visibility timeout or
the workqueue's `stale_after` later. That record is why a sync message needs none of kombu's
unacked bookkeeping (`QoS`).

While messages keep coming, a worker host takes the next one and records that it holds it in
one step: instead of kombu's BRPOP and then the HSET, a script pops the first message waiting
(the lists in BRPOP's order) and, for a sync message, writes the record with it. That saves
the consumer one round trip per message and leaves no moment at which the host has a message
that no record names. Once a pop finds nothing it goes back to a blocking BRPOP, and the HSET
after it, until the next message arrives.

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

import functools
import hashlib
import logging
from queue import Empty
from time import monotonic
from typing import Any

import redis
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import dumps, loads
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel

from rollout_workers import redisclient

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


#: The most messages a worker host takes from one queue in a row while its others wait (each
#: turn given costs an empty RPOP of every idle queue ahead of the busy one).
STREAK = 32

#: KEYS: the queue lists in the order BRPOP takes them, then the held hashes; ARGV: how many
#: lists, this host, then the sync task name of each held hash. Pops the first message waiting
#: and, when it is an envelope (as Transport._deliver checks) of a sync task whose key header is
#: a string (as Channel.held_record reads it), records in that task's hash that this host
#: holds the key. Returns {list, message, 1 if recorded else 0}, or false when all are empty.
_POP_HELD = f"""
local n, host = tonumber(ARGV[1]), ARGV[2]
for i = 1, n do
  local item = redis.call('RPOP', KEYS[i])
  if item then
    local recorded = 0
    local ok, m = pcall(cjson.decode, item)
    if ok and type(m) == 'table' and type(m.properties) == 'table'
        and m.properties.delivery_tag ~= nil and m.body ~= nil
        and type(m.headers) == 'table' and type(m.headers['{KEY_HEADER}']) == 'string' then
      for j = n + 1, #KEYS do
        if ARGV[j - n + 2] == m.headers.task then
          redis.call('HSET', KEYS[j], m.headers['{KEY_HEADER}'], host)
          recorded = 1
          break
        end
      end
    end
    return {{KEYS[i], item, recorded}}
  end
end
return false
"""


@functools.cache
def _sha(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()


class QoS(kombu_redis.QoS):
    """kombu's ack emulation, except for the sync messages a worker host reserves.

    kombu keeps every reserved message in an `unacked` hash and index (a MULTI/EXEC as it
    takes the message, another as it acks it), to put it back on the list after the
    visibility timeout if the consumer dies. A sync message is acked as its task starts
    (acks_late is off), and what brings back a dead host's reserved keys is the workqueue's
    record of who holds them (tick.lua, at the host's lapse, long before the timeout). So for a
    sync message this host records only that it holds it (one HSET), and its ack costs no
    command at all. At shutdown or on a reject with requeue, such a message is put back from
    memory, as kombu would put it back from the hash.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        #: Delivery tags of the messages kept out of the unacked hash.
        self._held: set[Any] = set()

    def append(self, message: Any, delivery_tag: Any) -> None:
        record = self.channel.held_record(message)
        if record is None:
            super().append(message, delivery_tag)  # type: ignore[no-untyped-call]
            return
        if not self.channel.rollouts_recorded:  # else the pop that took it wrote the record
            with self.channel.conn_or_acquire() as client:
                redisclient.direct(client).call("HSET", *record)
        self._held.add(delivery_tag)
        virtual.QoS.append(self, message, delivery_tag)  # type: ignore[no-untyped-call]

    def ack(self, delivery_tag: Any) -> None:
        if delivery_tag in self._held:
            self._held.discard(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)  # type: ignore[no-untyped-call]
            return
        super().ack(delivery_tag)  # type: ignore[no-untyped-call]

    def reject(self, delivery_tag: Any, requeue: bool = False) -> None:
        if delivery_tag in self._held:
            if requeue:
                self._put_back(delivery_tag, leftmost=True)
            self._held.discard(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)  # type: ignore[no-untyped-call]
            return
        super().reject(delivery_tag, requeue=requeue)  # type: ignore[no-untyped-call]

    def restore_by_tag(self, tag: Any, client: Any = None, leftmost: bool = False) -> None:
        if tag in self._held:
            self._put_back(tag, leftmost=leftmost, client=client)
            self._held.discard(tag)
            return
        super().restore_by_tag(tag, client=client, leftmost=leftmost)  # type: ignore[no-untyped-call]

    def _put_back(self, tag: Any, *, leftmost: bool, client: Any = None) -> None:
        message = self._delivered.get(tag)
        if message is None:
            return
        delivery = message.delivery_info
        with self.channel.conn_or_acquire(client) as conn:
            pipe = conn.pipeline()
            self.channel._do_restore_message(
                message._raw, delivery["exchange"], delivery["routing_key"], pipe, leftmost
            )
            pipe.execute()


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
    #: True while the message being delivered was recorded as held by the pop that took it.
    rollouts_recorded = False
    _rollouts_client: redis.Redis | None = None
    #: The last read delivered a message: the next one pops without blocking (_POP_HELD).
    _rollouts_eager = False
    #: The command in flight is _POP_HELD's, not BRPOP.
    _rollouts_popping = False
    #: _POP_HELD was sent whole on this channel since Redis last answered NOSCRIPT: by its sha.
    _rollouts_loaded = False
    #: The queue the last pops delivered from, and how many in a row (see _take_turn).
    _rollouts_streak: tuple[str, int] = ("", 0)

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

    def _brpop_start(self, timeout: Any = None) -> None:
        self._rollouts_popping = False
        # A host's pops only, and not under a global key prefix, which kombu adds to BRPOP.
        if not (self._rollouts_eager and self.rollouts_host and self.rollouts_held) or (
            self.global_keyprefix
        ):
            super()._brpop_start(timeout)  # type: ignore[no-untyped-call]
            return
        queues = self._queue_cycle.consume(len(self.active_queues))
        if not queues:
            return
        lists = [self._q_for_pri(q, pri) for pri in self.priority_steps for q in queues]  # type: ignore[no-untyped-call]
        held = list(self.rollouts_held.items())
        # What kombu's _brpop_start records, for its health check and _in_poll bookkeeping.
        self._in_poll = self.client.connection
        self._brpop_sent_at = monotonic()  # type: ignore[assignment]
        self._rollouts_popping = True
        script = ("EVALSHA", _sha(_POP_HELD)) if self._rollouts_loaded else ("EVAL", _POP_HELD)
        self._rollouts_loaded = True
        self.client.connection.send_command(
            *script, len(lists) + len(held), *lists, *(h for _, h in held),
            len(lists), self.rollouts_host, *(task for task, _ in held),
        )  # fmt: skip

    def _brpop_read(self, **options: Any) -> bool:
        """Deliver the message read (or drop it, malformed); Empty when none came."""
        try:
            if self._rollouts_popping:
                self._pop_read(**options)
            else:
                super()._brpop_read(**options)  # type: ignore[no-untyped-call]
        except MALFORMED as err:
            log.error("dropped a malformed message from the broker: %s", err)
        except Empty:
            self._rollouts_eager = False
            raise
        self._rollouts_eager = True
        return True

    def _pop_read(self, **options: Any) -> None:
        """kombu's _brpop_read for the reply of _POP_HELD."""
        self._rollouts_popping = False
        try:
            try:
                reply = self.client.parse_response(self.client.connection, "EVAL", **options)
            except self.connection_errors:
                self.client.connection.disconnect()
                raise
            except redis.exceptions.NoScriptError as err:  # Redis restarted or was flushed
                self._rollouts_loaded = False
                raise Empty() from err
            except redis.ResponseError as err:  # the script refused (e.g. OOM): BRPOP again
                log.warning("cannot pop the next message in one step: %s", err)
                raise Empty() from err
            if not reply:
                raise Empty()
            dest, item, recorded = reply
            queue = bytes_to_str(dest).rsplit(self.sep, 1)[0]  # type: ignore[no-untyped-call]
            self._take_turn(queue)
            self.rollouts_recorded = bool(int(recorded))
            try:
                self.connection._deliver(loads(item), queue)  # type: ignore[no-untyped-call]
            finally:
                self.rollouts_recorded = False
        finally:
            self._in_poll = None  # type: ignore[assignment]
            self._flush_brpop_reauth()  # type: ignore[no-untyped-call]

    def _take_turn(self, queue: str) -> None:
        """The order the next pop tries the queues in, after one delivered from `queue`.

        kombu moves the queue that delivered to the back, so with one queue busy every pop
        tries each idle one first (an empty RPOP each). Here it goes to the front instead, for
        up to STREAK deliveries in a row, and then to the back: the others still get their
        turn after at most STREAK messages of a busy one, and a busy queue costs about one
        RPOP a message."""
        last, count = self._rollouts_streak
        count = count + 1 if queue == last else 1
        items = self._queue_cycle.items
        if count >= STREAK or queue not in items:
            self._queue_cycle.rotate(queue)
            count = 0
        else:
            items.insert(0, items.pop(items.index(queue)))
        self._rollouts_streak = (queue, count)

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

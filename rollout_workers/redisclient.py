"""Connecting to Redis: one server by its URL, or the master that a set of Sentinels names.

`ROLLOUTS_REDIS_URL` is either a plain `redis://` (or `rediss://`, `unix://`) URL, or kombu's
spelling of Sentinels: `sentinel://[:password@]host:26379;sentinel://host2:26379/0`, one URL per
Sentinel separated by `;`, the database and the master's password taken from whichever URL
gives them. The master's name (`redis.sentinel_master`) and the Sentinels' own password
(`redis.sentinel_password`) are settings; `redis.password` overrides the URL's password.

Every client made here is Sentinel-aware when the URL is: `Sentinel(...).master_for(name)`,
whose connection pool asks the Sentinels for the master's address on every new connection and
drops its idle connections when that address changes, and whose connections turn a READONLY
reply (a demoted master) into a connection error. A command after a failover therefore reaches
the new master after at most one failed round trip; nothing here holds a connection to an
address. The Sentinels are asked with no retry of their own (a dead Sentinel is skipped at
once, the next one is asked); the master's connections keep redis-py's retries, which ride out
most of a failover.

The Celery broker (celeryapp/app.py, celeryapp/transport.py) and redbeat (its
`redis-sentinel://` mode) build their own clients from the same `SentinelTarget`.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from hashlib import sha1
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script as RedisScript
from redis.exceptions import NoScriptError
from redis.retry import Retry
from redis.sentinel import Sentinel

from rollout_workers.settings import RedisSettings, Settings

SENTINEL_SCHEME = "sentinel"
SENTINEL_PORT = 26379


def is_sentinel(url: str) -> bool:
    """True for kombu's Sentinel URLs (`sentinel://host:port;sentinel://...`)."""
    return url.split("://", 1)[0].strip().lower() == SENTINEL_SCHEME


@dataclass(frozen=True)
class SentinelTarget:
    """The Sentinels to ask, the master's name, and how to log in to each."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None

    def sentinel_kwargs(self, timeout: float) -> dict[str, Any]:
        """Connection options of the Sentinels (not of the master)."""
        kwargs: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        if self.sentinel_password:
            kwargs["password"] = self.sentinel_password
        return kwargs

    def master_kwargs(self) -> dict[str, Any]:
        """Login and database of the master (and of the replicas it may be replaced by)."""
        kwargs: dict[str, Any] = {"db": self.db}
        if self.username:
            kwargs["username"] = self.username
        if self.password:
            kwargs["password"] = self.password
        return kwargs

    def kombu_url(self) -> str:
        """One `sentinel://` URL with the master's login and the database: the broker URL.

        Only one: kombu treats `;`-separated URLs as failover alternates and, on switching to
        one, replaces the configured transport class with the one its scheme names (losing
        celeryapp/transport.py's hardening). The Sentinels reach the transport as an option."""
        host, port = self.sentinels[0]
        login = ""
        if self.password:
            login = f"{quote(self.username or '', safe='')}:{quote(self.password, safe='')}@"
        return f"{SENTINEL_SCHEME}://{login}{_host(host)}:{port}/{self.db}"


def sentinel_target(url: str, settings: RedisSettings) -> SentinelTarget:
    """Parse a `sentinel://...;sentinel://...` URL; ValueError when it is not one."""
    sentinels: list[tuple[str, int]] = []
    dbs: set[int] = set()
    usernames: set[str] = set()
    passwords: set[str] = set()
    for part in (p.strip() for p in url.split(";")):
        if not part:
            continue
        parts = urlsplit(part)
        if parts.scheme.lower() != SENTINEL_SCHEME:
            raise ValueError(f"not a sentinel:// URL: {parts.scheme}://...")
        if not parts.hostname:
            raise ValueError("a sentinel:// URL names no host")
        try:
            port = parts.port or SENTINEL_PORT
        except ValueError as err:
            raise ValueError(f"bad Sentinel port: {err}") from None
        sentinels.append((parts.hostname, port))
        path = parts.path.strip("/")
        if path:
            if not path.isdigit():
                raise ValueError(f"the database of a sentinel:// URL is a number, not {path!r}")
            dbs.add(int(path))
        if parts.username:
            usernames.add(unquote(parts.username))
        if parts.password is not None:
            passwords.add(unquote(parts.password))
    if not sentinels:
        raise ValueError("no Sentinel in the URL")
    for what, values in (("databases", dbs), ("usernames", usernames), ("passwords", passwords)):
        if len(values) > 1:
            raise ValueError(f"the Sentinel URLs give different {what}")
    password = settings.password.get_secret_value() if settings.password else None
    sentinel_password = (
        settings.sentinel_password.get_secret_value() if settings.sentinel_password else None
    )
    return SentinelTarget(
        sentinels=tuple(sentinels),
        master=settings.sentinel_master,
        db=next(iter(dbs), 0),
        username=next(iter(usernames), None),
        password=password or next(iter(passwords), None),
        sentinel_password=sentinel_password,
    )


def with_password(url: str, settings: RedisSettings) -> str:
    """A plain Redis URL with `redis.password` in it, when that is set (for the clients that
    take only a URL: kombu's, redbeat's)."""
    if settings.password is None or is_sentinel(url):
        return url
    parts = urlsplit(url)
    if not parts.hostname:
        return url  # unix:// keeps its password in the query
    user = quote(unquote(parts.username), safe="") if parts.username else ""
    host = _host(parts.hostname) + (f":{parts.port}" if parts.port is not None else "")
    secret = quote(settings.password.get_secret_value(), safe="")
    return urlunsplit(parts._replace(netloc=f"{user}:{secret}@{host}"))


def no_retry() -> Retry:
    """For Sentinel connections: a dead Sentinel is skipped at once, not retried."""
    return Retry(NoBackoff(), 0)


def connect(
    url: str,
    settings: RedisSettings,
    *,
    timeout: float | None = None,
    health_check_interval: int = 0,
) -> redis.Redis:
    """A client of the Redis `url` names: the server itself, or the Sentinels' master.

    `timeout` bounds connecting and each command (default `redis.socket_timeout`)."""
    seconds = settings.socket_timeout if timeout is None else timeout
    options: dict[str, Any] = {
        "socket_timeout": seconds,
        "socket_connect_timeout": seconds,
        "health_check_interval": health_check_interval,
    }
    if not is_sentinel(url):
        if settings.password is not None:
            options["password"] = settings.password.get_secret_value()
        return redis.Redis.from_url(url, **options)
    target = sentinel_target(url, settings)
    sentinel_kwargs = {**target.sentinel_kwargs(seconds), "retry": no_retry()}
    sentinel = Sentinel(list(target.sentinels), sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    client: redis.Redis = sentinel.master_for(target.master, **options, **target.master_kwargs())  # type: ignore[no-untyped-call]
    return client


def process_client(url: str, settings: Settings) -> redis.Redis:
    """The process's Redis client: Sentinel-aware when the URL names Sentinels."""
    return connect(url, settings.redis, health_check_interval=30)


# -- the lean path for hot commands -------------------------------------------------------------

#: Network failures: the connection is dropped and the command goes once more through the client.
_LOST = (redis.ConnectionError, redis.TimeoutError, OSError)


class Direct:
    """Commands sent on a connection of the calling thread's own, outside the client's pool.

    Through redis-py 8, each command checks a connection out of the pool and back (a lock,
    a poll() for stray data, observability hooks, a deprecation-warning wrapper) and runs
    inside a retry closure: about 50 us of CPU, as much again as the round trip itself. The
    paths that run per reconcile and per watch event send here instead: each thread keeps one
    connection made as the pool would make it (the same address, login and timeouts, a
    Sentinel's master included). A connection error or timeout drops that connection, and the
    command goes once more through the client itself, with its retries; which is what the
    client does on such a failure (a command sent before a timeout may have run: the same
    as with the client's own retries). Replies are raw: no response callbacks.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._local = threading.local()

    def _connection(self) -> Any:
        local = self._local
        conn = getattr(local, "conn", None)
        pid = os.getpid()  # a forked child (prefork) makes its own
        if conn is None or local.pid != pid:
            pool = self.client.connection_pool
            conn = pool.connection_class(**pool.connection_kwargs)
            local.conn, local.pid = conn, pid
        return conn

    def call(self, *args: Any) -> Any:
        conn = self._connection()
        try:
            conn.send_command(*args)
            return conn.read_response()
        except redis.ResponseError:
            raise  # the reply itself: the connection is in step
        except _LOST:
            self._drop(conn)
            return self.client.execute_command(*args)  # type: ignore[no-untyped-call]
        except BaseException:
            self._drop(conn)  # a reply may be left unread on it
            raise

    def _drop(self, conn: Any) -> None:
        conn.disconnect()
        self._local.conn = None


_direct: weakref.WeakKeyDictionary[redis.Redis, Direct] = weakref.WeakKeyDictionary()
_direct_lock = threading.Lock()


def direct(client: redis.Redis) -> Direct:
    """The client's `Direct` (one per client, shared by its scripts)."""
    with _direct_lock:
        found = _direct.get(client)
        if found is None:
            found = _direct[client] = Direct(client)
        return found


class Script:
    """A Lua script called by its SHA1 through `Direct`, loaded on NOSCRIPT; otherwise as
    redis-py's `register_script` (`client=` a pipeline, say, goes through that one)."""

    def __init__(self, client: redis.Redis, source: str) -> None:
        self.client, self.source = client, source
        self.sha = sha1(source.encode()).hexdigest()
        self._direct = direct(client)
        self._fallback = RedisScript(client, source)

    def __call__(
        self, keys: Sequence[Any] = (), args: Sequence[Any] = (), client: Any = None
    ) -> Any:
        if client is not None:
            return self._fallback(keys=keys, args=args, client=client)
        call = self._direct.call
        try:
            return call("EVALSHA", self.sha, len(keys), *keys, *args)
        except NoScriptError:
            self.client.script_load(self.source)
            return call("EVALSHA", self.sha, len(keys), *keys, *args)


def _host(hostname: str) -> str:
    return f"[{hostname}]" if ":" in hostname else hostname

"""Redis URLs and clients: plain URLs as before, Sentinel URLs (kombu's spelling) to a
Sentinel-aware client; and the broker's and redbeat's configuration for each."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from kombu import Connection
from redis.sentinel import SentinelConnectionPool, SentinelManagedConnection

from rollout_workers import redisclient
from rollout_workers.celeryapp import transport
from rollout_workers.celeryapp.app import celery_config, create_app
from rollout_workers.redisclient import SentinelTarget, sentinel_target
from rollout_workers.settings import RedisSettings, Settings

THREE = "sentinel://s1:26379;sentinel://s2:26380;sentinel://s3/2"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sentinel://s1:26379", True),
        ("SENTINEL://s1", True),
        (THREE, True),
        ("redis://h:6379/0", False),
        ("rediss://h/0", False),
        ("unix:///tmp/redis.sock", False),
    ],
)
def test_is_sentinel(url: str, expected: bool) -> None:
    assert redisclient.is_sentinel(url) is expected


@pytest.mark.parametrize(
    ("name", "url", "settings", "expected"),
    [
        ("three sentinels, the database on the last, the default port", THREE, {},
         SentinelTarget((("s1", 26379), ("s2", 26380), ("s3", 26379)), "mymaster", db=2)),
        ("the master's password in the URL", "sentinel://:m%40pw@s1:1;sentinel://s2:2", {},
         SentinelTarget((("s1", 1), ("s2", 2)), "mymaster", password="m@pw")),
        ("a username too", "sentinel://app:pw@s1:1/3", {},
         SentinelTarget((("s1", 1),), "mymaster", db=3, username="app", password="pw")),
        ("settings: the master name, both passwords (the setting wins over the URL)",
         "sentinel://:url-pw@s1:1", {"sentinel_master": "rollouts", "password": "set-pw",
                                     "sentinel_password": "s-pw"},
         SentinelTarget((("s1", 1),), "rollouts", password="set-pw", sentinel_password="s-pw")),
        ("spaces and an empty part are ignored", " sentinel://s1:1 ; ;sentinel://s2:2/0", {},
         SentinelTarget((("s1", 1), ("s2", 2)), "mymaster")),
    ],
)  # fmt: skip
def test_sentinel_target(
    name: str, url: str, settings: dict[str, Any], expected: SentinelTarget
) -> None:
    assert sentinel_target(url, RedisSettings(**settings)) == expected, name


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("sentinel://s1:1;redis://h:6379", "not a sentinel:// URL"),
        ("sentinel:///0", "names no host"),
        ("sentinel://s1:1/0;sentinel://s2:2/1", "different databases"),
        ("sentinel://:a@s1:1;sentinel://:b@s2:2", "different passwords"),
        ("sentinel://s1:1/x", "is a number"),
        ("sentinel://s1:port", "bad Sentinel port"),
    ],
)
def test_bad_sentinel_urls(url: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        sentinel_target(url, RedisSettings())


def test_a_sentinel_url_gives_a_sentinel_aware_client() -> None:
    settings = RedisSettings(
        url=THREE, sentinel_master="rollouts", password="m-pw", sentinel_password="s-pw"
    )
    client = redisclient.connect(THREE, settings, timeout=1.5)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "rollouts"
    assert pool.connection_class is SentinelManagedConnection
    kwargs = pool.connection_kwargs
    assert (kwargs["db"], kwargs["password"], kwargs["socket_timeout"]) == (2, "m-pw", 1.5)
    assert kwargs["socket_connect_timeout"] == 1.5
    sentinels = pool.sentinel_manager.sentinels
    addresses = [
        (s.connection_pool.connection_kwargs["host"], s.connection_pool.connection_kwargs["port"])
        for s in sentinels
    ]
    assert addresses == [("s1", 26379), ("s2", 26380), ("s3", 26379)]
    sentinel_kwargs = sentinels[0].connection_pool.connection_kwargs
    assert sentinel_kwargs["password"] == "s-pw"
    assert sentinel_kwargs["retry"].get_retries() == 0  # a dead Sentinel is skipped at once


def test_a_plain_url_gives_a_plain_client_with_the_password_setting() -> None:
    client = redisclient.connect(
        "redis://h:6379/1", RedisSettings(password="pw"), health_check_interval=30
    )
    pool = client.connection_pool
    assert type(pool) is redis.ConnectionPool
    kwargs = pool.connection_kwargs
    assert (kwargs["host"], kwargs["db"], kwargs["password"]) == ("h", 1, "pw")
    assert (kwargs["socket_timeout"], kwargs["health_check_interval"]) == (10.0, 30)
    plain = redisclient.connect("redis://:url-pw@h:6379/1", RedisSettings())
    assert plain.connection_pool.connection_kwargs["password"] == "url-pw"


@pytest.mark.parametrize(
    ("url", "password", "expected"),
    [
        ("redis://h:6379/0", None, "redis://h:6379/0"),
        ("redis://h:6379/0", "p@ss", "redis://:p%40ss@h:6379/0"),
        ("redis://user:old@h/0", "new", "redis://user:new@h/0"),
        (THREE, "x", THREE),
    ],
)
def test_with_password(url: str, password: str | None, expected: str) -> None:
    assert redisclient.with_password(url, RedisSettings(password=password)) == expected


def test_the_plain_path_keeps_its_broker_and_redbeat_config() -> None:
    conf = celery_config(Settings(), "redis://h:6379/0")
    assert conf["broker_url"] == conf["redbeat_redis_url"] == "redis://h:6379/0"
    assert conf["broker_transport"] == "rollout_workers.celeryapp.transport:Transport"
    assert conf["broker_transport_options"] == {"visibility_timeout": 3600, "priority_steps": [0]}
    assert "redbeat_redis_options" not in conf


def _sentinel_settings() -> Settings:
    return Settings(
        redis={
            "url": THREE,
            "sentinel_master": "rollouts",
            "password": "m pw",
            "sentinel_password": "s-pw",
        }
    )


def test_under_sentinel_the_broker_is_the_hardened_sentinel_transport() -> None:
    settings = _sentinel_settings()
    conf = celery_config(settings, THREE)
    # One URL only: a ';' list would make kombu switch to its stock transport on a failover.
    assert conf["broker_url"] == "sentinel://:m%20pw@s1:26379/2"
    assert conf["broker_transport"] == "rollout_workers.celeryapp.transport:SentinelTransport"
    options = conf["broker_transport_options"]
    assert options["master_name"] == "rollouts"
    assert options["rollouts_sentinels"] == [["s1", 26379], ["s2", 26380], ["s3", 26379]]
    assert options["sentinel_kwargs"]["password"] == "s-pw"
    assert options["visibility_timeout"] == 3600

    app = create_app(settings, THREE)
    with app.connection_for_write() as conn:
        assert isinstance(conn, Connection)
        assert type(conn.transport) is transport.SentinelTransport
        assert conn.alt == []  # nothing to fail over to: the Sentinels do that
        # The pool a channel connects through (built without connecting).
        channel: Any = transport.SentinelChannel.__new__(transport.SentinelChannel)
        channel.connection = conn.transport
        for name in channel.from_transport_options:
            if name in options:
                setattr(channel, name, options[name])
        pool = channel._sentinel_managed_pool()
        assert isinstance(pool, SentinelConnectionPool)
        assert pool.service_name == "rollouts"
        assert issubclass(pool.connection_class, SentinelManagedConnection)
        assert (pool.connection_kwargs["password"], pool.connection_kwargs["db"]) == ("m pw", 2)
        sentinels = pool.sentinel_manager.sentinels
        assert [s.connection_pool.connection_kwargs["host"] for s in sentinels] == [
            "s1",
            "s2",
            "s3",
        ]
        assert sentinels[0].connection_pool.connection_kwargs["password"] == "s-pw"
        assert sentinels[0].connection_pool.connection_kwargs["retry"].get_retries() == 0


def test_the_sentinel_channel_keeps_the_hardening() -> None:
    mro = transport.SentinelChannel.__mro__
    assert mro.index(transport.Channel) < mro.index(transport.kombu_redis.SentinelChannel)
    for option in (transport.HOST_OPTION, transport.HELD_OPTION, "master_name"):
        assert option in transport.SentinelChannel.from_transport_options
    assert issubclass(transport.SentinelTransport, transport.Transport)
    assert transport.SentinelTransport.default_port == 26379


def test_under_sentinel_redbeat_uses_its_sentinel_mode() -> None:
    conf = celery_config(_sentinel_settings(), THREE)
    assert conf["redbeat_redis_url"] == "redis-sentinel://"
    options = conf["redbeat_redis_options"]
    assert options["sentinels"] == [("s1", 26379), ("s2", 26380), ("s3", 26379)]
    assert options["service_name"] == "rollouts"
    assert (options["password"], options["db"]) == ("m pw", 2)
    assert options["sentinel_kwargs"]["password"] == "s-pw"

    from redbeat.schedulers import get_redis

    app = create_app(_sentinel_settings(), THREE)
    client = get_redis(app)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "rollouts"
    assert pool.connection_kwargs["password"] == "m pw"

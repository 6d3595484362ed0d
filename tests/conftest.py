"""Fixtures shared by every test level: one private embedded Redis per test session."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rollout_workers.local.redis_server import EmbeddedRedis
from tests.support.procs import Processes

TEST_HANDLERS = {
    "rollouts": "tests.support.handlers:recording",
    "analysisruns": "tests.support.handlers:recording",
    "experiments": "tests.support.handlers:recording",
}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    if os.environ.get("ROLLOUTS_TEST_REDIS_URL"):
        pytest.skip("external Redis configured")  # pragma: no cover
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    return redis_server.url


@pytest.fixture
def rdb(redis_url: str) -> Iterator[redis.Redis]:
    """A clean database for each test."""
    client = redis.Redis.from_url(redis_url)
    client.flushall()
    yield client
    client.close()


@pytest.fixture
def base_env(redis_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment every spawned process gets: this session's Redis, test handlers, fast TTLs."""
    return {
        "ROLLOUTS_REDIS_URL": redis_url,
        "ROLLOUTS_STATE_DIR": str(tmp_path / "state"),
        "ROLLOUTS_RECONCILE_HANDLERS": json.dumps(TEST_HANDLERS),
        "ROLLOUTS_QUEUE_LEASE_TTL": "3",
        "ROLLOUTS_LOG_LEVEL": "INFO",
        "ROLLOUTS_METRICS_PORT": "0",  # a test that scrapes picks its own free port
    }


@pytest.fixture
def procs(rdb: redis.Redis, base_env: dict[str, str], tmp_path: Path) -> Iterator[Processes]:
    processes = Processes(env=base_env, logs=tmp_path / "logs")
    yield processes
    processes.stop_all()

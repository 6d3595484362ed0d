"""Real servers on loopback for the senders: a recording HTTP receiver and a send context."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import requests

from rollout_workers.notifications.services import SendContext
from tests.support.receiver import Receiver

NOW = 1_700_000_000.75


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


@pytest.fixture
def ctx() -> Iterator[SendContext]:
    with requests.Session() as session:
        session.trust_env = False  # no proxy from the environment for loopback
        yield SendContext(session=session, timeout=5.0, clock=lambda: NOW)


def free_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    return free_port()

"""Senders: one module per service type, as notifications-engine's ``pkg/services/*.go``.

A sender makes one attempt to deliver a rendered :class:`~..render.Notification` to one
recipient of one configured service. It never sleeps and never retries: the delivery handler
(``notifications/delivery.py``) owns retries and their waits (Redis timers, not sleeps in a
worker), and asks :func:`.registry.retry_policy` how many attempts a service allows.

A failure is a :class:`SendError`. ``final`` says whether another attempt could help: a 4xx
answer (but 429) or a configuration error is final; a connection error, a timeout, a 429 or a
5xx is not. A 429's ``Retry-After`` is carried in ``retry_after``. Senders share one module
for HTTP calls and this mapping (:mod:`.transport`) and one for reading their options
(:mod:`.options`); :mod:`.gojson` writes bodies as Go does.

Every sender has the same signature (:data:`Sender`): the service's options as the ConfigMap
gives them (Secret references already replaced), the notification, the recipient (what
follows ``<service>:`` in a subscription), and :class:`SendContext` (HTTP session and timeout).
:mod:`.registry` maps a service type to its sender (``SENDERS``); its ``send`` dispatches, and a
type with no sender is a final error naming it. This module holds only what the senders share,
and imports none of them, so that no sender module is imported in a cycle.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from rollout_workers.notifications.render import Notification


class SendError(Exception):
    """A send that failed; ``final``: retrying cannot help. ``status`` is the HTTP status when
    there was an answer."""

    def __init__(
        self,
        message: str,
        *,
        final: bool,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.final = final
        self.status = status
        self.retry_after = retry_after


@dataclass
class SendContext:
    """What a sender may use: an HTTP session (pooled connections), the timeout of one
    request, in seconds, a clock (Unix seconds) for the services that send a time, and the
    name of the destination's service (``github`` for ``service.webhook.github``;
    :func:`.registry.send` sets it). The webhook sender needs the name: the engine picks the
    template's ``webhook.<name>`` block by it (``Destination.Service``)."""

    session: requests.Session = field(default_factory=requests.Session)
    timeout: float = 10.0
    clock: Callable[[], float] = time.time
    service: str = ""


Sender = Callable[[Mapping[str, Any], Notification, str, SendContext], None]


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts a send gets in all, and the waits between them (doubling from
    ``wait_min``, at most ``wait_max``), in seconds."""

    attempts: int = 3
    wait_min: float = 1.0
    wait_max: float = 5.0

    def wait(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.wait_max, self.wait_min * 2 ** max(0, attempt - 1)))

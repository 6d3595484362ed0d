"""Logging for every process: plain text for people, or one JSON object per line."""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable

from rollout_workers.settings import LogSettings

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(processName)s[%(process)d] %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure(settings: LogSettings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.level)


class OutageLog:
    """One log line when a dependency (Redis, the API server) becomes unreachable and one
    when it is back, however many attempts fail in between.

    `failed(err)` on every failed attempt, `ok()` on every success; `ok()` returns the outage's
    length when it ends one (else None), so the caller can act on a reconnect.
    """

    def __init__(
        self, what: str, logger: logging.Logger, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.what, self._log, self._clock = what, logger, clock
        self.since: float | None = None

    @property
    def down(self) -> bool:
        return self.since is not None

    def failed(self, err: object) -> bool:
        """Record a failed attempt; True for the first of an outage (the one logged)."""
        if self.since is not None:
            return False
        self.since = self._clock()
        self._log.warning("%s unavailable: %s", self.what, err)
        return True

    def ok(self) -> float | None:
        if self.since is None:
            return None
        lasted = self._clock() - self.since
        self.since = None
        self._log.warning("%s back after %.1f s", self.what, lasted)
        return lasted

"""One log line per outage: the shared OutageLog and the filter on Celery's consumer logs."""

from __future__ import annotations

import logging

import pytest

from rollout_workers.celeryapp import outage
from rollout_workers.logs import OutageLog

CELERY_LINES = [
    ("celery.worker.consumer.consumer", logging.WARNING,
     "consumer: Connection to broker lost. Trying to re-establish the connection..."),
    ("celery.worker.consumer.consumer", logging.ERROR,
     "consumer: Cannot connect to redis://127.0.0.1:1/0: Error 111 connecting. Connection "
     "refused..\\nTrying again in 2.00 seconds... (1/None)"),
    ("celery.worker.consumer.consumer", logging.ERROR,
     "consumer: Cannot connect to redis://127.0.0.1:1/0: Error 111 connecting. Connection "
     "refused..\\nTrying again in 4.00 seconds... (2/None)"),
    ("celery.worker.consumer.connection", logging.INFO, "Connected to redis://127.0.0.1:1/0"),
]  # fmt: skip


def test_outage_log_reports_the_first_failure_and_the_recovery_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    tracker = OutageLog("redis", logging.getLogger("t"), clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        assert tracker.ok() is None  # nothing to report while healthy
        assert tracker.failed("refused") is True
        assert tracker.failed("refused") is False
        now[0] = 103.5
        assert tracker.ok() == pytest.approx(3.5)
        assert tracker.ok() is None
    assert [r.getMessage() for r in caplog.records] == [
        "redis unavailable: refused",
        "redis back after 3.5 s",
    ]


def test_celerys_reconnect_lines_become_one_down_and_one_back_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    flt = outage.install()
    try:
        with caplog.at_level(logging.INFO):
            logging.getLogger("celery.worker.consumer.connection").info("Connected to redis://x")
            for name, level, message in CELERY_LINES:
                logging.getLogger(name).log(level, message)
        messages = [r.getMessage() for r in caplog.records]
    finally:
        for name in outage.LOGGERS:
            logging.getLogger(name).removeFilter(flt)
    assert messages[0] == "Connected to redis://x"  # the first connection is Celery's own line
    assert len(messages) == 3, messages
    assert messages[1].startswith("redis unavailable: consumer: Connection to broker lost")
    assert messages[2].startswith("redis back after")

"""Delays go through the Redis timers, never Celery eta/countdown (redelivered after the
visibility timeout and held in worker memory on Redis)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_celery_eta_or_countdown_in_the_code() -> None:
    pattern = re.compile(r"\b(countdown|eta)\s*=")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for pkg in ("rollout_workers", "beat")
        for path in (ROOT / pkg).rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []

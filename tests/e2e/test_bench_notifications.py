"""bench/notifications.py at a tiny size (about 30 s on a 2-core machine): every expected
notification arrives once, and the bench prints its two summary lines and its JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_notifications_bench_smoke(tmp_path: Path) -> None:
    output = tmp_path / "notifications.json"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "notifications.py"),
            "--rollouts=8",
            "--namespaces=2",
            "--settle=1",
            f"--output={output}",
        ],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    last = run.stdout.strip().splitlines()[-2:]
    assert re.fullmatch(
        r"notifications: 16 sent, 0 duplicates, 0 lost, p99 delay \d+\.\d\d s", last[0]
    ), last
    assert re.fullmatch(
        r"reconcile p99: subscribed [\d.]+ ms, not subscribed [\d.]+ ms, ratio [\d.]+", last[1]
    ), last
    report = json.loads(output.read_text())
    assert report["notifications"]["jobs_seen"] == 16, report["notifications"]
    assert report["notifications"]["unexpected"] == 0, report["notifications"]
    exact = report["reconcile"]["exact"]
    assert exact["subscribed"]["reconciles"] > 0 and exact["not_subscribed"]["reconciles"] > 0

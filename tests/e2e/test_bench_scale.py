"""bench/scale.py at a tiny size (about 50 s on a 2-core machine): the pool, a prefork host and
the peer all take every rollout to Healthy on revision 2, and the bench prints its summary lines."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_scale_bench_smoke(tmp_path: Path) -> None:
    output = tmp_path / "scale.json"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "scale.py"),
            "--rollouts=10",
            "--namespaces=2",
            "--pools=2",
            "--prefork-pools=2",
            "--enqueue-keys=200",
            "--latency-seconds=0.5",
            f"--output={output}",
        ],
        check=False,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = [line for line in run.stdout.splitlines() if line.startswith("scale: ")]
    expected = [
        r"scale: pool\(2\)/peer throughput ratio \d+\.\d\d",
        r"scale: controller cpu per reconcile pool \d+\.\d\d ms peer \d+\.\d\d ms",
        r"scale: latency copied p99 pool [\d.]+ ms peer [\d.]+ ms",
        r"scale: redis commands per reconcile [\d.]+",
        r"scale: pool\(4\)/pool\(1\) speed-up nan",
        r"scale: enqueue --all 200 keys \d+\.\d\d s",
    ]
    assert len(summary) == len(expected), summary
    for line, pattern in zip(summary, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    report = json.loads(output.read_text())
    assert [c["case"] for c in report["cases"]] == ["pool(2)", "prefork(2)", "peer(10)"]
    for case in report["cases"]:
        assert case["rollouts"] == 10
        assert case["reconciles"] >= 10
        assert case["latency"]["not_copied"]["missed"] == 0
    assert report["enqueue_all"]["queued_after"] == 200

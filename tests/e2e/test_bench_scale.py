"""bench/scale.py at a tiny size (about 35 s on a 2-core machine): the pool and the peer both
take every rollout to Healthy on revision 2, and the bench prints its three summary lines."""

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
    last = run.stdout.strip().splitlines()[-3:]
    assert re.fullmatch(r"scale: pool\(2\)/peer throughput ratio \d+\.\d\d", last[0]), last
    assert re.fullmatch(r"scale: pool\(4\)/pool\(1\) speed-up nan", last[1]), last
    assert re.fullmatch(r"scale: enqueue --all 200 keys \d+\.\d\d s", last[2]), last
    report = json.loads(output.read_text())
    assert [c["case"] for c in report["cases"]] == ["pool(2)", "peer(10)"]
    for case in report["cases"]:
        assert case["rollouts"] == 10
        assert case["reconciles"] >= 10
        assert case["latency"]["not_copied"]["missed"] == 0
    assert report["enqueue_all"]["queued_after"] == 200

"""The chaos loop: the e2e scenarios under kill -9 of worker hosts, wide and repeated.

Runs `tests/e2e/test_rollouts.py::test_scenarios_survive_kill_9_of_workers` `--runs` times with
`ROLLOUTS_CHAOS_WIDE=1` (every scenario family at once, the plain ones twice, on four worker
hosts, both CRD shapes per run), and collects what each run prints: the kills, the worst
kill-to-reconcile of claimed and of reserved keys, and the longest any queued key waited. A
failed run keeps its pytest output (the scenario's failure with the trace lines of the keys in
its namespace) in `--logs`. It stops at the first failure unless `--keep-going`.

    .venv/bin/python bench/chaos_loop.py --runs 20      # or: make chaos CHAOS_RUNS=20

Appends to bench/results/chaos.json (the figures of every run and their worst, per loop) unless
--no-record. `--pool` runs every worker host under that pool (the default: threads).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TEST = "tests/e2e/test_rollouts.py::test_scenarios_survive_kill_9_of_workers"

_WORST = re.compile(r"^\s+(claimed|reserved): (\d+), worst kill-to-reconcile ([\d.]+)s", re.M)
_WAIT = re.compile(r"longest wait of a queued key: ([\d.]+)s")


def figures(output: str) -> dict[str, Any]:
    """What one pytest run printed, per CRD shape (in the order the shapes ran)."""
    shapes: list[dict[str, Any]] = []
    for block in output.split("kill -9 of worker hosts during the run: ")[1:]:
        one: dict[str, Any] = {"kills": int(block.split("\n", 1)[0])}
        for how, count, worst in _WORST.findall(block):
            one[f"{how}_keys"] = int(count)
            one[f"worst_{how}_s"] = float(worst)
        wait = _WAIT.search(block)
        if wait:
            one["longest_queued_wait_s"] = float(wait.group(1))
        shapes.append(one)
    return {"shapes": shapes}


def run_once(index: int, logs: Path, *, pool: str | None = None) -> dict[str, Any]:
    env = {**os.environ, "ROLLOUTS_CHAOS_WIDE": "1"}
    if pool:  # every worker host `-P <pool>` (tests/support/procs.py)
        env["ROLLOUTS_TEST_WORKER_POOL"] = pool
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-m", "slow", "-p", "no:cacheprovider", TEST],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    result = {
        "run": index,
        "ok": done.returncode == 0,
        "seconds": round(time.monotonic() - started, 1),
        **figures(output),
    }
    if done.returncode != 0:
        logs.mkdir(parents=True, exist_ok=True)
        path = logs / f"chaos-run-{index}.log"
        path.write_text(output)
        result["log"] = str(path)
    return result


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    shapes = [s for r in runs for s in r["shapes"]]

    def worst(name: str) -> float | None:
        values = [s[name] for s in shapes if name in s]
        return max(values) if values else None

    return {
        "runs": len(runs),
        "failed": [r["run"] for r in runs if not r["ok"]],
        "kills": sum(s.get("kills", 0) for s in shapes),
        "worst_claimed_s": worst("worst_claimed_s"),
        "worst_reserved_s": worst("worst_reserved_s"),
        "longest_queued_wait_s": worst("longest_queued_wait_s"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--keep-going", action="store_true", help="Run on after a failure.")
    parser.add_argument("--logs", type=Path, default=REPO / ".rollouts" / "chaos")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "results" / "chaos.json")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument(
        "--pool", choices=["threads", "prefork", "solo"], help="The worker hosts' pool."
    )
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    for i in range(1, args.runs + 1):
        result = run_once(i, args.logs, pool=args.pool)
        runs.append(result)
        state = "ok" if result["ok"] else f"FAILED (log: {result.get('log')})"
        print(
            f"run {i}/{args.runs}: {state} in {result['seconds']} s {result['shapes']}", flush=True
        )
        if not result["ok"] and not args.keep_going:
            break
    total = summary(runs)
    print("chaos: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    if not args.no_record:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        report = {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "cores": os.cpu_count(),
            "pool": args.pool or "default",
            "summary": total,
            "runs": runs,
        }
        # Every loop is kept: the file is the history of the hunt, appended to.
        recorded = json.loads(args.output.read_text()) if args.output.exists() else {}
        recorded.setdefault("loops", []).append(report)
        args.output.write_text(json.dumps(recorded, indent=1) + "\n")
    return 0 if not total["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())

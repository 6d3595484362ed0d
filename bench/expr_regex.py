"""The `matches` engine: RE2 (google-re2) against the pure-Python NFA it replaced.

    .venv/bin/python bench/expr_regex.py [--old PATH] [--repeat N]

`--old` loads the previous engine from a file, e.g. the last version of it in git:

    git show d229f46:rollout_workers/analysis/expr_regex.py > /tmp/old_expr_regex.py

For each pattern and subject it times compile_regex (once) and search (best of N runs, each of
enough calls to last ~50 ms), and the whole condition through evaluate_condition. Prints a
table and writes the figures to bench/results/expr_regex.json. Takes a few seconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rollout_workers.expr import regex as expr_regex  # noqa: E402
from rollout_workers.expr.expression import evaluate_condition  # noqa: E402

#: (name, pattern, subject): typical metric conditions, then the classic backtracking traps.
CASES: list[tuple[str, str, str]] = [
    ("version", r"^v[0-9]+\.[0-9]+\.[0-9]+$", "v1.25.3"),
    ("word in 1 KB log", r"(?:error|fatal|panic)", "ok " * 340 + "panic"),
    ("status code", r"^(2|3)\d\d$", "204"),
    ("case-insensitive", r"(?i)^healthy$", "HEALTHY"),
    ("(a+)+$ on a*5000!", r"(a+)+$", "a" * 5_000 + "!"),
    ("a*a*a*a*a*a*c on a*5000", r"a*a*a*a*a*a*c", "a" * 5_000),
    ("^(\\w+\\s?)*$ on 5000", r"^(\w+\s?)*$", "a" * 5_000 + "!"),
]

LIMIT = 2_000  # the old engine's default max_states


def load_old(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("old_expr_regex", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def per_call(fn: Callable[[], object], repeat: int) -> float:
    """Seconds per call: the best of `repeat` batches sized to last about 50 ms."""
    calls = 1
    while True:
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - started
        if elapsed > 0.05 or calls >= 1 << 20:
            break
        calls *= 2
    best = elapsed / calls
    for _ in range(repeat - 1):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - started) / calls)
    return best


def measure(engine: ModuleType, pattern: str, subject: str, repeat: int) -> dict[str, Any]:
    started = time.perf_counter()
    program = engine.compile_regex(pattern, max_length=512, max_states=LIMIT)
    compile_s = time.perf_counter() - started
    steps = [0]

    def charge(n: int) -> None:
        steps[0] += n

    matched = program.search(subject, charge)
    charged = steps[0]
    search_s = per_call(lambda: program.search(subject, lambda _: None), repeat)
    return {
        "compile_us": compile_s * 1e6,
        "search_us": search_s * 1e6,
        "matched": matched,
        "steps": charged,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", type=Path, help="the previous expr_regex.py, to compare with")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    engines: dict[str, ModuleType] = {"re2": expr_regex}
    if args.old:
        engines["old NFA"] = load_old(args.old)

    rows: list[dict[str, Any]] = []
    for name, pattern, subject in CASES:
        row: dict[str, Any] = {"case": name, "pattern": pattern, "subject_chars": len(subject)}
        for label, engine in engines.items():
            row[label] = measure(engine, pattern, subject, args.repeat)
        literal = pattern.replace("\\", "\\\\").replace("'", "\\'")
        try:
            row["evaluate_condition_us"] = 1e6 * per_call(
                lambda lit=literal, s=subject: evaluate_condition(f"result matches '{lit}'", s),
                args.repeat,
            )
        except Exception as exc:  # a step budget stop is a result too
            row["evaluate_condition_us"] = f"error: {exc}".splitlines()[0]
        rows.append(row)

    header = f"{'case':<28}" + "".join(f"{label + ' search µs':>20}" for label in engines)
    if len(engines) > 1:
        header += f"{'speed-up':>10}"
    print(header + f"{'condition µs':>16}")
    for row in rows:
        line = f"{row['case']:<28}"
        for label in engines:
            line += f"{row[label]['search_us']:>20.2f}"
        if len(engines) > 1:
            line += f"{row['old NFA']['search_us'] / row['re2']['search_us']:>9.0f}x"
        cond = row["evaluate_condition_us"]
        line += f"{cond:>16.2f}" if isinstance(cond, float) else f"  {cond}"
        print(line)
    for row in rows:
        results = {label: row[label]["matched"] for label in engines}
        if len(set(results.values())) > 1:
            print(f"DISAGREE on {row['case']}: {results}")

    out = REPO / "bench" / "results" / "expr_regex.json"
    out.write_text(
        json.dumps(
            {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "machine": {
                    "cores": os.cpu_count(),
                    "platform": platform.platform(),
                    "python": platform.python_version(),
                    "loadavg_1m": os.getloadavg()[0],
                },
                "parameters": {"repeat": args.repeat, "engines": list(engines)},
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

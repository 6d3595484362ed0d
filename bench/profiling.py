"""Where a reconcile's CPU goes: py-spy samples of live processes, counted by phase.

`Sampler(pid).start()` runs `py-spy record --subprocesses --gil --nonblocking --format raw` on a
process group's leader (a worker host: its consumer and every pool process; the watcher) until
`stop()`, and returns the collapsed stacks. Only a thread holding the GIL is sampled (a thread
waiting on a socket has released it), so samples / rate is the CPU seconds spent in Python, per
process; what runs outside the GIL (the kernel's side of a send) is not counted. `--nonblocking`
reads the stacks without stopping the process: a stopped process of a dozen threads lost a
third of its throughput (bench/README.md), at the price of a stack now and then read half-way
through a call, so the leaf functions are approximate and the phases are not. `phases()`
assigns each stack to the first phase its frames name, from the leaf up: a `json.loads` called
from the cache counts as a cache read, a Redis round trip made by `claim` as the workqueue's.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

#: Samples per second per thread.
RATE = 250

#: (phase, path fragments naming it), matched from a stack's leaf towards its root.
PHASES: list[tuple[str, tuple[str, ...]]] = [
    ("logging", ("logging/__init__.py", "rollout_workers/logs.py")),
    ("API writes and events", ("rollout_workers/kube/", "urllib3/", "kubernetes/")),
    ("cache reads and JSON decoding", ("rollout_workers/cache/",)),
    (
        "claim, done, lease keeper, counters",
        (
            "rollout_workers/workqueue/",
            "rollout_workers/counters.py",
            "rollout_workers/metrics/",
            "rollout_workers/reconcile/runner",
        ),
    ),
    (
        "reconcile logic",
        (
            "rollout_workers/rollout/",
            "rollout_workers/api/",
            "rollout_workers/analysis/",
            "rollout_workers/experiment/",
            "rollout_workers/notifications/",
            "pydantic",
        ),
    ),
    ("Celery consumer, prefork hand-off, task events", ("celery/", "kombu/", "billiard/")),
]
OTHER = "other (interpreter, imports, redis-py outside the above)"


def py_spy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(found).exists():
        raise SystemExit("--profile needs py-spy (pip install py-spy; `make install` has it)")
    return found


class Sampler:
    def __init__(self, pid: int, rate: int = RATE) -> None:
        self.pid, self.rate = pid, rate
        self._dir = Path(tempfile.mkdtemp(prefix="pyspy-"))
        self._out = self._dir / "stacks.txt"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Sampler:
        argv = [
            py_spy(),
            "record",
            "--pid",
            str(self.pid),
            "--subprocesses",
            "--gil",
            "--nonblocking",
        ]
        argv += ["--rate", str(self.rate), "--format", "raw", "--output", str(self._out)]
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        return self

    def stop(self) -> list[tuple[str, int]]:
        """The collapsed stacks (root;...;leaf, samples) since start()."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGINT)
        try:
            _, err = self._proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        try:
            text = self._out.read_text()
        except OSError as error:
            raise RuntimeError(f"py-spy wrote nothing: {err.decode(errors='replace')}") from error
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
        stacks = []
        for line in text.splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                stacks.append((stack, int(count)))
        return stacks


def phase_of(stack: str) -> str:
    for frame in reversed(stack.split(";")):
        for phase, fragments in PHASES:
            if any(f in frame for f in fragments):
                return phase
    return OTHER


def phases(stacks: list[tuple[str, int]], rate: int = RATE) -> dict[str, float]:
    """CPU seconds by phase."""
    samples: Counter[str] = Counter()
    for stack, count in stacks:
        samples[phase_of(stack)] += count
    return {phase: n / rate for phase, n in samples.items()}


def top_functions(stacks: list[tuple[str, int]], n: int = 15, rate: int = RATE) -> list[str]:
    """The leaf functions that took most samples, as `seconds function (file:line)`."""
    leaves: Counter[str] = Counter()
    for stack, count in stacks:
        leaves[stack.rsplit(";", 1)[-1]] += count
    return [f"{c / rate:7.2f} s  {leaf}" for leaf, c in leaves.most_common(n)]

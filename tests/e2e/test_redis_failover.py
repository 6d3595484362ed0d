"""The Redis master killed under load: the whole system on a Sentinel group (a master, two
replicas, three Sentinels: real redis-server processes), the e2e scenarios running, and the
master SIGKILLed in the middle of them. Every scenario still passes, no key is reconciled by two
workers at once (from the keyed traces every sync task logs), and the time from the kill to the
first reconcile finished on the new master is printed."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from devcluster.server import DevClusterThread
from tests.e2e import test_rollouts as e2e
from tests.e2e.conftest import start_system
from tests.support.procs import Processes, wait_for
from tests.support.sentinel import SentinelGroup, timed_failover

#: A finished sync task: `<kind>.sync <message key>: <outcome>[ (<key>, whose turn it was)]
#: in <seconds>s, held <claimed>-<releasing>` (wall-clock times inside its claim).
_DONE = re.compile(
    r" (?P<kind>\w+)\.sync (?P<sent>\S+): (?P<outcome>.+?)"
    r"(?: \((?P<key>\S+), whose turn it was\))? in [\d.]+s, held (?P<start>[\d.]+)-(?P<end>[\d.]+)$"
)
#: Outcomes of a sync that reconciled its key (not: a duplicate, busy, lost or Redis error).
_RECONCILED = ("done", "requeue after", "backoff", "gone")

SCENARIOS = [
    e2e.scenario_2_abort_retry_promote,
    e2e.scenario_3_update_while_paused,
    e2e.scenario_5_bluegreen_preview_and_promote,
    e2e.analysis_1_job_steps_then_promote,
    e2e.analysis_5_experiment_step,
]


def reconciles(logs: Path) -> list[tuple[float, float, str, str]]:
    """(claimed, releasing, kind, key) of every reconcile the workers logged: wall-clock times
    inside each claim."""
    out = []
    for path in logs.glob("host-*.log"):
        for line in path.read_text(errors="replace").splitlines():
            m = _DONE.search(line)
            if m is None or not m["outcome"].startswith(_RECONCILED):
                continue
            out.append((float(m["start"]), float(m["end"]), m["kind"], m["key"] or m["sent"]))
    return sorted(out)


def overlaps(found: list[tuple[float, float, str, str]]) -> list[str]:
    """Reconciles of one key whose claims were held at the same time. The spans are inside
    the claims (after the grant, before the release), so any overlap is a real one."""
    last: dict[tuple[str, str], tuple[float, float]] = {}
    bad = []
    for start, end, kind, key in found:
        previous = last.get((kind, key))
        if previous is not None and start < previous[1]:
            bad.append(f"{kind} {key}: {previous} and {(start, end)}")
        if previous is None or end > previous[1]:
            last[(kind, key)] = (start, end)
    return bad


def wait_for_reconciles(logs: Path, runner: threading.Thread, count: int = 5) -> None:
    """Until the workers have logged `count` reconciles: the scenarios are under way, their
    first deploys going, with every later step still to come. (A fixed sleep raced them: on a
    fast run every scenario had finished before the kill.)"""
    wait_for(
        lambda: len(reconciles(logs)) >= count or not runner.is_alive(),
        e2e.TIMEOUT,
        f"{count} reconciles logged",
    )
    assert runner.is_alive(), "the scenarios finished before the workers logged a reconcile"


@pytest.mark.slow
def test_scenarios_survive_a_killed_redis_master(
    procs: Processes, cluster: DevClusterThread, tmp_path: Path
) -> None:
    group = SentinelGroup(tmp_path / "sentinel", password="master-pw", sentinel_password="s-pw")
    group.start()
    try:
        procs.env.update(group.env())
        kube, kubeconfig, _ = start_system(procs, cluster, tmp_path, workers=2)
        failure: list[BaseException] = []

        def scenarios() -> None:
            try:
                e2e.run_all(kube, kubeconfig, SCENARIOS, prefix="f", logs=tmp_path / "logs")
            except BaseException as err:  # reported after the failover figures
                failure.append(err)

        runner = threading.Thread(target=scenarios, daemon=True)
        runner.start()
        wait_for_reconciles(tmp_path / "logs", runner)
        killed_at, new_port = timed_failover(group)
        promoted = time.monotonic() - killed_at
        killed_wall = time.time() - promoted
        runner.join(e2e.TIMEOUT * 3)
        assert not runner.is_alive(), "the scenarios did not finish"
        if failure:
            raise failure[0]
        found = reconciles(tmp_path / "logs")
        after = [end for _, end, _, _ in found if end > killed_wall]
        assert after, "nothing was reconciled after the kill"
        first = min(after) - killed_wall
        print(f"redis master killed: promoted after {promoted:.2f}s (port {new_port}), first "
              f"reconcile finished on the new master {first:.2f}s after the kill")  # fmt: skip
        assert not overlaps(found), overlaps(found)
    finally:
        group.stop()

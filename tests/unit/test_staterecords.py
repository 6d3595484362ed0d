"""State-dir records: written atomically, read back only while their process lives, removed
only by their own process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rollout_workers import staterecords


def test_a_record_reads_back_while_its_process_lives(tmp_path: Path) -> None:
    path = staterecords.write(tmp_path, "thing.json", url="http://127.0.0.1:1")
    assert path == tmp_path / "thing.json" and not (tmp_path / "thing.tmp").exists()
    assert staterecords.read_live(tmp_path, "thing.json") == {
        "url": "http://127.0.0.1:1",
        "pid": os.getpid(),
    }


def test_a_dead_process_record_and_a_broken_one_read_as_none(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    staterecords.write(tmp_path, "dead.json", pid=int(done.stdout), url="x")
    assert staterecords.read_live(tmp_path, "dead.json") is None
    (tmp_path / "broken.json").write_text("{not json")
    assert staterecords.read_live(tmp_path, "broken.json") is None
    (tmp_path / "list.json").write_text("[1]")
    assert staterecords.read_live(tmp_path, "list.json") is None
    assert staterecords.read_live(tmp_path, "missing.json") is None


def test_only_the_recorded_process_removes_its_record(tmp_path: Path) -> None:
    staterecords.write(tmp_path, "r.json", pid=1, url="x")
    staterecords.remove(tmp_path, "r.json")  # not ours
    assert (tmp_path / "r.json").exists()
    staterecords.remove(tmp_path, "r.json", pid=1)
    assert not (tmp_path / "r.json").exists()
    staterecords.remove(tmp_path, "r.json")  # gone already: no error

"""The records processes leave in the state dir so other commands can find them.

A record is a small JSON object in `<state dir>/<name>`: a server's URL (or the embedded API's
kubeconfig) and the pid of the process serving it. It is written atomically (a temp file, then
a rename), read back only while that pid is alive, and removed only by its own process, so a
record left by a process killed with SIGKILL is ignored rather than trusted.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    return True


def write(state_dir: Path, name: str, *, pid: int | None = None, **fields: Any) -> Path:
    """Record `fields` and `pid` (default: this process) as `name` in `state_dir`."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / name
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**fields, "pid": os.getpid() if pid is None else pid}))
    tmp.replace(path)
    return path


def read_live(state_dir: Path, name: str) -> dict[str, Any] | None:
    """The record `name`, if it is readable and its process is alive."""
    try:
        record = json.loads((state_dir / name).read_text())
        alive = isinstance(record, dict) and pid_alive(int(record["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return record if alive else None


def live_url(state_dir: Path, name: str) -> str | None:
    """The `url` of the record `name`, if its process is alive."""
    record = read_live(state_dir, name)
    url = str(record.get("url") or "") if record is not None else ""
    return url or None


def remove(state_dir: Path, name: str, *, pid: int | None = None) -> None:
    """Remove the record `name` if `pid`'s (default: this process') is the one it names."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        path = state_dir / name
        if json.loads(path.read_text()).get("pid") == (os.getpid() if pid is None else pid):
            path.unlink()

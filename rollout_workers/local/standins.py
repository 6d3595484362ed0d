"""Whether the stand-ins are installed, and the one line that says how to install them.

The stand-ins (`devcluster`, the embedded Kubernetes API; `demoprometheus`, the demo's made-up
Prometheus) are a distribution of their own (standins/ in the repository), which `make install`
installs and the controller's image does not carry. Only the local tooling imports them (the
`rollouts devcluster` and `rollouts demo-prometheus` commands, `rollouts up`, the demo), inside
the command that needs them, so that every other command runs without them. This module is
where such a command finds out, before it starts anything, that they are missing.
"""

from __future__ import annotations

from importlib.util import find_spec

#: What installs them, from the repository's root.
INSTALL = "pip install -e ./standins"


class StandinsMissing(RuntimeError):
    """A command needs a stand-in that is not installed."""


def require(command: str, *packages: str) -> None:
    """Raise `StandinsMissing`, naming `rollouts <command>`, unless `packages` can be imported."""
    missing = [name for name in packages if find_spec(name) is None]
    if missing:
        raise StandinsMissing(
            f"`rollouts {command}` needs the stand-ins, which are not installed here "
            f"(no {' or '.join(missing)}): {INSTALL}"
        )

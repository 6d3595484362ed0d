"""What a step plugin implements: Run, Terminate and Abort of one canary step.

A plugin is called synchronously inside a reconcile, so each call must return quickly (a
long-running step reports Running and asks to be called again after a while: the controller
sets a workqueue timer, no worker waits). A plugin keeps its own state in the `status` it returns:
the controller stores it in `status.canary.stepPluginStatuses[].status` and hands it back on the
next call. A call that raises is an Error: the controller records the message and calls again
after a backoff; it never fails the reconcile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rollout_workers.objects import Obj

RUNNING = "Running"
SUCCESSFUL = "Successful"
FAILED = "Failed"
ERROR = "Error"
#: The phases a plugin may report (Argo's StepPluginPhase).
PHASES = frozenset({RUNNING, SUCCESSFUL, FAILED, ERROR})


@dataclass(frozen=True)
class StepContext:
    """The step a call is about: its index and plugin name, the user's `config` from the
    rollout's step, and the plugin's own `status` from its previous Run (None the first time)."""

    index: int
    name: str
    config: Obj
    status: Obj | None


@dataclass(frozen=True)
class StepResult:
    """A plugin's answer. `phase` empty keeps the current phase (Running for a Run);
    `requeue_after` (seconds) asks for the next Run while Running; `status` is kept for the
    next call."""

    phase: str = ""
    message: str = ""
    requeue_after: float | None = None
    status: Obj | None = None


@runtime_checkable
class StepPlugin(Protocol):
    """A step plugin. `rollout` is the Rollout object as read (a copy: changing it changes
    nothing)."""

    def run(self, rollout: Obj, step: StepContext) -> StepResult:
        """Carry out (or check on) the step: Running, Successful or Failed."""
        ...

    def terminate(self, rollout: Obj, step: StepContext) -> StepResult:
        """Stop a Running step the rollout has moved past (promote, promote --full)."""
        ...

    def abort(self, rollout: Obj, step: StepContext) -> StepResult:
        """Undo a Successful (or Running) step of a rollout that was aborted."""
        ...

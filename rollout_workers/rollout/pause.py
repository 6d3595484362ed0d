"""Pause and abort intents of one reconcile, and the status they produce.

Steps never edit the status directly: they record that a pause condition should be added or
removed, or that the rollout is aborted or retried. `calculate_pause_status` turns the intents
into the new status's `abort`, `pauseConditions` and `controllerPause` once, at the end.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from rollout_workers.api.rollout import PauseCondition, PauseReason, RolloutPause, RolloutStatus
from rollout_workers.timefmt import duration_seconds, format_time, parse_time


@dataclass
class PauseContext:
    status: RolloutStatus  # the status as read at the start of the reconcile
    add: list[PauseReason] = field(default_factory=list)
    remove: list[PauseReason] = field(default_factory=list)
    clear: bool = False
    add_abort: bool = False
    remove_abort: bool = False
    abort_message: str = ""

    def is_aborted(self) -> bool:
        if self.remove_abort:
            return False
        return self.add_abort or bool(self.status.abort)

    def has_add_pause(self) -> bool:
        return bool(self.add)

    def get(self, reason: PauseReason) -> PauseCondition | None:
        return next((p for p in self.status.pause_conditions or [] if p.reason == reason), None)

    def completed_pause_step(self, pause: RolloutPause, now: dt.datetime) -> bool:
        condition = self.get(PauseReason.CANARY_PAUSE_STEP)
        if self.status.controller_pause and condition is None:
            return True  # we paused and a user cleared the condition (promote)
        if pause.duration is not None and condition is not None:
            seconds = duration_seconds(pause.duration)
            if seconds is not None:
                return now > parse_time(condition.start_time) + dt.timedelta(seconds=seconds)
        return False

    def pause_remaining(self, pause: RolloutPause, now: dt.datetime) -> float | None:
        """Seconds until a timed pause step expires (for the workqueue timer), if it is timed."""
        condition = self.get(PauseReason.CANARY_PAUSE_STEP)
        if pause.duration is None or condition is None:
            return None
        seconds = duration_seconds(pause.duration)
        if seconds is None:
            return None
        expires = parse_time(condition.start_time) + dt.timedelta(seconds=seconds)
        return max(0.0, (expires - now).total_seconds())


def calculate_pause_status(ctx: PauseContext, new: RolloutStatus, now: dt.datetime) -> None:
    """Write the intents' outcome into the new status (abort, pause conditions, controller
    pause); the rest of the new status is left as it is."""
    if ctx.add_abort:
        new.abort = True
        new.aborted_at = format_time(now)  # a retry then knows to analyse afresh
        return
    if not ctx.remove_abort and ctx.status.abort:
        new.abort = True
        new.aborted_at = ctx.status.aborted_at
        return
    new.abort = None
    new.aborted_at = None
    if ctx.clear:
        new.pause_conditions = None
        new.controller_pause = None
        return
    controller_pause = bool(ctx.status.controller_pause)
    kept: list[PauseCondition] = []
    existing: set[PauseReason] = set()
    for condition in ctx.status.pause_conditions or []:
        if condition.reason not in ctx.remove:
            kept.append(condition)
        existing.add(condition.reason)
    for reason in ctx.add:
        if reason not in existing:
            kept.append(PauseCondition(reason=reason, start_time=format_time(now)))
            existing.add(reason)
            controller_pause = True
    if not kept:
        # Nothing paused any more: controllerPause returns to false, so the next pause step is
        # taken afresh (a user's resume clears only the conditions; see completed_pause_step).
        new.pause_conditions = None
        new.controller_pause = None
        return
    new.pause_conditions = kept
    new.controller_pause = controller_pause or None

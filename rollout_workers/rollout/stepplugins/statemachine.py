"""A canary's plugin steps: the state machine of `status.canary.stepPluginStatuses`.

Mirrors argo-rollouts' rollout/stepplugin.go (stepPluginContext) and the per-operation rules of
rollout/steps/plugin/plugin.go. Each entry is one operation (Run, Terminate, Abort) of one step:

- Run, at the current plugin step while the rollout is Progressing: called until the plugin
  reports Successful or Failed. Running is called again after the plugin's requested requeue
  (at least `requeue_min`, else `requeue_default`); a plugin that raises is Error, with the message,
  and is called again after `error_backoff`. Each call counts in `executions`; the backoff is
  a workqueue timer (the reconcile's requeue-after), never a sleep. Successful completes the
  step; Failed aborts the rollout with the plugin's message.
- Abort, when the rollout is aborted: for every Run that is Successful or Running, latest step
  first. Terminate, when a promote --full (or full promotion) passes a Running step, and (an
  addition to Argo) when a promote moved the step index past a Running step. Both are
  synchronous: a plugin answering Running there is recorded as Failed.
- A plugin that cannot be loaded is a reconciliation error (a warning event, another try after
  `controller_error_backoff`), and no plugin step completes in that reconcile.

Calls to plugins happen here; the statuses go out with the rollout's one status patch (see
`update_status`, called by the canary's status sync).
"""

from __future__ import annotations

import copy
import datetime as dt
import logging

from rollout_workers.api.rollout import CanaryStatus, RolloutStatus, StepPluginStatus
from rollout_workers.objects import Obj
from rollout_workers.rollout.context import RolloutContext
from rollout_workers.rollout.phase import go_duration
from rollout_workers.rollout.stepplugins.protocol import (
    ERROR,
    FAILED,
    PHASES,
    RUNNING,
    SUCCESSFUL,
    StepContext,
    StepPlugin,
    StepResult,
)
from rollout_workers.rollout.stepplugins.registry import StepPluginLoadError, UnknownStepPlugin
from rollout_workers.timefmt import duration_seconds, parse_time

log = logging.getLogger(__name__)


RUN, TERMINATE, ABORT = "Run", "Terminate", "Abort"

STEP_PLUGIN_TRANSITION_REASON = "StepPluginTransition"
STEP_PLUGIN_TRANSITION_MESSAGE = "Step plugin {} at step {}: {} {}"
RECONCILIATION_ERROR_REASON = "ReconciliationError"
RECONCILIATION_ERROR_MESSAGE = "Reconciliation failed with error: {}"


class PluginCallError(RuntimeError):
    """A plugin answered something this controller cannot take (an unknown phase)."""


# -- reading the statuses -----------------------------------------------------------------------


def find_status(
    statuses: list[StepPluginStatus], index: int, operation: str
) -> StepPluginStatus | None:
    return next((s for s in statuses if s.index == index and s.operation == operation), None)


def _read_statuses(ctx: RolloutContext) -> list[StepPluginStatus]:
    status = ctx.rollout.status or RolloutStatus()
    found = status.canary.step_plugin_statuses if status.canary else None
    return [s.model_copy(deep=True) for s in found or []]


def is_step_completed(ctx: RolloutContext, index: int) -> bool:
    """Argo's isStepPluginCompleted: Run Successful or Failed, or Running but since terminated
    or aborted; never after a reconciliation error in this reconcile."""
    state = ctx.step_plugins
    if state.has_error:
        return False
    statuses = state.statuses if state.statuses is not None else _read_statuses(ctx)
    return calculate_step_completed(statuses, index)


def calculate_step_completed(statuses: list[StepPluginStatus], index: int) -> bool:
    run = find_status(statuses, index, RUN)
    if run is None:
        return False
    if run.disabled:
        return True
    if run.phase in (SUCCESSFUL, FAILED):
        return True
    if run.phase == RUNNING:
        stopped = find_status(statuses, index, TERMINATE) or find_status(statuses, index, ABORT)
        return stopped is not None
    return False


def update_status(ctx: RolloutContext, new: RolloutStatus) -> None:
    """Put this reconcile's statuses (or the ones read) on the new status."""
    statuses = ctx.step_plugins.statuses
    if statuses is None:
        statuses = _read_statuses(ctx)
    if new.canary is None:
        if not statuses:
            return
        new.canary = CanaryStatus()
    new.canary.step_plugin_statuses = statuses or None


def reset_status(ctx: RolloutContext, new: RolloutStatus) -> None:
    """A new revision (template or steps changed) starts without plugin statuses."""
    ctx.step_plugins.statuses = []
    if new.canary is not None:
        new.canary.step_plugin_statuses = None


def spec_error(ctx: RolloutContext) -> str:
    """An InvalidSpec message for the first plugin step whose plugin is not enabled."""
    enabled = ctx.step_plugins.registry.enabled
    for index, step in enumerate(ctx.steps):
        if step.plugin is not None and step.plugin.name not in enabled:
            error = UnknownStepPlugin(step.plugin.name)
            return f"could not create step plugin at index {index} : {error}"
    return ""


# -- the reconcile ------------------------------------------------------------------------------


def reconcile_step_plugins(ctx: RolloutContext) -> None:
    state = ctx.step_plugins
    state.statuses = _read_statuses(ctx)
    status = ctx.rollout.status or RolloutStatus()
    steps = ctx.steps

    if ctx.pause.is_aborted():
        # Abort every step that ran, the latest first, each once.
        for run in reversed(list(state.statuses)):
            if run.operation != RUN or run.index >= len(steps):
                continue
            step = steps[run.index].plugin
            if step is None:
                continue
            plugin = _resolve(ctx, run.index, step.name)
            if plugin is None:
                return
            _record(ctx, _abort(ctx, plugin, run.index, step.name, step.config or {}))
        return

    _clean_for_retry(ctx)

    if status.promote_full or (status.stable_rs and status.stable_rs == status.current_pod_hash):
        index = _step_to_terminate(state.statuses)
        step = steps[index].plugin if index is not None and index < len(steps) else None
        if index is not None and step is not None:
            plugin = _resolve(ctx, index, step.name)
            if plugin is not None:
                _record(ctx, _terminate(ctx, plugin, index, step.name, step.config or {}))
        return

    current, current_index = ctx.current_step()
    _terminate_skipped(ctx, current_index)
    if current is None or current.plugin is None or current_index is None:
        return
    if status.phase != "Progressing":
        log.debug("%s: not running step plugin: rollout is %s", ctx.key, status.phase)
        return
    plugin = _resolve(ctx, current_index, current.plugin.name)
    if plugin is None:
        return
    result = _run(ctx, plugin, current_index, current.plugin.name, current.plugin.config or {})
    _record(ctx, result)
    if result is None or result.disabled:
        return
    if result.phase in (RUNNING, ERROR):
        backoff = duration_seconds(result.backoff or "0") or 0
        updated = parse_time(result.updated_at) if result.updated_at else ctx.now
        due = updated + dt.timedelta(seconds=backoff) - ctx.now
        ctx.requeue(due.total_seconds() + state.registry.timings.backoff_delay)
    elif result.phase == FAILED:
        ctx.pause.add_abort = True
        ctx.pause.abort_message = result.message or ""


def _terminate_skipped(ctx: RolloutContext, current_index: int | None) -> None:
    """A promote moved past a Running plugin step: terminate it (Argo only does this on a
    full promotion; a step left Running would keep its external work going)."""
    statuses = ctx.step_plugins.statuses or []
    steps = ctx.steps
    position = len(steps) if current_index is None else current_index
    for run in list(statuses):
        if run.operation != RUN or run.phase != RUNNING or run.index >= position:
            continue
        if find_status(statuses, run.index, TERMINATE) is not None:
            continue
        step = steps[run.index].plugin if run.index < len(steps) else None
        if step is None:
            continue
        plugin = _resolve(ctx, run.index, step.name)
        if plugin is None:
            return
        _record(ctx, _terminate(ctx, plugin, run.index, step.name, step.config or {}))


def _step_to_terminate(statuses: list[StepPluginStatus]) -> int | None:
    """The last Run still Running, unless the latest operation already terminated it."""
    for item in reversed(statuses):
        if item.operation == TERMINATE and item.phase == SUCCESSFUL:
            return None
        if item.operation == RUN and item.phase == RUNNING:
            return item.index
    return None


def _clean_for_retry(ctx: RolloutContext) -> None:
    """A retried (formerly aborted) rollout back at step 0 starts with no plugin statuses."""
    state = ctx.step_plugins
    status = ctx.rollout.status or RolloutStatus()
    if not state.statuses or status.abort:
        return
    step, index = ctx.current_step()
    if step is None or (index or 0) > 0:
        return
    if step.plugin is None or calculate_step_completed(state.statuses, 0):
        state.statuses = []


def _resolve(ctx: RolloutContext, index: int, name: str) -> StepPlugin | None:
    try:
        return ctx.step_plugins.registry.resolve(name)
    except (UnknownStepPlugin, StepPluginLoadError) as err:
        handle_error(ctx, f"could not create step plugin at index {index} : {err}")
        return None


def handle_error(ctx: RolloutContext, message: str) -> None:
    """An error that must not fail the reconcile: a warning event and another try later."""
    state = ctx.step_plugins
    state.has_error = True
    log.warning("%s: %s", ctx.key, message)
    ctx.event(
        RECONCILIATION_ERROR_REASON, RECONCILIATION_ERROR_MESSAGE.format(message), warning=True
    )
    ctx.requeue(state.registry.timings.controller_error_backoff)


def _record(ctx: RolloutContext, result: StepPluginStatus | None) -> None:
    """Store an operation's status in place (order kept), with an event on a phase change."""
    if result is None:
        return
    statuses = ctx.step_plugins.statuses
    assert statuses is not None
    changed = True
    for i, existing in enumerate(statuses):
        if existing.index == result.index and existing.operation == result.operation:
            changed = existing.phase != result.phase
            statuses[i] = result
            break
    else:
        statuses.append(result)
    if not changed or result.disabled:
        return
    if result.operation == RUN and result.phase == SUCCESSFUL:
        return  # the step completion has its own event (RolloutStepCompleted)
    ctx.event(
        STEP_PLUGIN_TRANSITION_REASON,
        STEP_PLUGIN_TRANSITION_MESSAGE.format(
            result.name, result.index + 1, result.operation, result.phase
        ),
        warning=result.phase in (ERROR, FAILED),
    )


# -- the operations (rollout/steps/plugin/plugin.go) --------------------------------------------


def _step_context(index: int, name: str, config: Obj, run: StepPluginStatus | None) -> StepContext:
    return StepContext(
        index=index,
        name=name,
        config=copy.deepcopy(dict(config)),
        status=copy.deepcopy(run.status) if run is not None and run.status is not None else None,
    )


def _seconds_text(seconds: float) -> str:
    whole = int(seconds)
    return go_duration(whole) if whole == seconds else f"{seconds:g}s"


def _call(plugin: StepPlugin, operation: str, rollout: Obj, step: StepContext) -> StepResult:
    method = {RUN: plugin.run, TERMINATE: plugin.terminate, ABORT: plugin.abort}[operation]
    result = method(copy.deepcopy(rollout), step)
    if not isinstance(result, StepResult):
        raise PluginCallError(f"{operation} returned {type(result).__name__}, not a StepResult")
    if result.phase and result.phase not in PHASES:
        raise PluginCallError(f"could not validate rpc phase: invalid phase {result.phase!r}")
    return result


def _run(
    ctx: RolloutContext, plugin: StepPlugin, index: int, name: str, config: Obj
) -> StepPluginStatus | None:
    timings = ctx.step_plugins.registry.timings
    statuses = ctx.step_plugins.statuses or []
    found = find_status(statuses, index, RUN)
    now = ctx.now_text()
    run = (
        found.model_copy(deep=True)
        if found is not None
        else StepPluginStatus(index=index, name=name, operation=RUN, phase=RUNNING, started_at=now)
    )
    if run.phase in (SUCCESSFUL, FAILED):
        return None
    if (run.executions or 0) > 0:
        backoff = duration_seconds(run.backoff or "0") or 0
        updated = parse_time(run.updated_at) if run.updated_at else ctx.now
        if updated + dt.timedelta(seconds=backoff) > ctx.now:
            return run  # not yet: the timer set when it was recorded brings us back
    try:
        answer = _call(plugin, RUN, ctx.obj, _step_context(index, name, config, run))
    except Exception as err:  # a plugin's failure is its step's Error, never a crash loop
        log.warning("%s: step plugin %s at index %d: %s", ctx.key, name, index, err)
        run.backoff, run.updated_at = _seconds_text(timings.error_backoff), now
        run.executions = (run.executions or 0) + 1
        run.phase, run.message = ERROR, str(err) or type(err).__name__
        return run
    run.backoff, run.updated_at = None, now
    run.executions = (run.executions or 0) + 1
    run.message = answer.message or None
    if answer.phase:
        run.phase = answer.phase
    if run.phase == ERROR:
        # An Error answer is retried like a raised one, on the plugin's previous status.
        run.backoff = _seconds_text(timings.error_backoff)
        return run
    if run.phase in (SUCCESSFUL, FAILED):
        run.finished_at = now
    run.status = copy.deepcopy(answer.status) if answer.status is not None else None
    if run.phase == RUNNING:
        requested = answer.requeue_after
        wait = timings.requeue_default
        if requested is not None and requested > timings.requeue_min:
            wait = requested
        run.backoff = _seconds_text(wait)
    return run


def _stop(
    ctx: RolloutContext,
    plugin: StepPlugin,
    operation: str,
    *,
    index: int,
    name: str,
    config: Obj,
    from_phases: tuple[str, ...],
) -> StepPluginStatus | None:
    statuses = ctx.step_plugins.statuses or []
    if find_status(statuses, index, operation) is not None:
        return None  # done once
    run = find_status(statuses, index, RUN)
    if run is None or run.phase not in from_phases:
        return None
    now = ctx.now_text()
    result = StepPluginStatus(
        index=run.index, name=run.name, operation=operation, phase=SUCCESSFUL, started_at=now
    )
    try:
        answer = _call(plugin, operation, ctx.obj, _step_context(index, name, config, run))
    except Exception as err:
        log.warning("%s: step plugin %s %s at index %d: %s", ctx.key, name, operation, index, err)
        result.phase, result.message = ERROR, str(err) or type(err).__name__
        result.finished_at = now
        return result
    if answer.phase:
        result.phase = answer.phase
    if result.phase == RUNNING:
        log.warning("%s: %s cannot run asynchronously; recording it as Failed", ctx.key, operation)
        result.phase = FAILED
    result.message = answer.message or None
    result.finished_at = now
    return result


def _terminate(
    ctx: RolloutContext, plugin: StepPlugin, index: int, name: str, config: Obj
) -> StepPluginStatus | None:
    return _stop(
        ctx, plugin, TERMINATE, index=index, name=name, config=config, from_phases=(RUNNING,)
    )


def _abort(
    ctx: RolloutContext, plugin: StepPlugin, index: int, name: str, config: Obj
) -> StepPluginStatus | None:
    return _stop(
        ctx, plugin, ABORT, index=index, name=name, config=config, from_phases=(RUNNING, SUCCESSFUL)
    )

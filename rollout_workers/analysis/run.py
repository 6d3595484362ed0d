"""The bookkeeping of an AnalysisRun, as pure functions of the run and the clock.

Mirrors argo-rollouts' analysis/analysis.go and utils/analysis: which metrics need a
measurement now (or a resume, or nothing), how a measurement updates its metric's counters,
how each metric and the whole run are assessed (failure, inconclusive and consecutive-error
limits, the consecutive-success limit, counts, dry-run metrics, termination), when the run must
be looked at next (a workqueue timer, never a sleep), and how many measurements are kept. The
controller does the I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRun,
    Argument,
    Measurement,
    Metric,
    MetricResult,
    RunSummary,
)
from rollout_workers.expr.regex import RegexError, compile_regex
from rollout_workers.expr.values import DEFAULT_LIMITS
from rollout_workers.timefmt import duration_seconds, format_time, parse_time

DEFAULT_MEASUREMENT_HISTORY_LIMIT = 10
DEFAULT_CONSECUTIVE_ERROR_LIMIT = 4
DEFAULT_ERROR_RETRY_INTERVAL = 10.0
COMPLETED = frozenset(
    {
        AnalysisPhase.SUCCESSFUL,
        AnalysisPhase.FAILED,
        AnalysisPhase.ERROR,
        AnalysisPhase.INCONCLUSIVE,
    }
)
#: Worse phases first, as Argo's IsWorse orders them.
SEVERITY = {
    AnalysisPhase.SUCCESSFUL: 0,
    AnalysisPhase.INCONCLUSIVE: 1,
    AnalysisPhase.ERROR: 2,
    AnalysisPhase.FAILED: 3,
}
_ARG = re.compile(r"\{\{\s*args\.([A-Za-z0-9_.-]+)\s*\}\}")


class ArgumentError(ValueError):
    """An argument a metric names has no value."""


@dataclass(frozen=True)
class Task:
    metric: Metric
    incomplete: Measurement | None = None  # an in-flight measurement to resume or terminate


def completed(phase: AnalysisPhase | str | None) -> bool:
    return phase in COMPLETED


def int_value(value: int | str | None, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        return default


def seconds(duration: str | None) -> float | None:
    if not duration:
        return None
    value = duration_seconds(duration)
    return None if value is None else float(value)


def failure_limit(metric: Metric) -> int:
    """failureLimit: 0 by default (no failure tolerated); a negative value disables it."""
    return int_value(metric.failure_limit, 0)


def consecutive_success_limit(metric: Metric) -> int:
    """consecutiveSuccessLimit: 0 by default, which (like any value below 1) disables it."""
    return int_value(metric.consecutive_success_limit, 0)


def effective_count(metric: Metric) -> int | None:
    """How many measurements the metric takes; None means it runs until terminated."""
    if metric.count is None:
        return 1 if not metric.interval else None
    return int_value(metric.count, 0)


def result_of(run: AnalysisRun, name: str) -> MetricResult | None:
    status = run.status
    return (
        next((r for r in (status.metric_results or []) if r.name == name), None) if status else None
    )


def last_measurement(run: AnalysisRun, name: str) -> Measurement | None:
    result = result_of(run, name)
    measurements = (result.measurements or []) if result else []
    return measurements[-1] if measurements else None


def _rule_matches(rule: str, names: list[str]) -> tuple[list[str], str]:
    """The names a dryRun/measurementRetention `metricName` matches, and why it cannot match
    anything when it is not a regular expression.

    Argo (utils/analysis/helpers.go) calls Go's `regexp.MatchString(metricName, name)`: an
    unanchored RE2 search (`rate` matches `error-rate`; `^rate$` only `rate`), whose compile
    error is ignored, so a malformed pattern such as `*` simply matches nothing."""
    try:
        program = compile_regex(
            rule,
            max_length=DEFAULT_LIMITS.max_regex_length,
            max_states=DEFAULT_LIMITS.max_regex_states,
        )
    except RegexError as err:
        return [], f"metricName {json.dumps(rule)} is not a valid regular expression: {err}"
    return [name for name in names if program.search(name, _free)], ""


def _free(steps: int) -> None:
    """Metric names are short and few: matching them needs no step budget."""


def _no_match(field: str, index: int, why: str) -> str:
    # Argo's message, with the regular expression's error added when that is the reason.
    message = f"{field}[{index}]: Rule didn't match any metric name(s)"
    return f"{message} ({why})" if why else message


def dry_run_metrics(run: AnalysisRun, metrics: list[Metric]) -> tuple[set[str], str]:
    """Argo's GetDryRunMetrics: the metrics some `dryRun` rule matches, and the error of the
    first rule that matches none ("" when every rule matched)."""
    names = [m.name for m in metrics]
    matched: set[str] = set()
    for index, rule in enumerate(run.spec.dry_run or []):
        hits, why = _rule_matches(rule.metric_name, names)
        if not hits:
            return matched, _no_match("dryRun", index, why)
        matched.update(hits)
    return matched, ""


def dry_run_names(run: AnalysisRun, metrics: list[Metric]) -> set[str]:
    """The dry-run metrics; a rule matching nothing is the reconcile's concern (it fails the
    run before anything is measured), not the assessment's."""
    return dry_run_metrics(run, metrics)[0]


def is_terminating(run: AnalysisRun) -> bool:
    if run.spec.terminate:
        return True
    for result in (run.status.metric_results or []) if run.status else []:
        if result.phase in (AnalysisPhase.FAILED, AnalysisPhase.ERROR, AnalysisPhase.INCONCLUSIVE):
            return not result.dry_run
    return False


def resolve_args(metric: Metric, args: list[Argument]) -> Metric:
    """Substitute `{{args.NAME}}` in the metric (JSON-escaped, as Argo does)."""
    values = {a.name: a.value for a in args}
    text = metric.to_json()

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        value = values.get(name)
        if value is None:
            raise ArgumentError(f"failed to resolve {{{{args.{name}}}}}")
        return json.dumps(value)[1:-1]

    return Metric.from_json(_ARG.sub(replace, text))


# -- what to do now -----------------------------------------------------------------------------


def generate_tasks(run: AnalysisRun, metrics: list[Metric], now: dt.datetime) -> list[Task]:
    tasks: list[Task] = []
    terminating = is_terminating(run)
    started = run.status.started_at if run.status else None
    for index, metric in enumerate(metrics):
        result = result_of(run, metric.name)
        if result is not None and completed(result.phase):
            continue
        last = last_measurement(run, metric.name)
        original = run.spec.metrics[index]
        if last is not None and not last.finished_at:
            if last.resume_at and parse_time(last.resume_at) > now:
                continue
            tasks.append(Task(original, incomplete=last))
            continue
        if terminating:
            continue
        if last is None:
            delay = seconds(metric.initial_delay)
            if metric.initial_delay:
                if not started or delay is None:
                    continue
                if parse_time(started) + dt.timedelta(seconds=delay) > now:
                    continue
            tasks.append(Task(original))
            continue
        count = effective_count(metric)
        if count is not None and result is not None and (result.count or 0) >= count:
            continue
        interval = DEFAULT_ERROR_RETRY_INTERVAL
        if last.phase != AnalysisPhase.ERROR and metric.interval:
            parsed = seconds(metric.interval)
            if parsed is None:
                continue
            interval = parsed
        assert last.finished_at is not None
        # Due at or after the interval: a timer firing exactly on time must find work.
        if now >= parse_time(last.finished_at) + dt.timedelta(seconds=interval):
            tasks.append(Task(original))
    return tasks


def record(result: MetricResult, measurement: Measurement, *, replace_last: bool) -> MetricResult:
    """The metric's result after a measurement (new, or the resumed last one) finished or not."""
    out = result.model_copy(deep=True)
    if completed(measurement.phase):
        # Only a Successful measurement extends the run of successes; Failed, Inconclusive and
        # Error all break it (Argo counts consecutiveSuccess this way).
        if measurement.phase == AnalysisPhase.SUCCESSFUL:
            out.consecutive_success = (out.consecutive_success or 0) + 1
        else:
            out.consecutive_success = 0
        if measurement.phase == AnalysisPhase.ERROR:
            out.error = (out.error or 0) + 1
            out.consecutive_error = (out.consecutive_error or 0) + 1
        else:
            out.count = (out.count or 0) + 1
            out.consecutive_error = 0
            field = {
                AnalysisPhase.SUCCESSFUL: "successful",
                AnalysisPhase.FAILED: "failed",
                AnalysisPhase.INCONCLUSIVE: "inconclusive",
            }[AnalysisPhase(measurement.phase)]
            setattr(out, field, (getattr(out, field) or 0) + 1)
    measurements = list(out.measurements or [])
    if replace_last and measurements:
        measurements[-1] = measurement
    else:
        measurements.append(measurement)
    out.measurements = measurements
    return out


# -- assessment ---------------------------------------------------------------------------------


def failure_inconclusive_or_error(
    metric: Metric, result: MetricResult
) -> tuple[AnalysisPhase | None, str]:
    phase: AnalysisPhase | None = None
    message = ""
    limit = failure_limit(metric)
    if (result.failed or 0) > limit >= 0:
        phase = AnalysisPhase.FAILED
        message = f"failed ({result.failed or 0}) > failureLimit ({limit})"
    inconclusive_limit = int_value(metric.inconclusive_limit, 0)
    if (result.inconclusive or 0) > inconclusive_limit:
        phase = AnalysisPhase.INCONCLUSIVE
        message = (
            f"inconclusive ({result.inconclusive or 0}) > inconclusiveLimit ({inconclusive_limit})"
        )
    error_limit = int_value(metric.consecutive_error_limit, DEFAULT_CONSECUTIVE_ERROR_LIMIT)
    if (result.consecutive_error or 0) > error_limit:
        phase = AnalysisPhase.ERROR
        message = (
            f"consecutiveErrors ({result.consecutive_error or 0}) > "
            f"consecutiveErrorLimit ({error_limit})"
        )
    return phase, message


def assess_metric(metric: Metric, result: MetricResult, terminating: bool) -> AnalysisPhase:
    if completed(result.phase):
        return AnalysisPhase(result.phase)
    measurements = result.measurements or []
    if not measurements:
        return AnalysisPhase.SUCCESSFUL if terminating else AnalysisPhase.PENDING
    if not completed(measurements[-1].phase):
        return AnalysisPhase.RUNNING
    phase, _ = failure_inconclusive_or_error(metric, result)
    if phase is not None:
        return phase
    success_limit = consecutive_success_limit(metric)
    if success_limit > 0 and (result.consecutive_success or 0) >= success_limit:
        return AnalysisPhase.SUCCESSFUL
    count = effective_count(metric)
    if count is not None and (result.count or 0) >= count:
        return count_reached(metric)
    return AnalysisPhase.SUCCESSFUL if terminating else AnalysisPhase.RUNNING


def count_reached(metric: Metric) -> AnalysisPhase:
    """The verdict once a metric took all its measurements without hitting a limit.

    failureLimit alone: Successful (the failures stayed within it). consecutiveSuccessLimit
    alone: Failed, the awaited run of successes never came. Both: Inconclusive, neither limit
    decided. Neither applying cannot pass validate_metrics; it would be an Error.
    """
    failure_applies = failure_limit(metric) >= 0
    success_applies = consecutive_success_limit(metric) > 0
    if failure_applies and success_applies:
        return AnalysisPhase.INCONCLUSIVE
    if success_applies:
        return AnalysisPhase.FAILED
    if failure_applies:
        return AnalysisPhase.SUCCESSFUL
    return AnalysisPhase.ERROR


def count_reached_message(metric: Metric, result: MetricResult) -> str:
    """Why a metric that reached its count without a limit deciding is not Successful."""
    return (
        f"consecutiveSuccess ({result.consecutive_success or 0}) < consecutiveSuccessLimit "
        f"({consecutive_success_limit(metric)}) after count ({result.count or 0})"
    )


def assess_run(
    run: AnalysisRun, metrics: list[Metric], now: dt.datetime
) -> tuple[AnalysisPhase, str]:
    """The run's phase and message; updates each metric result's phase/message and the run and
    dry-run summaries on `run.status` (the caller's working copy)."""
    assert run.status is not None
    terminating = is_terminating(run)
    dry = dry_run_names(run, metrics)
    if not run.status.started_at:
        run.status.started_at = format_time(now)
    worst: AnalysisPhase | None = None
    worst_message = "Run Terminated" if run.spec.terminate else ""
    everything_completed = True
    summary = RunSummary(count=0, successful=0, failed=0, inconclusive=0, error=0)
    dry_summary = RunSummary(count=0, successful=0, failed=0, inconclusive=0, error=0)
    results = run.status.metric_results or []
    for metric in metrics:
        target = dry_summary if metric.name in dry else summary
        target.count = (target.count or 0) + 1
        index = next((i for i, r in enumerate(results) if r.name == metric.name), None)
        if index is None:
            everything_completed = False
            continue
        result = results[index]
        phase = assess_metric(metric, result, terminating)
        if phase != result.phase:
            measurements = result.measurements or []
            result = result.model_copy(
                update={
                    "phase": phase,
                    "message": measurements[-1].message if measurements else result.message,
                }
            )
        if not completed(phase):
            everything_completed = False
            results[index] = result
            continue
        verdict, message = failure_inconclusive_or_error(metric, result)
        if verdict is None and phase in (AnalysisPhase.FAILED, AnalysisPhase.INCONCLUSIVE):
            message = count_reached_message(metric, result)
        if metric.name not in dry:
            if worst is None or SEVERITY[phase] > SEVERITY.get(worst, -1):
                worst = phase
                if message:
                    worst_message = f'Metric "{metric.name}" assessed {phase} due to {message}'
                    if result.message:
                        worst_message += f': "Error Message: {result.message}"'
            _count(summary, phase)
        else:
            if worst is None:
                worst = AnalysisPhase.SUCCESSFUL
            if message:
                result = result.model_copy(
                    update={"message": f"Metric assessed {phase} due to {message}"}
                )
            _count(dry_summary, phase)
        results[index] = result
    run.status.metric_results = results
    run.status.run_summary = summary
    run.status.dry_run_summary = dry_summary
    worst_message = worst_message.strip()
    if terminating:
        return (worst or AnalysisPhase.SUCCESSFUL), worst_message
    if not everything_completed or worst is None:
        return AnalysisPhase.RUNNING, ""
    return worst, worst_message


def _count(summary: RunSummary, phase: AnalysisPhase) -> None:
    field = {
        AnalysisPhase.ERROR: "error",
        AnalysisPhase.FAILED: "failed",
        AnalysisPhase.INCONCLUSIVE: "inconclusive",
    }.get(phase, "successful")
    setattr(summary, field, (getattr(summary, field) or 0) + 1)


# -- timing and retention -----------------------------------------------------------------------


def next_reconcile(run: AnalysisRun, metrics: list[Metric], now: dt.datetime) -> dt.datetime | None:
    """The earliest moment any metric needs a measurement or a resume (None: no timer).

    A time this reconcile recorded (a measurement it took, the run it started) is `now`, which
    the status keeps only to the second: the next measurement is due an interval after `now`
    itself, as Argo schedules it from the in-memory time, not up to a second early."""
    earliest: dt.datetime | None = None
    recorded_now = format_time(now)

    def moment(recorded: str) -> dt.datetime:
        return now if recorded == recorded_now else parse_time(recorded)

    def keep(moment: dt.datetime) -> None:
        nonlocal earliest
        if earliest is None or moment < earliest:
            earliest = moment

    started = run.status.started_at if run.status else None
    for metric in metrics:
        result = result_of(run, metric.name)
        if result is not None and completed(result.phase):
            continue
        last = last_measurement(run, metric.name)
        if last is None:
            delay = seconds(metric.initial_delay)
            if delay is not None:
                keep((moment(started) if started else now) + dt.timedelta(seconds=delay))
            continue
        if not last.finished_at:
            if last.resume_at:
                keep(parse_time(last.resume_at))
            continue
        count = effective_count(metric)
        if count is not None and result is not None and (result.count or 0) >= count:
            continue
        if last.phase == AnalysisPhase.ERROR:
            interval: float | None = DEFAULT_ERROR_RETRY_INTERVAL
        else:
            interval = seconds(metric.interval)
        if interval is None:
            continue
        keep(moment(last.finished_at) + dt.timedelta(seconds=interval))
    return earliest


def retention_rules(run: AnalysisRun, metrics: list[Metric]) -> tuple[dict[str, int], str]:
    """Argo's GetMeasurementRetentionMetrics: the limit of the last `measurementRetention` rule
    matching each metric (a later rule replaces an earlier one, whatever its limit), and the
    error of the first rule that matches none ("" when every rule matched)."""
    names = [m.name for m in metrics]
    limits: dict[str, int] = {}
    for index, rule in enumerate(run.spec.measurement_retention or []):
        hits, why = _rule_matches(rule.metric_name, names)
        if not hits:
            return limits, _no_match("measurementRetention", index, why)
        limits.update(dict.fromkeys(hits, rule.limit))
    return limits, ""


def retention_limits(run: AnalysisRun, metrics: list[Metric]) -> dict[str, int]:
    """Measurements kept per metric: the matching rule's limit when it is positive, else 10
    (Argo's garbageCollectMeasurements)."""
    rules, _ = retention_rules(run, metrics)
    return {
        m.name: rules[m.name] if rules.get(m.name, 0) > 0 else DEFAULT_MEASUREMENT_HISTORY_LIMIT
        for m in metrics
    }


def trim(result: MetricResult, limit: int) -> MetricResult:
    measurements = result.measurements or []
    if len(measurements) <= limit:
        return result
    return result.model_copy(update={"measurements": measurements[-limit:]})

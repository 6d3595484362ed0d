"""Times and durations in the expr-lang evaluator: Argo's EvalTime (utils/evaluate/evaluate.go,
cases from evaluate_test.go) and expr-lang's `now`, `duration`, `date` and time arithmetic."""

from __future__ import annotations

import datetime as dt

import pytest

from rollout_workers.expr.expression import evaluate_condition, evaluate_time
from rollout_workers.expr.values import ExpressionError, GoDuration
from rollout_workers.timefmt import TimeError, parse_duration

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)

# (id, expression, Go's Time.String() of the result, or the error)
TIMES = [
    # TestEvalTimeWithSuccessExpr
    (
        "date minus an hour",
        'date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "UTC") - duration("1h")',
        "2023-08-13 23:00:00 +0000 UTC",
        "",
    ),
    # TestEvalTimeWithNotTimeResult
    ("not a time", "hello", "", "unknown name hello"),
    # TestEvalTimeWithInvalidExpression
    ("invalid expression", "now() -- ?", "", "unexpected token"),
    ("now", "now()", "2024-05-01 12:00:00 +0000 UTC", ""),
    ("now minus a lookback", 'now() - duration("1h30m")', "2024-05-01 10:30:00 +0000 UTC", ""),
    ("duration plus time", 'duration("1m") + now()', "2024-05-01 12:01:00 +0000 UTC", ""),
    ("int times duration", 'now() - 2 * duration("1h")', "2024-05-01 10:00:00 +0000 UTC", ""),
    (
        "nanoseconds kept",
        'now() + duration("1.000000001s")',
        "2024-05-01 12:00:01.000000001 +0000 UTC",
        "",
    ),
    ("date with a default layout", 'date("2023-08-14")', "2023-08-14 00:00:00 +0000 UTC", ""),
    (
        "RFC 3339 keeps its offset",
        'date("2023-08-14T10:00:00+02:00")',
        "2023-08-14 10:00:00 +0200 +0200",
        "",
    ),
    (
        "date in a zone",
        'date("2023-08-14 00:00:00", "2006-01-02 15:04:05", "Europe/Paris")',
        "2023-08-14 00:00:00 +0200 CEST",
        "",
    ),
    (
        "Go layout elements",
        'date("Aug 14, 2023 at 3:04pm (.250)", "Jan 2, 2006 at 3:04pm (.000)")',
        "2023-08-14 15:04:00.25 +0000 UTC",
        "",
    ),
    (
        "conditional picks a time",
        'true ? now() : date("2020-01-01")',
        "2024-05-01 12:00:00 +0000 UTC",
        "",
    ),
    ("an int is not a time", "1", "", "expected time.Time, but got int"),
    ("a float is not a time", "1.5", "", "expected time.Time, but got float64"),
    ("a duration is not a time", "now() - now()", "", "expected time.Time, but got time.Duration"),
    ("nil is not a time", "nil", "", "expected time.Time, but got <nil>"),
    ("result is not bound", "result", "", "unknown name result"),
    ("bad date", 'date("yesterday")', "", "invalid date yesterday"),
    (
        "unknown zone",
        'date("2023-08-14", "2006-01-02", "Mars/Base")',
        "",
        "unknown time zone Mars/Base",
    ),
    ("time plus time", "now() + now()", "", "invalid operation: time.Time + time.Time"),
    ("time times int", "now() * 2", "", "invalid operation: time.Time * int"),
    ("empty", "", "", "unexpected token EOF"),
]


@pytest.mark.parametrize(
    ("expression", "shown", "error"), [c[1:] for c in TIMES], ids=[c[0] for c in TIMES]
)
def test_evaluate_time(expression: str, shown: str, error: str) -> None:
    if error:
        with pytest.raises(ExpressionError) as err:
            evaluate_time(expression, now=NOW)
        assert err.value.message.startswith(error)
    else:
        assert str(evaluate_time(expression, now=NOW)) == shown


# Go's time.ParseDuration: (id, text, nanoseconds or the error)
DURATIONS = [
    ("hours", "1h", 3_600_000_000_000),
    ("compound", "1h30m15s", 5_415_000_000_000),
    ("fraction", "1.5s", 1_500_000_000),
    ("leading dot", ".5m", 30_000_000_000),
    ("milliseconds", "250ms", 250_000_000),
    ("micro sign", "3\u00b5s", 3_000),
    ("negative", "-2m", -120_000_000_000),
    ("zero", "0", 0),
    ("invalid", "??", 'time: invalid duration "??"'),
    ("empty", "", 'time: invalid duration ""'),
    ("no unit", "10", 'time: missing unit in duration "10"'),
    ("unknown unit", "3d", 'time: unknown unit "d" in duration "3d"'),
    ("overflow", "9999999999h", 'time: invalid duration "9999999999h"'),
]


@pytest.mark.parametrize(
    ("text", "want"), [c[1:] for c in DURATIONS], ids=[c[0] for c in DURATIONS]
)
def test_parse_duration(text: str, want: int | str) -> None:
    if isinstance(want, str):
        with pytest.raises(TimeError) as err:
            parse_duration(text)
        assert str(err.value) == want
    else:
        assert parse_duration(text) == want


@pytest.mark.parametrize(
    ("nanos", "shown"),
    [
        (3_600_000_000_000, "1h0m0s"),
        (60_000_000_000, "1m0s"),
        (1_500_000_000, "1.5s"),
        (500_000_000, "500ms"),
        (1_500, "1.5\u00b5s"),
        (0, "0s"),
        (-90_000_000_000, "-1m30s"),
    ],
)
def test_duration_string(nanos: int, shown: str) -> None:
    """Go's Duration.String(), as `string(duration(...))` shows it."""
    assert str(GoDuration(nanos)) == shown


CONDITIONS = [
    ("durations compare", 'duration("1h") > duration("30m")', True),
    ("durations equal", 'duration("60m") == duration("1h")', True),
    ("times compare by instant", 'date("2023-08-14T02:00:00+02:00") == date("2023-08-14")', True),
    ("a time is not a number", 'duration("1h") == 3600', False),
]


@pytest.mark.parametrize(
    ("expression", "want"), [c[1:] for c in CONDITIONS], ids=[c[0] for c in CONDITIONS]
)
def test_time_values_in_conditions(expression: str, want: bool) -> None:
    assert evaluate_condition(expression, None) is want


def test_now_needs_the_measurement_time() -> None:
    """A condition has no measurement time to give `now()`: it fails rather than read a clock."""
    with pytest.raises(ExpressionError, match="now\\(\\) is only available"):
        evaluate_condition("now() > now()", None)

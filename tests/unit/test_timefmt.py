"""Durations: one strict parser, Go's time.ParseDuration, with Argo's DurationString over it; the
helpers that read a pause, a CLI flag or a step's duration all agree with it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from rollout_workers.cli.common import ActionError, parse_duration
from rollout_workers.rollout.validation.spec import pause_duration_seconds
from rollout_workers.timefmt import TimeError, duration_seconds, parse_duration_string


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("30", 30, id="bare-integer-is-seconds"),
        pytest.param("30s", 30, id="seconds"),
        pytest.param("1m30s", 90, id="compound"),
        pytest.param("1.5h", 5400, id="fraction"),
        pytest.param("0", 0, id="zero"),
        pytest.param("1500ms", 1, id="truncated-to-whole-seconds"),
        pytest.param("-2m", -120, id="signed"),
    ],
)
def test_a_duration_reads_the_same_everywhere(text: str, seconds: int) -> None:
    assert duration_seconds(text) == seconds
    assert parse_duration_string(text) == pytest.approx(seconds * 1e9, abs=1e9)
    assert pause_duration_seconds(text) == seconds
    if seconds >= 0:
        assert parse_duration(text) == timedelta(seconds=parse_duration_string(text) / 1e9)


@pytest.mark.parametrize("text", ["", "30x", "1h 30m", "s", ".s", "1.5", "abc", " 30s"])
def test_what_go_refuses_everyone_refuses(text: str) -> None:
    with pytest.raises(TimeError):
        parse_duration_string(text)
    assert duration_seconds(text) is None
    assert pause_duration_seconds(text) == -1
    if text.strip() != "30s":
        with pytest.raises(ActionError):
            parse_duration(text)

"""A hostile template cannot hang a worker, exhaust its memory, or read its environment."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from rollout_workers.notifications import gotemplate
from rollout_workers.notifications.gotemplate import Limits, TemplateError, parse


def _fails(text: str, match: str, limits: Limits | None = None) -> None:
    with pytest.raises(TemplateError, match=match):
        parse(text, name="t").render({"s": "x"}, limits)


def test_execution_steps_are_bounded() -> None:
    start = time.monotonic()
    _fails("{{range 100000}}{{range 100000}}{{end}}{{end}}", "maximum of 1000000 execution steps")
    assert time.monotonic() - start < 10
    _fails("{{range 1000}}{{$.s}}{{end}}", "maximum of 500 execution steps", Limits(max_steps=500))


def test_output_is_bounded() -> None:
    _fails("{{range 10000000}}xxxxxxxx{{end}}", "output exceeds the maximum of 1048576 bytes")
    _fails(
        "{{range 20}}0123456789{{end}}",
        "output exceeds the maximum of 100 bytes",
        Limits(max_output=100),
    )
    assert parse("{{range 10}}0123456789{{end}}").render({}, Limits(max_output=100)) == (
        "0123456789" * 10
    )


def test_strings_built_by_functions_are_bounded() -> None:
    doubling = '{{$x := "ab"}}{{range 40}}{{$x = printf "%s%s" $x $x}}{{end}}'
    _fails(doubling, "error calling printf: result exceeds 16777216 bytes")
    _fails('{{replace "" (repeat 100000 "y") (repeat 1000 "x")}}', "result exceeds")
    _fails('{{repeat 100000000 "x"}}', "result exceeds")
    _fails('{{indent 100000000 "a\\nb"}}', "result exceeds")


def test_fmt_widths_are_bounded_as_go_bounds_them() -> None:
    assert parse('{{printf "%*d|" 2000000 1}}').render({}) == "%!(BADWIDTH)1|"
    assert parse('{{printf "%99999999d" 1}}').render({}) == "%!(NOVERB)%!(EXTRA int=1)"


def test_template_recursion_is_bounded() -> None:
    _fails(
        '{{define "R"}}{{template "R" .}}{{end}}{{template "R" .}}',
        r"exceeded maximum template depth \(100\)",
    )


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    for text in ["{{" + "(" * 3000 + "1" + ")" * 3000 + "}}", "{{if 1}}" * 3000 + "{{end}}" * 3000]:
        with pytest.raises(TemplateError):
            parse(text).render({})


def test_cyclic_data_is_an_error_not_a_crash() -> None:
    with pytest.raises(TemplateError):
        parse('{{$d := dict}}{{$_ := set $d "d" $d}}{{$d}}').render({})


def test_the_engine_touches_no_environment_file_or_process() -> None:
    root = Path(gotemplate.__file__).parent
    forbidden = re.compile(
        r"\b(import os|from os|os\.environ|getenv|open\(|subprocess|socket|"
        r"pathlib|importlib|eval\(|exec\()"
    )
    for path in root.glob("*.py"):
        assert not forbidden.search(path.read_text()), path.name


def test_data_that_is_not_json_shaped_is_an_error_not_a_crash() -> None:
    with pytest.raises(TemplateError, match="internal error"):
        parse("{{.}}").render({"m": {1: "a", "b": 2}})

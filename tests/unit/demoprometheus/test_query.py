"""The PromQL subset: what parses to which matchers, what is refused and how."""

from __future__ import annotations

import pytest

from demoprometheus.query import Matcher, Number, QueryError, Selector, parse
from demoprometheus.series import Series

N = "__name__"

PARSES = [
    ("bare name", "demo_success_rate", [(N, "=", "demo_success_rate")]),
    (
        "name and matchers",
        'demo_success_rate{app="a", rollouts_pod_template_hash="abc"}',
        [(N, "=", "demo_success_rate"), ("app", "=", "a"),
         ("rollouts_pod_template_hash", "=", "abc")],
    ),
    ("every operator", "m{a!=\"x\",b=~'y.*',c!~`z`}",
     [(N, "=", "m"), ("a", "!=", "x"), ("b", "=~", "y.*"), ("c", "!~", "z")]),
    ("name as a matcher", '{__name__="m", app="a"}', [(N, "=", "m"), ("app", "=", "a")]),
    ("spaces and a trailing comma", '  m { app = "a" , }  ', [(N, "=", "m"), ("app", "=", "a")]),
    ("empty braces after a name", "m{}", [(N, "=", "m")]),
    ("colons in names", "job:rate5m", [(N, "=", "job:rate5m")]),
    ("escapes", r'm{a="q\"\\\n\x41\u00e9"}', [(N, "=", "m"), ("a", "=", 'q"\\\nAé')]),
    ("raw strings keep backslashes", r"m{a=`\d+`}", [(N, "=", "m"), ("a", "=", r"\d+")]),
    ("names that start like numbers", "info_total", [(N, "=", "info_total")]),
]  # fmt: skip


@pytest.mark.parametrize(("query", "matchers"), [c[1:] for c in PARSES], ids=[c[0] for c in PARSES])
def test_selectors(query: str, matchers: list[tuple[str, str, str]]) -> None:
    assert parse(query) == Selector(tuple(Matcher(*m) for m in matchers))


@pytest.mark.parametrize(
    ("query", "value"), [("0.95", 0.95), (" 1e3 ", 1000.0), ("-2", -2.0), ("+Inf", float("inf"))]
)
def test_numbers(query: str, value: float) -> None:
    assert parse(query) == Number(value)


REFUSED = [
    ("empty", "", "1:1: parse error: no expression found in input"),
    ("function", "rate(m[5m])", '1:1: parse error: function or aggregation "rate"'),
    ("aggregation", 'sum by (app) (m{app="a"})', "1:5: parse error: unexpected 'by'"),
    ("binary operator", "m > 0.5", "1:3: parse error: unexpected '>'"),
    ("range selector", "m[5m]", "1:2: parse error: range selectors are not supported"),
    ("offset", "m offset 5m", "1:3: parse error: unexpected 'offset'"),
    ("no name, empty braces", "{}", "vector selector must contain at least one non-empty matcher"),
    ("only empty-matching matchers", '{a=~".*"}', "at least one non-empty matcher"),
    ("name twice", 'm{__name__="n"}', "1:2: parse error: metric name must not be set twice"),
    ("unterminated string", 'm{a="x}', "1:5: parse error: unterminated quoted string"),
    ("missing operator", 'm{a "x"}', "expected \"=\", \"!=\", \"=~\" or \"!~\""),
    ("unquoted value", "m{a=x}", "1:5: parse error: unexpected 'x' in label matching, expected "
     "string"),
    ("missing comma", 'm{a="x" b="y"}', "expected \",\" or \"}\""),
    ("unclosed braces", 'm{a="x"', "unexpected end of input in label matching"),
    ("bad label name", 'm{1a="x"}', "expected label name"),
    ("bad escape", r'm{a="\q"}', "1:6: parse error: unknown escape sequence '\\q'"),
    ("bad regexp", 'm{a=~"("}', "1:6: parse error: error parsing regexp '('"),
    ("leading garbage", "!m", "1:1: parse error: unexpected character '!'"),
    ("second line", 'm{a="x"}\n  +', "2:3: parse error: unexpected '+'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_refused(query: str, message: str) -> None:
    with pytest.raises(QueryError) as err:
        parse(query)
    assert message in str(err.value)


SERIES = [
    Series.of("m", {"app": "a", "v": "1"}, 1),
    Series.of("m", {"app": "b", "v": "2"}, 2),
    Series.of("m", {"app": "ab"}, 3),
    Series.of("other", {"app": "a"}, 4),
]

SELECTS = [
    ("by name", "m", [1, 2, 3]),
    ("equality", 'm{app="a"}', [1]),
    ("inequality", 'm{app!="a"}', [2, 3]),
    ("regexps are anchored", 'm{app=~"a"}', [1]),
    ("regexp", 'm{app=~"a.*"}', [1, 3]),
    ("negative regexp", 'm{app!~"a.*"}', [2]),
    ("a missing label is empty", 'm{v=""}', [3]),
    ("across names", '{app="a"}', [1, 4]),
    ("name by regexp", '{__name__=~"m|other", app=~"a"}', [1, 4]),
    ("nothing", 'm{app="zzz"}', []),
]


@pytest.mark.parametrize(("query", "values"), [c[1:] for c in SELECTS], ids=[c[0] for c in SELECTS])
def test_select(query: str, values: list[float]) -> None:
    selector = parse(query)
    assert isinstance(selector, Selector)
    assert [s.value for s in selector.select(SERIES)] == values

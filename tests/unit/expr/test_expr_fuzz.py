"""Fuzzing the condition evaluator: only ExpressionError escapes, budgets hold, no Python reach."""

from __future__ import annotations

import math
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollout_workers.expr.expression import evaluate_condition, parse
from rollout_workers.expr.values import ExpressionError, Limits, Value

FUZZ = settings(
    max_examples=300,
    deadline=None,  # the budget tests below bound time; per-example deadlines are flaky on CI
    suppress_health_check=[HealthCheck.too_slow],
)
SMALL = Limits(max_steps=5_000, max_allocation=50_000, max_collection_length=2_000)

# --- random JSON results -----------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "items", "code", "ok", "__class__", "__dict__", "0"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=6)
        | st.dictionaries(_KEYS | st.text(max_size=4), inner, max_size=6)
    ),
    max_leaves=25,
)

# --- grammar-generated expressions -------------------------------------------------------------

_BINARY = [
    "+", "-", "*", "/", "%", "**", "^", "==", "!=", "<", "<=", ">", ">=", "&&", "||",
    "and", "or", "in", "not in", "contains", "startsWith", "endsWith", "matches", "..", "??",
]  # fmt: skip
_UNARY = ["-", "+", "!", "not "]
_FUNCTIONS_1 = [
    "len", "abs", "int", "float", "string", "max", "min", "sum", "mean", "isNaN", "isInf",
    "isNil", "asInt", "asFloat", "keys", "values", "first", "last", "lower", "upper", "trim",
    "type", "round", "floor", "ceil",
]  # fmt: skip
_PREDICATES = ["all", "any", "none", "one", "filter", "map", "count", "find", "findIndex"]
_LEAVES = st.sampled_from(
    [
        "result", "result.a", "result[0]", "result?.b", "result['items']", "result[-1]",
        "0", "1", "2.5", "1e3", "-1", "0x10", "'a'", '"b"', "''", "true", "false", "nil",
        "[]", "[1, 2, 3]", "{a: 1}", "'^a+$'", "'(x+)+y'",
    ]
)  # fmt: skip
_POINTER_LEAVES = st.sampled_from(["#", "#.a", ".a", "#index", "# > 1", ".ok"])


def _combine(
    inner: st.SearchStrategy[str],
    leaves: st.SearchStrategy[str],
    predicate_body: st.SearchStrategy[str],
) -> st.SearchStrategy[str]:
    return st.one_of(
        leaves,
        st.tuples(inner, st.sampled_from(_BINARY), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(st.sampled_from(_UNARY), inner).map(lambda t: f"{t[0]}{t[1]}"),
        inner.map(lambda e: f"({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(st.sampled_from(_FUNCTIONS_1), inner).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"default({t[0]}, {t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]})[{t[1]}]"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]})[{t[1]}:]"),
        st.tuples(inner, st.sampled_from(["a", "b", "__class__"])).map(
            lambda t: f"({t[0]})?.{t[1]}"
        ),
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(st.sampled_from(_PREDICATES), inner, predicate_body).map(
            lambda t: f"{t[0]}({t[1]}, {{{t[2]}}})"
        ),
    )


# Built once, bottom-up: predicate bodies (which may use `#`) nest two levels deep.
_IN_PREDICATE_LEAVES = _LEAVES | _POINTER_LEAVES
_INNER_BODY = st.recursive(
    _IN_PREDICATE_LEAVES,
    lambda inner: _combine(inner, _IN_PREDICATE_LEAVES, _IN_PREDICATE_LEAVES),
    max_leaves=4,
)
_BODY = st.recursive(
    _IN_PREDICATE_LEAVES,
    lambda inner: _combine(inner, _IN_PREDICATE_LEAVES, _INNER_BODY),
    max_leaves=6,
)
EXPRESSIONS = st.recursive(_LEAVES, lambda inner: _combine(inner, _LEAVES, _BODY), max_leaves=10)
TOKEN_SOUP = st.lists(
    st.sampled_from(
        [
            "result", "#", ".", "?.", "[", "]", "(", ")", "{", "}", ",", ":", "?", "??", "..",
            "+", "-", "*", "**", "/", "%", "!", "not", "in", "&&", "||", "==", "<", "matches",
            "'s'", "'\\u00e9'", "1", "2.5", "1e", "0x", "len", "all", "map", "nil", "true",
            "a", "|", "'", "`", "/*", "//", "\n", " ", "\\", "#index", "let", ";", "=",
        ]
    ),
    max_size=25,
).map("".join)  # fmt: skip


def _outcome(expression: str, result: Value, limits: Limits) -> tuple[str, object]:
    """The value, or the error message: anything else escaping fails the test."""
    try:
        return "ok", parse(expression, limits=limits).evaluate({"result": result})
    except ExpressionError as exc:
        return "error", exc.message


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@FUZZ
@given(st.text(max_size=60), JSON_VALUES)
def test_random_text_raises_only_expression_error(expression: str, result: Value) -> None:
    _outcome(expression, result, SMALL)


@FUZZ
@given(TOKEN_SOUP, JSON_VALUES)
def test_token_soup_raises_only_expression_error(expression: str, result: Value) -> None:
    _outcome(expression, result, SMALL)


@FUZZ
@given(EXPRESSIONS, JSON_VALUES)
def test_grammar_expressions_raise_only_expression_error(expression: str, result: Value) -> None:
    status, value = _outcome(expression, result, SMALL)
    if status == "ok":
        # Deterministic, and within budget: the same answer with the default, larger budget.
        assert _same(_outcome(expression, result, Limits())[1], value)
        # evaluate_condition either agrees (bool) or reports the non-bool outcome.
        try:
            assert evaluate_condition(expression, result, limits=SMALL) is value
        except ExpressionError as exc:
            assert not isinstance(value, bool)
            assert "expected bool" in exc.message


@FUZZ
@given(EXPRESSIONS)
def test_grammar_expressions_are_valid_often_enough(expression: str) -> None:
    # Guards the generator itself: most generated strings must parse, else the test above
    # would silently fuzz only the error path.
    try:
        parse(expression)
    except ExpressionError as exc:
        assert "nested deeper" in exc.message or "pointer" in exc.message or "mixed" in exc.message


@FUZZ
@given(
    st.sampled_from(
        [
            "result.__class__", "result['__class__']", "result.__dict__", "result.keys",
            "result.__class__.__bases__", "'x'.__len__", "result[0].__class__",
            "map(result, #.__class__)", "result?.__globals__?.os", "result.get",
        ]
    ),
    JSON_VALUES,
)  # fmt: skip
def test_no_python_object_is_reachable(expression: str, result: Value) -> None:
    status, value = _outcome(expression, result, SMALL)
    if status == "ok":
        # Whatever came back is plain data that was in `result` (or nil), never a Python object.
        assert _is_plain(value)


def _is_plain(value: object) -> bool:
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return type(value) is list and all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return type(value) is dict and all(
            isinstance(k, str) and _is_plain(v) for k, v in value.items()
        )
    return False


@pytest.mark.parametrize(
    "expression",
    [
        "all(result, {all(result, {all(result, {# >= 0})})})",
        "count(result, {any(result, {# < 0})}) > 0",
        "len(filter(result, {none(result, {# == -1})})) >= 0",
        "all(result, {string(result) != ''})",
        "none(result, {string(result) matches '(a|aa)*c'})",
        "reduce(result, #acc + #, 0) >= 0 && all(result, {# in result})",
    ],
)
def test_heavy_expressions_hit_the_step_limit_quickly(expression: str) -> None:
    big = list(range(5_000))
    started = time.perf_counter()
    with pytest.raises(ExpressionError, match=r"exceeded \d+ steps|allocated more|larger than"):
        evaluate_condition(expression, big)
    assert time.perf_counter() - started < 3.0


@FUZZ
@given(st.integers(min_value=1, max_value=400), st.integers(min_value=0, max_value=3))
def test_step_budget_is_exact_and_monotonic(size: int, nesting: int) -> None:
    expression = "all(result, {# >= 0})"
    for _ in range(nesting):
        expression = f"all(result, {{{expression.replace('result', '[#]')}}})"
    tight = Limits(max_steps=500)
    status, _ = _outcome(expression, list(range(size)), tight)
    roomy_status, roomy = _outcome(expression, list(range(size)), Limits())
    assert roomy_status == "ok" and roomy is True
    if status == "ok":
        return
    # Failing under the tight budget must be the budget, not anything else.
    with pytest.raises(ExpressionError, match="exceeded 500 steps"):
        evaluate_condition(expression, list(range(size)), limits=tight)


# --- the `matches` engine agrees with a reference on tiny inputs ---------------------------------

_REGEX_ATOMS = st.sampled_from(
    ["a", "b", ".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "\\s", "1", "\\.", "(?:a|b)", ""]
)


def _regex(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}|{t[1]}"),
        inner.map(lambda r: f"({r})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}", "{0,}", "*?"])).map(
            lambda t: f"({t[0]}){t[1]}"
        ),
    )


REGEXES = st.tuples(
    st.sampled_from(["", "^"]),
    st.recursive(_REGEX_ATOMS, _regex, max_leaves=8),
    st.sampled_from(["", "\\z", "\\b"]),
).map("".join)


@FUZZ
@given(REGEXES, st.text(alphabet="ab1. _x", max_size=10))
def test_matches_agrees_with_reference_engine(pattern: str, subject: str) -> None:
    # Same semantics on this subset (no `$`, no newlines, ASCII classes, no backreferences);
    # `\z` is RE2's end of text, Python's `\Z`. Inputs are tiny, so `re` cannot blow up here.
    expected = re.search(pattern.replace("\\z", "\\Z"), subject, re.ASCII) is not None
    literal = pattern.replace("\\", "\\\\").replace("'", "\\'")
    assert parse(f"result matches '{literal}'").evaluate({"result": subject}) is expected

"""Named cases for the sandboxed expr-lang evaluator (Argo's documented conditions + semantics)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import pytest

from rollout_workers.expr import evaluator, nodes
from rollout_workers.expr.expression import check, evaluate_condition, parse
from rollout_workers.expr.values import DEFAULT_LIMITS, ExpressionError, Limits, Value


@dataclass(frozen=True)
class Err:
    """The case must raise ExpressionError whose message contains `fragment`."""

    fragment: str


NAN = float("nan")

# (name, expression, result, expected value or Err)
CASES: list[tuple[str, str, object, object]] = [
    # --- Argo's documented conditions (docs/features/analysis.md, provider docs) ---
    ("argo_index_threshold", "result[0] >= 0.95", [0.97], True),
    ("argo_index_threshold_fails", "result[0] >= 0.95", [0.5], False),
    ("argo_bool_result", "result == true", True, True),
    ("argo_len_items", "len(result.items) > 0", {"items": [1]}, True),
    ("argo_len_items_empty", "len(result.items) > 0", {"items": []}, False),
    ("argo_all_closure", "all(result, {# > 0.9})", [0.95, 0.99], True),
    ("argo_all_closure_one_low", "all(result, {# > 0.9})", [0.95, 0.5], False),
    (
        "argo_web_json",
        "result.code == 200 && result.body.ok",
        {"code": 200, "body": {"ok": True}},
        True,
    ),
    ("argo_isnan_short_circuit", "isNaN(result) || result < 5", NAN, True),
    ("argo_isnan_number", "isNaN(result) || result < 5", 7.0, False),
    ("argo_default_nil", "default(result, 0) >= 1", None, False),
    ("argo_default_value", "default(result, 0) >= 1", 3, True),
    ("argo_asfloat_string", "asFloat(result) > 0.5", "0.75", True),
    ("argo_asint_string", "asInt(result) == 42", "42", True),
    ("argo_asint_truncates_float", "asInt(result) == 4", 4.9, True),
    ("argo_isinf", "isInf(result)", float("-inf"), True),
    ("argo_isnil", "isNil(result)", None, True),
    ("argo_prometheus_vector", "result[0] < 0.1 and len(result) == 1", [0.05], True),
    # --- literals ---
    ("int_literal", "42", None, 42),
    ("float_exponent", "1.5e3", None, 1500.0),
    ("float_leading_dot", ".5", None, 0.5),
    ("hex_binary_octal", "0x1F + 0b11 + 0o7", None, 41),
    ("underscore_digits", "1_000_000", None, 1000000),
    ("single_quoted_escapes", r"'a\tb\n'", None, "a\tb\n"),
    ("double_quoted_unicode", r'"\u00e9\x41"', None, "éA"),
    ("backtick_raw", r"`a\n`", None, "a\\n"),
    ("array_literal", "[1, 'a', nil, true,]", None, [1, "a", None, True]),
    ("map_literal_keys", "{a: 1, 'b c': 2, 3: 4}", None, {"a": 1, "b c": 2, "3": 4}),
    ("map_literal_expr_key", "{('k' + 'e'): 1}", None, {"ke": 1}),
    ("comments", "1 /* c */ + // rest\n 2", None, 3),
    # --- precedence and associativity (expr-lang operator table) ---
    ("mul_before_add", "1 + 2 * 3", None, 7),
    ("parens", "(1 + 2) * 3", None, 9),
    ("unary_minus_below_pow", "-2 ** 2", None, -4.0),
    ("pow_right_assoc", "2 ** 3 ** 2", None, 512.0),
    ("caret_is_pow", "2 ^ 10", None, 1024.0),
    ("and_before_or", "true || false && false", None, True),
    ("not_binds_tighter_than_and", "!false && false", None, False),
    ("word_operators", "not false and (true or false)", None, True),
    ("chained_comparison", "1 < result < 3", 2, True),
    ("chained_comparison_false", "1 < result < 3", 3, False),
    ("range_below_add", "1..1 + 2", None, [1, 2, 3]),
    ("ternary_lowest", "result > 1 ? 'big' : 'small'", 2, "big"),
    ("ternary_nested", "false ? 1 : true ? 2 : 3", None, 2),
    ("elvis", "true ?: false", None, True),
    ("coalesce_binds_tightest", "1 + nil ?? 2", None, 3),
    # --- arithmetic semantics ---
    ("int_plus_int_is_int", "1 + 2", None, 3),
    ("int_plus_float", "1 + 0.5", None, 1.5),
    ("division_is_float", "7 / 2", None, 3.5),
    ("division_by_zero_is_inf", "1 / 0", None, math.inf),
    ("modulo_truncates", "-7 % 3", None, -1),
    ("modulo_divisor_sign", "7 % -3", None, 1),
    ("int64_wraps", "9223372036854775807 + 1", None, -9223372036854775808),
    ("string_concat", "'ab' + 'cd'", None, "abcd"),
    ("int_equals_float", "1 == 1.0", None, True),
    ("nan_not_equal", "result == result", NAN, False),
    ("different_types_not_equal", "'1' == 1", None, False),
    ("nil_equals_nil", "result == nil", None, True),
    ("deep_equal_lists", "[1, [2.0, 'x']] == [1.0, [2, 'x']]", None, True),
    ("deep_equal_maps", "{a: [1]} == {a: [1.0]}", None, True),
    ("string_ordering", "'abc' < 'abd'", None, True),
    ("int_float_ordering", "2 > 1.5", None, True),
    # --- member access, index, slices ---
    ("member_missing_key_is_nil", "result.missing == nil", {}, True),
    ("index_map_with_string", "result['a-b']", {"a-b": 5}, 5),
    ("negative_index", "result[-1]", [1, 2, 3], 3),
    ("float_index_truncates", "result[1.7]", [1, 2, 3], 2),
    ("string_index", "'abc'[1]", None, "b"),
    ("slice_middle", "result[1:3]", [0, 1, 2, 3], [1, 2]),
    ("slice_negative", "result[1:-1]", [1, 2, 3, 4, 5], [2, 3, 4]),
    ("slice_open_ends", "result[:2] + result[3:]", "abcde", "abde"),
    ("slice_clamps", "result[-10:10]", [1, 2], [1, 2]),
    ("slice_full", "result[:]", [1, 2], [1, 2]),
    ("optional_chain_nil", "result?.a.b", None, None),
    ("optional_chain_value", "result?.a.b", {"a": {"b": 1}}, 1),
    ("optional_index", "result?.[0]", None, None),
    ("coalesce_nil_chain", "result?.a ?? 'dflt'", None, "dflt"),
    ("coalesce_keeps_false", "result.flag ?? true", {"flag": False}, False),
    # --- membership and string operators ---
    ("in_array", "2 in [1, 2, 3]", None, True),
    ("in_array_numeric", "2.0 in [1, 2]", None, True),
    ("in_map_keys", "'a' in result", {"a": 1}, True),
    ("not_in", "'x' not in ['a', 'b']", None, True),
    ("in_nil_is_false", "1 in nil", None, False),
    ("contains", "result contains 'ell'", "hello", True),
    ("not_contains", "result not contains 'z'", "hello", True),
    ("starts_ends", "result startsWith 'he' && result endsWith 'lo'", "hello", True),
    ("matches_anchored", "result matches '^v[0-9]+\\\\.[0-9]+$'", "v1.25", True),
    ("matches_unanchored_search", "result matches 'err(or)?'", "an error!", True),
    ("matches_class_and_repeat", "result matches '^[a-f0-9]{4}-\\\\d+$'", "beef-12", True),
    ("matches_case_flag", "result matches '(?i)^OK$'", "ok", True),
    ("matches_dollar_is_end_of_text", "result matches 'a$'", "a\n", False),
    # --- Go's RE2 (regexp/syntax), not Python's re ---
    ("matches_re2_case_flag_mid_pattern", "result matches 'x(?i)OK'", "xok", True),
    ("matches_re2_scoped_flag", "result matches '(?i:a)B'", "aB", True),
    ("matches_re2_scoped_flag_ends", "result matches '(?i:a)B'", "ab", False),
    ("matches_re2_digit_is_ascii", "result matches '^\\\\d$'", "\u0663", False),
    ("matches_re2_posix_class", "result matches '^[[:alpha:]]+$'", "Rollout", True),
    ("matches_re2_posix_class_negated", "result matches '[[:^digit:]]'", "123", False),
    ("matches_re2_posix_class_is_ascii", "result matches '^[[:alpha:]]$'", "é", False),
    ("matches_re2_case_folding_is_unicode", "result matches '(?i)^k$'", "\u212a", True),
    ("matches_re2_unicode_letter", "result matches '^\\\\pL+$'", "héllo", True),
    ("matches_re2_unicode_script", "result matches '\\\\p{Greek}'", "λ", True),
    ("matches_re2_unicode_not_number", "result matches '^\\\\PN+$'", "abc1", False),
    ("matches_re2_caret_is_start_of_text", "result matches '^b'", "a\nb", False),
    ("matches_re2_multiline_flag", "result matches '(?m)^b$'", "a\nb\nc", True),
    ("matches_re2_dot_not_newline", "result matches 'a.b'", "a\nb", False),
    ("matches_re2_dot_all_flag", "result matches '(?s)a.b'", "a\nb", True),
    ("matches_re2_end_of_text_z", "result matches 'a\\\\z'", "a", True),
    ("matches_re2_named_group", "result matches '(?P<major>\\\\d+)\\\\.'", "v1.2", True),
    ("matches_re2_quoted_literal", "result matches '\\\\Qa.b\\\\E'", "axb", False),
    ("matches_re2_lone_surrogate_as_fffd", "result matches '^.$'", "\ud800", True),
    ("not_matches", "result not matches 'x'", "abc", True),
    # --- builtins and closures ---
    ("len_string_map", "len('héllo') + len({a: 1})", None, 6),
    ("any_closure", "any(result, # > 2)", [1, 2, 3], True),
    ("none_closure", "none(result, # > 5)", [1, 2, 3], True),
    ("one_closure", "one(result, # == 2)", [1, 2, 3], True),
    ("all_empty_is_true", "all(result, # > 0)", [], True),
    ("any_empty_is_false", "any(result, # > 0)", [], False),
    ("filter_field_shorthand", "filter(result, .x > 1)", [{"x": 1}, {"x": 2}], [{"x": 2}]),
    ("map_pointer_field", "map(result, #.name)", [{"name": "a"}, {"name": "b"}], ["a", "b"]),
    ("count_predicate", "count(result, # >= 0.5)", [0.1, 0.5, 0.9], 2),
    ("sum_array", "sum([1, 2, 3])", None, 6),
    ("sum_predicate", "sum(result, .v)", [{"v": 1}, {"v": 2.5}], 3.5),
    ("nested_closures", "all(result, {any(#, # > 1)})", [[0, 2], [3]], True),
    ("pointer_index", "map(result, #index)", ["a", "b"], [0, 1]),
    ("reduce_acc", "reduce(1..4, #acc + #)", None, 10),
    ("reduce_initial", "reduce(result, #acc + #, 10)", [1, 2], 13),
    ("find_and_index", "find(result, # > 1) + findIndex(result, # > 1)", [1, 5, 7], 6),
    ("pipe", "result | filter(# > 1) | len()", [1, 2, 3], 2),
    ("range_builtin", "map(1..3, # * 2)", None, [2, 4, 6]),
    ("abs_int_float", "abs(-3) + abs(-0.5)", None, 3.5),
    ("int_of_string_and_float", "int('12') + int(2.9)", None, 14),
    ("float_of_string", "float('1e-3')", None, 0.001),
    (
        "string_of_values",
        "string([1, 2.5, nil, true, {b: 'x'}])",
        None,
        "[1 2.5 <nil> true map[b:x]]",
    ),
    ("string_of_large_float_go_style", "string(1234567.0)", None, "1.234567e+06"),
    ("max_min_variadic_and_arrays", "max(1, [5, 2.5]) - min([4, 3], 7)", None, 2),
    ("mean", "mean([1, 2, 3, 4])", None, 2.5),
    ("round_half_away_from_zero", "round(-2.5) + round(0.5)", None, -2.0),
    ("first_last", "first(result) + last(result)", [1, 2, 3], 4),
    ("keys_values", "keys(result)[0] + values(result)[0]", {"a": "b"}, "ab"),
    ("err_no_array_concat", "[1] + [2]", None, Err("invalid operation: array + array")),
    ("lower_upper_trim", "upper(trim('  ok ')) + lower('X')", None, "OKx"),
    (
        "type_names",
        "map([1, 1.0, 'a', nil, [], {}], type(#))",
        None,
        ["int", "float", "string", "nil", "array", "map"],
    ),
    ("get_out_of_range_is_nil", "get(result, 5) ?? 'none'", [1], "none"),
    # --- short-circuit proofs: the right side would raise if evaluated ---
    ("and_short_circuit", "false && result.missing.deep > 1", {}, False),
    ("or_short_circuit", "true || 1 / 'x'", None, True),
    ("ternary_skips_other_branch", "true ? 1 : 'a' > 1", None, 1),
    ("coalesce_skips_right", "1 ?? ('a' > 1)", None, 1),
    ("all_stops_at_first_false", "all(result, # > 1 && 'x' > 1 || false)", [0, "s"], False),
    # --- errors (type mismatch is an error, not False) ---
    ("err_string_vs_number", "result > 5", "7", Err("invalid operation: string > int")),
    ("err_nil_ordering", "result < 1", None, Err("invalid operation: nil < int")),
    ("err_add_mismatch", "'a' + 1", None, Err("invalid operation: string + int")),
    ("err_modulo_float", "5.5 % 2", None, Err("invalid operation: float % int")),
    ("err_modulo_zero", "5 % 0", None, Err("integer divide by zero")),
    ("err_not_on_number", "!1", None, Err("invalid operation: ! int")),
    ("err_and_non_bool", "1 && true", None, Err("bool expected")),
    ("err_ternary_non_bool", "1 ? 2 : 3", None, Err("non-bool expression")),
    ("err_member_of_nil", "result.a", None, Err("cannot fetch a from nil")),
    ("err_member_of_number", "result.a", 5, Err("cannot fetch a from int")),
    ("err_index_out_of_range", "result[3]", [1], Err("index out of range: 3 (array length is 1)")),
    ("err_field_of_array", "result.x", [1], Err("cannot fetch x from array")),
    ("err_in_on_number", "1 in 5", None, Err('operator "in" not defined on int')),
    ("err_len_of_number", "len(1)", None, Err("invalid argument for len (type int)")),
    ("err_iterate_map", "all(result, # > 0)", {"a": 1}, Err("cannot iterate over map")),
    ("err_predicate_not_bool", "all(result, #)", [1], Err("returned int, not bool")),
    ("err_contains_non_string", "result contains 1", "abc", Err("invalid operation")),
    ("err_asint_garbage", "asInt(result) > 0", "12abc", Err("invalid syntax for an integer")),
    ("err_asfloat_bool", "asFloat(result) > 0", True, Err("invalid argument for asFloat")),
    ("err_isnan_string", "isNaN(result)", "NaN", Err("invalid argument for isNaN")),
    ("err_unknown_variable", "foo > 1", None, Err("unknown name foo")),
    ("err_non_bool_outcome", "result", 5, Err("expected bool, but got int")),
    ("err_nil_outcome", "result.missing", {}, Err("expected bool, but got nil")),
    (
        "err_regex_backreference",
        "result matches '(a)\\\\1'",
        "aa",
        Err("invalid regular expression: invalid escape sequence: \\1 (RE2 has no backreferences)"),
    ),
    ("err_regex_lookahead", "result matches '(?=a)'", "a", Err("RE2 has no lookaround")),
    ("err_regex_lookbehind", "result matches '(?<!a)b'", "b", Err("RE2 has no lookaround")),
    ("err_regex_python_end_z", "result matches 'a\\\\Z'", "a", Err("invalid escape sequence")),
    ("err_regex_any_byte", "result matches '\\\\C'", "a", Err("invalid escape sequence: \\C")),
    (
        "err_regex_repeat_over_1000",
        "result matches 'a{1001}'",
        "a",
        Err("invalid repetition size: {1001}"),
    ),
    # --- parse errors name the position like expr-lang's file.Error ---
    ("parse_unexpected_eof", "result >", 1, Err("unexpected token EOF (1:9)")),
    ("parse_unexpected_operator", "1 +* 2", None, Err('unexpected token Operator("*") (1:4)')),
    ("parse_unclosed_paren", "(1 + 2", None, Err("unexpected token EOF (1:7)")),
    ("parse_unterminated_string", "'abc", None, Err("literal not terminated (1:1)")),
    ("parse_coalesce_mixing", "result ?? 0 > 1", None, Err("cannot be mixed")),
    ("parse_pointer_outside_predicate", "# > 1", None, Err("cannot use pointer accessor")),
    ("parse_unknown_function", "eval('1')", None, Err("unknown name eval")),
    ("parse_method_call", "result.__len__()", None, Err("unknown method __len__")),
    ("parse_bad_number", "12abc", None, Err("bad number syntax")),
    ("parse_int_too_large", "9223372036854775808", None, Err("integer literal is too large")),
    ("parse_bad_escape", r"'\q'", None, Err("invalid char escape")),
    ("parse_bad_character", "1 @ 2", None, Err("unrecognized character: U+0040")),
    ("parse_arity", "len(1, 2)", None, Err("too many arguments to call len")),
    ("parse_predicate_arity", "all(result)", None, Err("not enough arguments to call all")),
    ("parse_second_line_position", "true &&\n  )", None, Err("(2:3)")),
]


def _run(expression: str, result: object) -> Value:
    return parse(expression).evaluate({"result": result})


def _same(actual: object, expected: object) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    return type(actual) is type(expected) and actual == expected


@pytest.mark.parametrize(
    ("expression", "result", "expected"),
    [pytest.param(e, r, x, id=name) for name, e, r, x in CASES],
)
def test_case(expression: str, result: object, expected: object) -> None:
    if isinstance(expected, Err):
        with pytest.raises(ExpressionError) as caught:
            evaluate_condition(expression, result)
        assert expected.fragment in str(caught.value)
    else:
        actual = _run(expression, result)
        assert _same(actual, expected), f"{expression!r} -> {actual!r}, want {expected!r}"


def test_case_table_is_large_and_unique() -> None:
    names = [name for name, *_ in CASES]
    assert len(names) == len(set(names))
    assert len(names) >= 60


def test_evaluate_condition_returns_bool_for_documented_examples() -> None:
    assert evaluate_condition("result[0] >= 0.95", [0.99]) is True
    assert evaluate_condition("result == true", False) is False


def test_parse_once_evaluate_many() -> None:
    expression = parse("result.code == 200 && result.latency < limit")
    assert expression.evaluate({"result": {"code": 200, "latency": 5}, "limit": 10}) is True
    assert expression.evaluate({"result": {"code": 500, "latency": 5}, "limit": 10}) is False
    with pytest.raises(ExpressionError, match="unknown name limit"):
        expression.evaluate_condition({"code": 200, "latency": 5})


def test_check_validates_syntax_and_names() -> None:
    check("len(result.items) > 0 && all(result.items, .ok)")
    with pytest.raises(ExpressionError, match="unknown name other"):
        check("result > other")
    check("result > other", variables=frozenset({"result", "other"}))
    with pytest.raises(ExpressionError, match="unexpected token"):
        check("result >")


def test_error_message_has_expr_lang_layout() -> None:
    with pytest.raises(ExpressionError) as caught:
        parse("result >= )")
    assert (
        str(caught.value) == 'unexpected token Bracket(")") (1:11)\n | result >= )\n | ..........^'
    )
    assert caught.value.position == 10


def test_evaluation_errors_point_at_the_operator() -> None:
    with pytest.raises(ExpressionError) as caught:
        evaluate_condition("result.a > 'x'", {"a": 1})
    assert caught.value.position == 9


# --- sandbox: only JSON-like values, only dict keys ---------------------------------------------


@pytest.mark.parametrize(
    ("expression", "result", "expected"),
    [
        pytest.param("result.__class__", {}, None, id="dunder_key_missing_is_nil"),
        pytest.param("result['__class__']", {}, None, id="dunder_index_missing_is_nil"),
        pytest.param("result.__class__", {"__class__": 1}, 1, id="dunder_is_just_a_key"),
        pytest.param("result.keys", {"a": 1}, None, id="dict_methods_not_reachable"),
        pytest.param("result?.__dict__?.x", {}, None, id="optional_dunder_chain"),
    ],
)
def test_member_access_reads_only_dict_keys(
    expression: str, result: object, expected: object
) -> None:
    assert _run(expression, result) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "'x'.__len__",
        "result.__class__",
        "result.__class__.__mro__",
        "[].__class__",
        "(1).real",
        "'x'['__len__']",
        "result.__globals__",
    ],
)
def test_attribute_probes_on_non_maps_fail_cleanly(expression: str) -> None:
    with pytest.raises(ExpressionError, match="cannot fetch"):
        _run(expression, [1])


class _Sneaky(dict[str, object]):
    def get(self, key: object, default: object = None) -> object:
        raise AssertionError("overridden method must not be called")

    def __getitem__(self, key: str) -> object:
        raise AssertionError("overridden method must not be called")


def test_result_is_copied_into_plain_values() -> None:
    sneaky = _Sneaky(a=(1, 2))
    assert _run("result.a", sneaky) == [1, 2]
    assert _run("type(result)", sneaky) == "map"
    assert _run("result", 2**70) == float(2**70)


@pytest.mark.parametrize(
    "result",
    [object(), {1: "a"}, {"a": {1, 2}}, b"bytes", [lambda: 1]],
    ids=["object", "int_key", "set", "bytes", "function"],
)
def test_unsupported_result_values_are_rejected(result: object) -> None:
    with pytest.raises(ExpressionError):
        evaluate_condition("true", result)


def test_cyclic_result_is_rejected() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    with pytest.raises(ExpressionError, match="nested deeper"):
        evaluate_condition("true", cyclic)


# --- limits -------------------------------------------------------------------------------------


def test_limit_expression_length() -> None:
    with pytest.raises(ExpressionError, match="longer than 4096"):
        parse("1" + " " * DEFAULT_LIMITS.max_expression_length)


def test_limit_nodes() -> None:
    with pytest.raises(ExpressionError, match="more than 20 nodes"):
        parse("[" + ",".join(["1"] * 30) + "]", limits=Limits(max_nodes=20))


@pytest.mark.parametrize(
    "expression",
    ["(" * 60 + "1" + ")" * 60, "-" * 60 + "1", "1" + " + 1" * 60, "2" + " ** 2" * 60],
    ids=["parens", "unary", "left_assoc", "right_assoc"],
)
def test_limit_depth(expression: str) -> None:
    with pytest.raises(ExpressionError, match="nested deeper than 50"):
        parse(expression)


def test_limit_steps_nested_all_over_big_list_fails_fast() -> None:
    big = list(range(2_000))
    started = time.perf_counter()
    with pytest.raises(ExpressionError, match="exceeded 100000 steps"):
        evaluate_condition("all(result, {all(result, {# >= 0})})", big)
    assert time.perf_counter() - started < 5.0


def test_limit_string_growth() -> None:
    expression = "len(reduce(1..40, #acc + #acc, 'ab')) > 0"  # doubles past the cap
    with pytest.raises(ExpressionError, match="string longer than 65536"):
        evaluate_condition(expression, None)


def test_limit_range_size() -> None:
    with pytest.raises(ExpressionError, match="collection larger than 10000"):
        evaluate_condition("len(1..100000) > 0", None)


def test_limit_total_allocation() -> None:
    limits = Limits(max_allocation=5_000)
    with pytest.raises(ExpressionError, match="allocated more than 5000"):
        evaluate_condition("all(1..100, {len(map(1..100, #)) > 0})", None, limits=limits)


def test_limit_regex_pattern_size_and_states() -> None:
    with pytest.raises(ExpressionError, match="invalid repetition size"):
        evaluate_condition("result matches '(a{1000}){1000}'", "a")  # RE2 caps nesting too
    with pytest.raises(ExpressionError, match=r"too many states \(6004 > 5000\)"):
        evaluate_condition(
            "result matches '\\\\w{1000}\\\\w{1000}'", "a", limits=Limits(max_regex_states=5000)
        )
    with pytest.raises(ExpressionError, match="longer than 512"):
        evaluate_condition("result matches ('a' + '" + "b" * 600 + "')", "a")


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a|aa)*c", "a*a*a*a*a*a*c", "(x+x+)+y", "^(\\\\w+\\\\s?)*$"],
)
def test_catastrophic_regexes_are_linear(pattern: str) -> None:
    subject = "a" * 5_000 + "!"
    started = time.perf_counter()
    try:
        evaluate_condition(f"result matches '{pattern}'", subject)
    except ExpressionError as exc:  # a budget stop is fine; hanging is not
        assert "steps" in str(exc)
    assert time.perf_counter() - started < 5.0


def test_limits_reject_non_positive_values() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        Limits(max_steps=0)


def test_every_node_class_has_a_visitor() -> None:
    """The evaluator finds a node's visitor by its exact class: a class left out would fail at
    evaluation, not at import."""
    classes = {
        cls
        for cls in vars(nodes).values()
        if isinstance(cls, type) and issubclass(cls, nodes.Node) and cls is not nodes.Node
    }
    assert classes == set(evaluator._VISIT)

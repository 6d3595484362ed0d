"""Sandboxed evaluator for AnalysisTemplate metric conditions (expr-lang).

Why this exists: Argo Rollouts' `successCondition` / `failureCondition` strings are written by
tenants in the expr-lang language (github.com/expr-lang/expr, formerly antonmedv/expr) and are
evaluated over the measured value bound to `result`. Those strings must never reach Python's
`eval`, must not be able to reach any Python object, and must not be able to pin a worker or
exhaust its memory. This module is a small, self-contained implementation of the part of
expr-lang that metric conditions use:

* a tokenizer and a precedence-climbing parser that mirror expr-lang's own (same operator table,
  same associativity, chained comparisons, `??` mixing rule, predicates with `#` and `.field`),
  producing a small AST;
* a tree-walking evaluator over plain JSON-like values only: None, bool, int, float, str, list
  and dict with str keys. Anything else in `result` is converted (tuples, subclasses) or rejected
  before evaluation starts. Member access reads dict keys and list items, never attributes, so
  `result.__class__` is simply a missing key (nil) and `'x'.__len__` is an error;
* hard limits (`Limits`): source length, AST size and depth, an evaluation step budget (every
  node visit and every element a builtin touches costs a step, so time is bounded
  deterministically rather than by a wall clock), the size of every produced string and
  collection, and a total allocation budget per evaluation;
* `matches` runs on RE2 (`expr_regex`), as in Go, linear in the subject; never on backtracking `re`.

Argo (utils/evaluate/evaluate.go) binds `result` and the helpers `asInt`, `asFloat`, `isNaN`,
`isInf`, `isNil` and `default`, and treats a non-bool outcome as an error
("expected bool, but got ..."); `evaluate_condition` does the same.

Integers are Go's 64-bit ints (arithmetic wraps), `/` and `**` always produce floats, `%` is
integer-only and truncates toward zero, and comparing values of different kinds with `<` and
friends is an error while `==` between them is false, as in expr-lang's runtime.

Deliberate deviations from expr-lang: strings are indexed, sliced and measured in code points
(Go: bytes) and `s[i]` is a one-character string (Go: a byte value); `==` on maps is numeric-aware
like it is on arrays; the right operand of `&&`/`||` must be a bool too; map keys are strings;
`nil in map` is false; `default(x, d)` and `isNil(x)` test their argument (Argo's test `result`
whatever the argument, the same thing for the documented `default(result, d)`); `isNaN`/`isInf`
accept ints. Not supported (rejected at parse time as unknown names or unexpected tokens): `let`,
`$env`, `if/else`, method calls, and the builtins not listed in `expr_builtins` /
`_PREDICATE_BUILTINS` (sort, groupBy, split, join, toJSON, bitwise, ...).

Times and durations (`now()`, `date()`, `duration()`, see `expr_time`) exist for Argo's
`EvalTime`, which evaluates a prometheus range query's start and end: `evaluate_time` binds
`now()` to the measurement's time; in a condition, `now()` is an error (no wall clock is read).

Layout: `expr_values` (values, limits, errors, Go arithmetic/formatting), `expr_builtins`
(functions over evaluated arguments), `expr_regex` (the `matches` engine), and this module
(tokenizer, parser, AST, evaluator, public API).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, NoReturn

from rollout_workers.expr.expr_builtins import FUNCTIONS, sum_numbers
from rollout_workers.expr.expr_regex import RegexError, RegexProgram, compile_regex
from rollout_workers.expr.expr_time import arithmetic as time_arithmetic
from rollout_workers.expr.expr_time import compare as time_compare
from rollout_workers.expr.expr_time import go_time
from rollout_workers.expr.expr_values import (
    DEFAULT_LIMITS,
    INT64_MAX,
    ExpressionError,
    GoDuration,
    GoTime,
    Limits,
    Value,
    go_divide,
    go_pow,
    go_string,
    import_value,
    is_number,
    type_name,
    wrap,
)

__all__ = [
    "DEFAULT_LIMITS",
    "Expression",
    "ExpressionError",
    "GoTime",
    "Limits",
    "Value",
    "check",
    "evaluate_condition",
    "evaluate_time",
    "parse",
]

# --- tokens ------------------------------------------------------------------------------------

_IDENT, _NUMBER, _STRING, _OPERATOR, _BRACKET, _EOF = (
    "Identifier",
    "Number",
    "String",
    "Operator",
    "Bracket",
    "EOF",
)
_WORD_OPERATORS: Final = frozenset(
    {"not", "in", "or", "and", "matches", "contains", "startsWith", "endsWith", "let", "if"}
    | {"else"}
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str
    value: str
    pos: int

    def __str__(self) -> str:
        if self.kind == _EOF:
            return "EOF"
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.kind}("{escaped}")'

    def is_(self, kind: str, value: str | None = None) -> bool:
        return self.kind == kind and (value is None or self.value == value)


def _is_alnum(ch: str) -> bool:
    return ch in "_$" or ch.isalpha() or ch.isdecimal()


_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}
_HEX_DIGITS: Final = frozenset("0123456789abcdefABCDEF")


class _Lexer:
    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.tokens: list[_Token] = []

    def error(self, message: str, position: int) -> NoReturn:
        raise ExpressionError(message, source=self.src, position=position)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.src[index] if index < len(self.src) else ""

    def run(self) -> list[_Token]:
        src = self.src
        while True:
            while self.pos < len(src) and src[self.pos].isspace():
                self.pos += 1
            if self.pos >= len(src):
                self.tokens.append(_Token(_EOF, "", len(src)))
                return self.tokens
            start = self.pos
            ch = src[start]
            nxt = self.peek(1)
            if ch in "'\"":
                self.tokens.append(_Token(_STRING, self.string(ch), start))
            elif ch == "`":
                end = src.find("`", start + 1)
                if end == -1:
                    self.error("literal not terminated", start)
                self.tokens.append(_Token(_STRING, src[start + 1 : end], start))
                self.pos = end + 1
            elif "0" <= ch <= "9" or (ch == "." and "0" <= nxt <= "9"):
                self.number()
            elif ch == ".":
                self.emit(_OPERATOR, 2 if nxt == "." else 1)
            elif ch == "?":
                self.emit(_OPERATOR, 2 if nxt in (".", "?") and nxt else 1)
            elif ch == "/" and nxt == "/":
                end = src.find("\n", start)
                self.pos = len(src) if end == -1 else end
            elif ch == "/" and nxt == "*":
                end = src.find("*/", start + 2)
                if end == -1:
                    self.error("unclosed comment", start)
                self.pos = end + 2
            elif ch == "#":
                self.emit(_OPERATOR, 1)
                word_end = self.pos
                while word_end < len(src) and _is_alnum(src[word_end]):
                    word_end += 1
                if word_end > self.pos:
                    self.tokens.append(_Token(_IDENT, src[self.pos : word_end], self.pos))
                    self.pos = word_end
            elif ch in "|:":
                self.emit(_OPERATOR, 2 if nxt == ch else 1)
            elif ch in "([{)]}":
                self.emit(_BRACKET, 1)
            elif ch in ",;%+-^/":
                self.emit(_OPERATOR, 1)
            elif ch in "&!=*<>":
                self.emit(_OPERATOR, 2 if nxt and nxt in "&=*" else 1)
            elif _is_alnum(ch):
                end = start
                while end < len(src) and _is_alnum(src[end]):
                    end += 1
                word = src[start:end]
                kind = _OPERATOR if word in _WORD_OPERATORS else _IDENT
                self.tokens.append(_Token(kind, word, start))
                self.pos = end
            else:
                self.error(f"unrecognized character: U+{ord(ch):04X} {ch!r}", start)

    def emit(self, kind: str, length: int) -> None:
        self.tokens.append(_Token(kind, self.src[self.pos : self.pos + length], self.pos))
        self.pos += length

    def number(self) -> None:
        start = self.pos
        digits = "0123456789_"
        if self.peek() == "0":
            self.pos += 1
            prefix = self.peek()
            if prefix and prefix in "xX":
                digits, self.pos = "0123456789abcdefABCDEF_", self.pos + 1
            elif prefix and prefix in "oO":
                digits, self.pos = "01234567_", self.pos + 1
            elif prefix and prefix in "bB":
                digits, self.pos = "01_", self.pos + 1
        self.accept_run(digits)
        if self.peek() == "." and self.peek(1) != ".":
            self.pos += 1
            self.accept_run(digits)
        if self.peek() and self.peek() in "eE":
            self.pos += 1
            if self.peek() and self.peek() in "+-":
                self.pos += 1
            self.accept_run(digits)
        if self.peek() and _is_alnum(self.peek()):
            self.error(f"bad number syntax: {self.src[start : self.pos + 1]!r}", start)
        self.tokens.append(_Token(_NUMBER, self.src[start : self.pos], start))

    def accept_run(self, chars: str) -> None:
        while self.peek() and self.peek() in chars:
            self.pos += 1

    def string(self, quote: str) -> str:
        src, start = self.src, self.pos
        out: list[str] = []
        self.pos += 1
        while True:
            if self.pos >= len(src) or src[self.pos] == "\n":
                self.error("literal not terminated", start)
            ch = src[self.pos]
            if ch == quote:
                self.pos += 1
                return "".join(out)
            if ch != "\\":
                out.append(ch)
                self.pos += 1
                continue
            escape_pos = self.pos
            code = self.peek(1)
            self.pos += 2
            if code in _SIMPLE_ESCAPES:
                out.append(_SIMPLE_ESCAPES[code])
            elif code in ("x", "u", "U"):
                width = {"x": 2, "u": 4, "U": 8}[code]
                digits = src[self.pos : self.pos + width]
                if len(digits) != width or not set(digits) <= _HEX_DIGITS:
                    self.error("invalid char escape", escape_pos)
                out.append(self.code_point(int(digits, 16), escape_pos))
                self.pos += width
            elif code and "0" <= code <= "7":
                digits = src[self.pos - 1 : self.pos + 2]
                if len(digits) != 3 or any(not "0" <= d <= "7" for d in digits):
                    self.error("invalid char escape", escape_pos)
                out.append(self.code_point(int(digits, 8), escape_pos))
                self.pos += 2
            else:
                self.error("invalid char escape", escape_pos)

    def code_point(self, code: int, position: int) -> str:
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            self.error("invalid unicode code point in escape", position)
        return chr(code)


# --- AST ---------------------------------------------------------------------------------------


class _NilChain(Exception):
    """An optional member (`?.`) met nil: the enclosing chain evaluates to nil."""


class _Node:
    __slots__ = ("depth", "pos")
    pos: int
    depth: int

    def __init__(self, pos: int, *children: _Node | None) -> None:
        self.pos = pos
        self.depth = 1 + max((c.depth for c in children if c is not None), default=0)

    def evaluate(self, ev: _Evaluator) -> Value:
        raise NotImplementedError


class _Const(_Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: Value) -> None:
        super().__init__(pos)
        self.value = value

    def evaluate(self, ev: _Evaluator) -> Value:
        return self.value


class _Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name

    def evaluate(self, ev: _Evaluator) -> Value:
        if self.name not in ev.env:
            ev.fail(self, f"unknown name {self.name}")
        return ev.env[self.name]


class _Pointer(_Node):
    """`#`, `#index`, `#acc`, and the implicit `#` of `.field` inside a predicate."""

    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name

    def evaluate(self, ev: _Evaluator) -> Value:
        if not ev.frames:
            ev.fail(self, "cannot use pointer accessor outside predicate")
        item, index, acc = ev.frames[-1]
        if self.name == "index":
            return index
        return acc if self.name == "acc" else item


class _Unary(_Node):
    __slots__ = ("op", "operand")

    def __init__(self, pos: int, op: str, operand: _Node) -> None:
        super().__init__(pos, operand)
        self.op = op
        self.operand = operand

    def evaluate(self, ev: _Evaluator) -> Value:
        value = ev.eval(self.operand)
        if self.op in ("!", "not"):
            if not isinstance(value, bool):
                ev.fail(self, f"invalid operation: {self.op} {type_name(value)}")
            return not value
        if not is_number(value):
            ev.fail(self, f"invalid operation: {self.op} {type_name(value)}")
        assert isinstance(value, int | float)
        if self.op == "+":
            return value
        return wrap(-value) if isinstance(value, int) else -value


class _Binary(_Node):
    __slots__ = ("left", "op", "right")

    def __init__(self, pos: int, op: str, left: _Node, right: _Node) -> None:
        super().__init__(pos, left, right)
        self.op = op
        self.left = left
        self.right = right

    def evaluate(self, ev: _Evaluator) -> Value:
        op = self.op
        if op in ("||", "or", "&&", "and"):
            stop_on = op in ("||", "or")
            left = ev.eval(self.left)
            if not isinstance(left, bool):
                ev.fail(self, f"invalid operation: {type_name(left)} {op} (bool expected)")
            if left is stop_on:
                return left
            right = ev.eval(self.right)
            if not isinstance(right, bool):
                ev.fail(self, f"invalid operation: {op} {type_name(right)} (bool expected)")
            return right
        if op == "??":
            left = ev.eval(self.left)
            return left if left is not None else ev.eval(self.right)
        return ev.binary(self, op, ev.eval(self.left), ev.eval(self.right))


class _Member(_Node):
    __slots__ = ("obj", "optional", "prop")

    def __init__(self, pos: int, obj: _Node, prop: _Node, optional: bool) -> None:
        super().__init__(pos, obj, prop)
        self.obj = obj
        self.prop = prop
        self.optional = optional

    def evaluate(self, ev: _Evaluator) -> Value:
        obj = ev.eval(self.obj)
        if obj is None and self.optional:
            raise _NilChain
        return ev.fetch(self, obj, ev.eval(self.prop))


class _Chain(_Node):
    __slots__ = ("inner",)

    def __init__(self, pos: int, inner: _Node) -> None:
        super().__init__(pos, inner)
        self.inner = inner

    def evaluate(self, ev: _Evaluator) -> Value:
        try:
            return ev.eval(self.inner)
        except _NilChain:
            return None


class _Slice(_Node):
    __slots__ = ("end", "obj", "start")

    def __init__(self, pos: int, obj: _Node, start: _Node | None, end: _Node | None) -> None:
        super().__init__(pos, obj, start, end)
        self.obj = obj
        self.start = start
        self.end = end

    def evaluate(self, ev: _Evaluator) -> Value:
        obj = ev.eval(self.obj)
        start = None if self.start is None else ev.eval(self.start)
        end = None if self.end is None else ev.eval(self.end)
        if not isinstance(obj, list | str):
            ev.fail(self, f"cannot slice {type_name(obj)}")
        length = len(obj)
        low = 0 if start is None else ev.to_index(self, start)
        high = length if end is None else ev.to_index(self, end)
        low = max(0, low + length if low < 0 else low)
        high = min(length, max(0, high + length if high < 0 else high))
        low = min(low, high)
        ev.allocate(self, high - low)
        return obj[low:high]


class _Conditional(_Node):
    __slots__ = ("cond", "other", "then")

    def __init__(self, pos: int, cond: _Node, then: _Node, other: _Node) -> None:
        super().__init__(pos, cond, then, other)
        self.cond = cond
        self.then = then
        self.other = other

    def evaluate(self, ev: _Evaluator) -> Value:
        cond = ev.eval(self.cond)
        if not isinstance(cond, bool):
            ev.fail(self, f"non-bool expression (type {type_name(cond)}) used as condition")
        return ev.eval(self.then if cond else self.other)


class _Array(_Node):
    __slots__ = ("items",)

    def __init__(self, pos: int, items: list[_Node]) -> None:
        super().__init__(pos, *items)
        self.items = tuple(items)

    def evaluate(self, ev: _Evaluator) -> Value:
        ev.allocate(self, len(self.items))
        return [ev.eval(item) for item in self.items]


class _Map(_Node):
    __slots__ = ("pairs",)

    def __init__(self, pos: int, pairs: list[tuple[_Node, _Node]]) -> None:
        super().__init__(pos, *(node for pair in pairs for node in pair))
        self.pairs = tuple(pairs)

    def evaluate(self, ev: _Evaluator) -> Value:
        ev.allocate(self, len(self.pairs))
        out: dict[str, Value] = {}
        for key_node, value_node in self.pairs:
            key = ev.eval(key_node)
            if not isinstance(key, str):
                ev.fail(key_node, f"map keys must be strings, got {type_name(key)}")
            out[key] = ev.eval(value_node)
        return out


class _Predicate(_Node):
    __slots__ = ("body",)

    def __init__(self, pos: int, body: _Node) -> None:
        super().__init__(pos, body)
        self.body = body

    def evaluate(self, ev: _Evaluator) -> Value:
        ev.fail(self, "a predicate can only be an argument of a builtin")


class _Call(_Node):
    __slots__ = ("args", "name")

    def __init__(self, pos: int, name: str, args: list[_Node]) -> None:
        super().__init__(pos, *args)
        self.name = name
        self.args = tuple(args)

    def evaluate(self, ev: _Evaluator) -> Value:
        if self.name in _PREDICATE_BUILTINS:
            return ev.predicate_builtin(self)
        _, _, function = FUNCTIONS[self.name]
        return function(ev, self, [ev.eval(arg) for arg in self.args])


# --- parser ------------------------------------------------------------------------------------

_LEFT, _RIGHT = 0, 1
_BINARY: Final = {
    "|": (0, _LEFT),
    "or": (10, _LEFT),
    "||": (10, _LEFT),
    "and": (15, _LEFT),
    "&&": (15, _LEFT),
    "==": (20, _LEFT),
    "!=": (20, _LEFT),
    "<": (20, _LEFT),
    ">": (20, _LEFT),
    ">=": (20, _LEFT),
    "<=": (20, _LEFT),
    "in": (20, _LEFT),
    "matches": (20, _LEFT),
    "contains": (20, _LEFT),
    "startsWith": (20, _LEFT),
    "endsWith": (20, _LEFT),
    "..": (25, _LEFT),
    "+": (30, _LEFT),
    "-": (30, _LEFT),
    "*": (60, _LEFT),
    "/": (60, _LEFT),
    "%": (60, _LEFT),
    "**": (100, _RIGHT),
    "^": (100, _RIGHT),
    "??": (500, _LEFT),
}
_COMPARISON: Final = 20
_UNARY: Final = {"not": 50, "!": 50, "-": 90, "+": 90}
_NEGATABLE: Final = frozenset({"in", "matches", "contains", "startsWith", "endsWith"})
_POINTER_NAMES: Final = frozenset({"", "index", "acc"})

# Builtins whose second argument is a predicate: (argument kinds, optional-from index).
_EXPR, _PRED = "expr", "predicate"
_PREDICATE_BUILTINS: Final[dict[str, tuple[tuple[str, ...], int]]] = {
    "all": ((_EXPR, _PRED), 2),
    "none": ((_EXPR, _PRED), 2),
    "any": ((_EXPR, _PRED), 2),
    "one": ((_EXPR, _PRED), 2),
    "filter": ((_EXPR, _PRED), 2),
    "map": ((_EXPR, _PRED), 2),
    "count": ((_EXPR, _PRED), 1),
    "sum": ((_EXPR, _PRED), 1),
    "find": ((_EXPR, _PRED), 2),
    "findIndex": ((_EXPR, _PRED), 2),
    "findLast": ((_EXPR, _PRED), 2),
    "findLastIndex": ((_EXPR, _PRED), 2),
    "reduce": ((_EXPR, _PRED, _EXPR), 2),
}
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


class _Parser:
    def __init__(self, source: str, tokens: list[_Token], limits: Limits) -> None:
        self.src = source
        self.tokens = tokens
        self.index = 0
        self.cur = tokens[0]
        self.limits = limits
        self.nodes = 0
        self.nesting = 0
        self.predicate_depth = 0
        self.identifiers: list[tuple[str, int]] = []

    def error(self, token: _Token, message: str) -> NoReturn:
        raise ExpressionError(message, source=self.src, position=token.pos)

    def make(self, node: _Node) -> _Node:
        self.nodes += 1
        if self.nodes > self.limits.max_nodes:
            raise ExpressionError(
                f"expression has more than {self.limits.max_nodes} nodes",
                source=self.src,
                position=node.pos,
            )
        if node.depth > self.limits.max_depth:
            raise ExpressionError(
                f"expression nested deeper than {self.limits.max_depth}",
                source=self.src,
                position=node.pos,
            )
        return node

    def next(self) -> None:
        if self.index + 1 < len(self.tokens):
            self.index += 1
        self.cur = self.tokens[self.index]

    def peek(self) -> _Token:
        return self.tokens[min(self.index + 1, len(self.tokens) - 1)]

    def expect(self, kind: str, value: str) -> None:
        if not self.cur.is_(kind, value):
            self.error(self.cur, f"unexpected token {self.cur}")
        self.next()

    def parse(self) -> _Node:
        node = self.expression(0)
        if not self.cur.is_(_EOF):
            self.error(self.cur, f"unexpected token {self.cur}")
        return node

    def expression(self, precedence: int) -> _Node:
        self.nesting += 1
        if self.nesting > self.limits.max_depth:
            self.error(self.cur, f"expression nested deeper than {self.limits.max_depth}")
        try:
            return self._expression(precedence)
        finally:
            self.nesting -= 1

    def _expression(self, precedence: int) -> _Node:
        left = self.primary()
        previous = ""
        while self.cur.is_(_OPERATOR):
            token = self.cur
            negate = token.value == "not"
            if negate:
                suffix = self.peek()
                if not (suffix.is_(_OPERATOR) and suffix.value in _NEGATABLE):
                    self.error(suffix, f"unexpected token {suffix}")
                if _BINARY[suffix.value][0] < precedence:
                    break
                self.next()
                token = self.cur
            spec = _BINARY.get(token.value)
            if spec is None or spec[0] < precedence:
                break
            self.next()
            if token.value == "|":
                name = self.cur
                if not name.is_(_IDENT):
                    self.error(name, f"unexpected token {name}")
                self.next()
                left = self.call(name, [left])
            elif previous == "??" and token.value != "??":
                self.error(
                    token,
                    f"Operator ({token.value}) and coalesce expressions (??) cannot be mixed. "
                    "Wrap either by parentheses.",
                )
            elif spec[0] == _COMPARISON:
                left = self.comparison(left, token, negate=negate)
            else:
                right = self.expression(spec[0] + 1 if spec[1] == _LEFT else spec[0])
                left = self.make(_Binary(token.pos, token.value, left, right))
            previous = token.value
        if precedence == 0:
            left = self.conditional(left)
        return left

    def comparison(self, left: _Node, token: _Token, *, negate: bool) -> _Node:
        """`a < b < c` is `a < b && b < c`, as in expr-lang."""
        root: _Node | None = None
        while True:
            right = self.expression(_COMPARISON + 1)
            node = self.make(_Binary(token.pos, token.value, left, right))
            if negate:
                node = self.make(_Unary(token.pos, "not", node))
            root = node if root is None else self.make(_Binary(token.pos, "&&", root, node))
            left = right
            token = self.cur
            if not (token.is_(_OPERATOR) and _BINARY.get(token.value, (0,))[0] == _COMPARISON):
                return root
            negate = False
            self.next()

    def conditional(self, node: _Node) -> _Node:
        while self.cur.is_(_OPERATOR, "?"):
            question = self.cur
            self.next()
            if self.cur.is_(_OPERATOR, ":"):  # `a ?: b`
                self.next()
                then, other = node, self.expression(0)
            else:
                then = self.expression(0)
                self.expect(_OPERATOR, ":")
                other = self.expression(0)
            node = self.make(_Conditional(question.pos, node, then, other))
        return node

    def primary(self) -> _Node:
        token = self.cur
        if token.is_(_OPERATOR) and token.value in _UNARY:
            self.next()
            operand = self.expression(_UNARY[token.value])
            return self.postfix(self.make(_Unary(token.pos, token.value, operand)))
        if token.is_(_BRACKET, "("):
            self.next()
            inner = self.expression(0)
            self.expect(_BRACKET, ")")
            return self.postfix(inner)
        if token.is_(_OPERATOR, "#") or token.is_(_OPERATOR, "."):
            if self.predicate_depth == 0:
                self.error(token, "cannot use pointer accessor outside predicate")
            name = ""
            if token.value == "#":
                self.next()
                if self.cur.is_(_IDENT):
                    name = self.cur.value
                    if name not in _POINTER_NAMES:
                        self.error(self.cur, f"unknown pointer #{name}")
                    self.next()
            return self.postfix(self.make(_Pointer(token.pos, name)))
        return self.secondary()

    def secondary(self) -> _Node:
        token = self.cur
        node: _Node
        if token.is_(_IDENT):
            self.next()
            if token.value in ("true", "false", "nil"):
                constant = {"true": True, "false": False, "nil": None}[token.value]
                return self.make(_Const(token.pos, constant))
            if self.cur.is_(_BRACKET, "("):
                node = self.call(token, [])
            else:
                self.identifiers.append((token.value, token.pos))
                node = self.make(_Ident(token.pos, token.value))
        elif token.is_(_NUMBER):
            self.next()
            return self.make(_Const(token.pos, self.number(token)))
        elif token.is_(_STRING):
            self.next()
            node = self.make(_Const(token.pos, token.value))
        elif token.is_(_BRACKET, "["):
            node = self.array(token)
        elif token.is_(_BRACKET, "{"):
            node = self.map(token)
        else:
            self.error(token, f"unexpected token {token}")
        return self.postfix(node)

    def number(self, token: _Token) -> int | float:
        text = token.value.replace("_", "")
        lowered = text.lower()
        bases = {"0x": ("hex", 16), "0b": ("binary", 2), "0o": ("octal", 8)}
        kind, base = bases.get(lowered[:2], ("integer", 10))
        if base == 10 and ("." in lowered or "e" in lowered):
            try:
                number = float(text)
            except ValueError:
                self.error(token, "invalid float literal")
            if math.isinf(number):
                self.error(token, "float literal is too large")
            return number
        try:
            value = int(text[2:] if base != 10 else text, base)
        except ValueError:
            self.error(token, f"invalid {kind} literal")
        if value > INT64_MAX:
            self.error(token, "integer literal is too large")
        return value

    def call(self, name: _Token, args: list[_Node]) -> _Node:
        if name.value in _PREDICATE_BUILTINS:
            kinds, required = _PREDICATE_BUILTINS[name.value]
            self.expect(_BRACKET, "(")
            first = True
            for position in range(len(args), len(kinds)):
                if self.cur.is_(_BRACKET, ")"):
                    if position < required:
                        self.error(self.cur, f"not enough arguments to call {name.value}")
                    break
                if not first:
                    self.expect(_OPERATOR, ",")
                first = False
                if kinds[position] == _PRED:
                    args.append(self.predicate())
                else:
                    args.append(self.expression(0))
            if self.cur.is_(_OPERATOR, ","):
                self.next()
            self.expect(_BRACKET, ")")
            return self.make(_Call(name.pos, name.value, args))
        if name.value not in FUNCTIONS:
            self.error(name, f"unknown name {name.value}")
        offset = len(args)
        self.expect(_BRACKET, "(")
        while not self.cur.is_(_BRACKET, ")"):
            if len(args) > offset:
                self.expect(_OPERATOR, ",")
                if self.cur.is_(_BRACKET, ")"):
                    break
            args.append(self.expression(0))
        self.expect(_BRACKET, ")")
        low, high, _ = FUNCTIONS[name.value]
        if len(args) < low:
            self.error(name, f"not enough arguments to call {name.value}")
        if high is not None and len(args) > high:
            self.error(name, f"too many arguments to call {name.value}")
        return self.make(_Call(name.pos, name.value, args))

    def predicate(self) -> _Node:
        start = self.cur
        braces = start.is_(_BRACKET, "{")
        if braces:
            self.next()
        self.predicate_depth += 1
        body = self.expression(0)
        self.predicate_depth -= 1
        if braces:
            self.expect(_BRACKET, "}")
        return self.make(_Predicate(start.pos, body))

    def array(self, token: _Token) -> _Node:
        self.expect(_BRACKET, "[")
        items: list[_Node] = []
        while not self.cur.is_(_BRACKET, "]"):
            if items:
                self.expect(_OPERATOR, ",")
                if self.cur.is_(_BRACKET, "]"):
                    break
            items.append(self.expression(0))
        self.expect(_BRACKET, "]")
        return self.make(_Array(token.pos, items))

    def map(self, token: _Token) -> _Node:
        self.expect(_BRACKET, "{")
        pairs: list[tuple[_Node, _Node]] = []
        while not self.cur.is_(_BRACKET, "}"):
            if pairs:
                self.expect(_OPERATOR, ",")
                if self.cur.is_(_BRACKET, "}"):
                    break
            key_token = self.cur
            key: _Node
            if key_token.kind in (_NUMBER, _STRING, _IDENT):
                key = self.make(_Const(key_token.pos, key_token.value))
                self.next()
            elif key_token.is_(_BRACKET, "("):
                key = self.expression(0)
            else:
                self.error(
                    key_token,
                    "a map key must be a quoted string, a number, a identifier, or an "
                    f"expression enclosed in parentheses (unexpected token {key_token})",
                )
            self.expect(_OPERATOR, ":")
            pairs.append((key, self.expression(0)))
        self.expect(_BRACKET, "}")
        return self.make(_Map(token.pos, pairs))

    def postfix(self, node: _Node) -> _Node:
        while True:
            token = self.cur
            if token.is_(_OPERATOR, ".") or token.is_(_OPERATOR, "?."):
                optional = token.value == "?."
                self.next()
                if optional and self.cur.is_(_BRACKET, "["):
                    node = self.index_or_slice(node, optional=True)
                    continue
                prop = self.cur
                self.next()
                if not (
                    prop.is_(_IDENT)
                    or (prop.is_(_OPERATOR) and _IDENTIFIER_RE.match(prop.value) is not None)
                ):
                    self.error(prop, "expected name")
                if self.cur.is_(_BRACKET, "("):
                    self.error(prop, f"unknown method {prop.value}")
                key = self.make(_Const(prop.pos, prop.value))
                node = self.member(node, key, optional=optional, pos=prop.pos)
            elif token.is_(_BRACKET, "["):
                node = self.index_or_slice(node, optional=False)
            else:
                return node

    def index_or_slice(self, node: _Node, *, optional: bool) -> _Node:
        bracket = self.cur
        self.next()
        start: _Node | None = None
        if not self.cur.is_(_OPERATOR, ":"):
            start = self.expression(0)
            if not self.cur.is_(_OPERATOR, ":"):
                self.expect(_BRACKET, "]")
                return self.member(node, start, optional=optional, pos=bracket.pos)
        self.next()  # the ":"
        end = None if self.cur.is_(_BRACKET, "]") else self.expression(0)
        self.expect(_BRACKET, "]")
        return self.make(_Slice(bracket.pos, node, start, end))

    def member(self, node: _Node, key: _Node, *, optional: bool, pos: int) -> _Node:
        """`a?.b.c` is one chain: nil at `a` makes the whole chain nil (expr's ChainNode)."""
        in_chain = isinstance(node, _Chain)
        base = node.inner if isinstance(node, _Chain) else node
        member = self.make(_Member(pos, base, key, optional))
        return self.make(_Chain(pos, member)) if in_chain or optional else member


# --- evaluation --------------------------------------------------------------------------------


class _Evaluator:
    def __init__(
        self, expression: Expression, env: dict[str, Value], now: GoTime | None = None
    ) -> None:
        self.expression = expression
        self.limits = expression.limits
        self.env = env
        self.now = now
        self.steps = self.limits.max_steps
        self.allocation = self.limits.max_allocation
        self.frames: list[tuple[Value, int, Value]] = []

    def fail(self, node: _Node, message: str) -> NoReturn:
        raise ExpressionError(message, source=self.expression.source, position=node.pos)

    def eval(self, node: _Node) -> Value:
        self.steps -= 1
        if self.steps < 0:
            self.fail(node, f"evaluation exceeded {self.limits.max_steps} steps")
        return node.evaluate(self)

    def charge(self, node: _Node, steps: int) -> None:
        self.steps -= steps
        if self.steps < 0:
            self.fail(node, f"evaluation exceeded {self.limits.max_steps} steps")

    def allocate(self, node: _Node, size: int, *, string: bool = False) -> None:
        cap = self.limits.max_string_length if string else self.limits.max_collection_length
        if size > cap:
            what = "string longer than" if string else "collection larger than"
            self.fail(node, f"{what} {cap}")
        self.allocation -= size
        if self.allocation < 0:
            self.fail(node, f"evaluation allocated more than {self.limits.max_allocation} items")

    def to_index(self, node: _Node, value: Value) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(node, f"invalid operation: int({type_name(value)})")
        if isinstance(value, float):
            if not math.isfinite(value):
                self.fail(node, f"invalid index {value}")
            return int(value)
        return value

    def fetch(self, node: _Node, obj: Value, key: Value) -> Value:
        if isinstance(obj, dict):
            if not isinstance(key, str):
                self.fail(node, f"cannot use {type_name(key)} as key of map")
            return obj.get(key)
        if isinstance(obj, list | str):
            if isinstance(key, str):
                self.fail(node, f"cannot fetch {key} from {type_name(obj)}")
            index = self.to_index(node, key)
            length = len(obj)
            if index < 0:
                index += length
            if not 0 <= index < length:
                self.fail(node, f"index out of range: {index} (array length is {length})")
            return obj[index]
        self.fail(node, f"cannot fetch {go_string(key)} from {type_name(obj)}")

    # Equality is structural and numeric-aware (1 == 1.0), like expr-lang's runtime.Equal.
    def equal(self, node: _Node, a: Value, b: Value) -> bool:
        if a is None or b is None:
            return a is None and b is None
        if isinstance(a, GoTime | GoDuration) or isinstance(b, GoTime | GoDuration):
            return time_compare("==", a, b) is True
        if isinstance(a, bool) or isinstance(b, bool):
            return isinstance(a, bool) and isinstance(b, bool) and a == b
        if isinstance(a, int | float) and isinstance(b, int | float):
            if isinstance(a, int) and isinstance(b, int):
                return a == b
            return float(a) == float(b)
        if isinstance(a, str) and isinstance(b, str):
            self.charge(node, min(len(a), len(b)) // 256)
            return a == b
        if isinstance(a, list) and isinstance(b, list):
            self.charge(node, len(a))
            return len(a) == len(b) and all(
                self.equal(node, x, y) for x, y in zip(a, b, strict=True)
            )
        if isinstance(a, dict) and isinstance(b, dict):
            self.charge(node, len(a))
            return a.keys() == b.keys() and all(self.equal(node, a[k], b[k]) for k in a)
        return False

    def less(self, node: _Node, op: str, a: Value, b: Value) -> bool:
        ordered = time_compare(op, a, b)
        if ordered is not None:
            return ordered
        if is_number(a) and is_number(b):
            assert isinstance(a, int | float) and isinstance(b, int | float)
            if not (isinstance(a, int) and isinstance(b, int)):
                a, b = float(a), float(b)
            if op == "<":
                return a < b
            if op == ">":
                return a > b
            return a <= b if op == "<=" else a >= b
        if isinstance(a, str) and isinstance(b, str):
            self.charge(node, min(len(a), len(b)) // 256)
            if op == "<":
                return a < b
            if op == ">":
                return a > b
            return a <= b if op == "<=" else a >= b
        self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")

    def binary(self, node: _Node, op: str, a: Value, b: Value) -> Value:
        if op == "==":
            return self.equal(node, a, b)
        if op == "!=":
            return not self.equal(node, a, b)
        if op in ("<", ">", "<=", ">="):
            return self.less(node, op, a, b)
        if op == "in":
            return self.contains_item(node, a, b)
        if op in ("contains", "startsWith", "endsWith", "matches"):
            if not isinstance(a, str) or not isinstance(b, str):
                self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
            self.charge(node, 1 + len(a) // 64)
            if op == "contains":
                return b in a
            if op == "startsWith":
                return a.startswith(b)
            if op == "endsWith":
                return a.endswith(b)
            return self.matches(node, a, b)
        if op == "..":
            if (
                not (isinstance(a, int) and isinstance(b, int))
                or isinstance(a, bool)
                or isinstance(b, bool)
            ):
                self.fail(node, f"invalid operation: {type_name(a)} .. {type_name(b)}")
            size = max(0, b - a + 1)
            self.allocate(node, size)
            self.charge(node, size)
            return list(range(a, b + 1))
        if op == "+" and isinstance(a, str) and isinstance(b, str):
            self.allocate(node, len(a) + len(b), string=True)
            return a + b
        if isinstance(a, GoTime | GoDuration) or isinstance(b, GoTime | GoDuration):
            outcome = time_arithmetic(op, a, b)
            if outcome is None:
                self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
            return outcome
        if not (is_number(a) and is_number(b)):
            self.fail(node, f"invalid operation: {type_name(a)} {op} {type_name(b)}")
        assert isinstance(a, int | float) and isinstance(b, int | float)
        return self.arithmetic(node, op, a, b)

    def arithmetic(self, node: _Node, op: str, a: int | float, b: int | float) -> Value:
        both_int = isinstance(a, int) and isinstance(b, int)
        if op in ("+", "-", "*"):
            if both_int:
                assert isinstance(a, int) and isinstance(b, int)
                result = a + b if op == "+" else a - b if op == "-" else a * b
                return wrap(result)
            fa, fb = float(a), float(b)
            return fa + fb if op == "+" else fa - fb if op == "-" else fa * fb
        if op == "/":
            return go_divide(float(a), float(b))
        if op == "%":
            if not both_int:
                self.fail(node, f"invalid operation: {type_name(a)} % {type_name(b)}")
            assert isinstance(a, int) and isinstance(b, int)
            if b == 0:
                self.fail(node, "integer divide by zero")
            quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            return wrap(a - b * quotient)
        return go_pow(float(a), float(b))  # "**" and "^"

    def contains_item(self, node: _Node, item: Value, container: Value) -> bool:
        if container is None:
            return False
        if isinstance(container, list):
            for element in container:
                self.charge(node, 1)
                if self.equal(node, element, item):
                    return True
            return False
        if isinstance(container, dict):
            if item is None:
                return False
            if not isinstance(item, str):
                self.fail(node, f"cannot use {type_name(item)} as key of map")
            return item in container
        self.fail(node, f'operator "in" not defined on {type_name(container)}')

    def matches(self, node: _Node, subject: str, pattern: str) -> bool:
        self.charge(node, len(pattern))
        cache = self.expression.regex_cache
        program = cache.get(pattern)
        if program is None:
            try:
                program = compile_regex(
                    pattern,
                    max_length=self.limits.max_regex_length,
                    max_states=self.limits.max_regex_states,
                )
            except RegexError as exc:
                self.fail(node, f"invalid regular expression: {exc}")
            if len(cache) < 32:
                cache[pattern] = program
        return program.search(subject, lambda steps: self.charge(node, steps))

    # --- builtins taking a predicate ---

    def iterable(self, node: _Node, value: Value) -> list[Value]:
        if not isinstance(value, list):
            self.fail(node, f"cannot iterate over {type_name(value)}")
        return value

    def apply(self, predicate: _Node, item: Value, index: int, acc: Value = None) -> Value:
        self.charge(predicate, 1)
        self.frames.append((item, index, acc))
        try:
            return self.eval(predicate.body if isinstance(predicate, _Predicate) else predicate)
        finally:
            self.frames.pop()

    def test(self, node: _Call, predicate: _Node, item: Value, index: int) -> bool:
        outcome = self.apply(predicate, item, index)
        if not isinstance(outcome, bool):
            self.fail(node, f"predicate of {node.name} returned {type_name(outcome)}, not bool")
        return outcome

    def predicate_builtin(self, node: _Call) -> Value:
        name = node.name
        items = self.iterable(node, self.eval(node.args[0]))
        predicate = node.args[1] if len(node.args) > 1 else None
        if predicate is None:  # count(xs) and sum(xs)
            if name == "sum":
                return sum_numbers(self, node, items)
            self.charge(node, len(items))
            if not all(isinstance(item, bool) for item in items):
                self.fail(node, "count without a predicate needs an array of bools")
            return sum(1 for item in items if item is True)
        if name in ("all", "none"):
            want = name == "all"
            return all(self.test(node, predicate, x, i) is want for i, x in enumerate(items))
        if name == "any":
            return any(self.test(node, predicate, x, i) for i, x in enumerate(items))
        if name in ("one", "count"):
            hits = sum(1 for i, x in enumerate(items) if self.test(node, predicate, x, i))
            return hits == 1 if name == "one" else hits
        if name == "filter":
            kept = [x for i, x in enumerate(items) if self.test(node, predicate, x, i)]
            self.allocate(node, len(kept))
            return kept
        if name in ("map", "sum"):
            self.allocate(node, len(items))
            mapped = [self.apply(predicate, x, i) for i, x in enumerate(items)]
            return sum_numbers(self, node, mapped) if name == "sum" else mapped
        if name in ("find", "findIndex"):
            for i, x in enumerate(items):
                if self.test(node, predicate, x, i):
                    return x if name == "find" else i
            return None if name == "find" else -1
        if name in ("findLast", "findLastIndex"):
            for i in range(len(items) - 1, -1, -1):
                if self.test(node, predicate, items[i], i):
                    return items[i] if name == "findLast" else i
            return None if name == "findLast" else -1
        # reduce(xs, predicate[, initial])
        if len(node.args) > 2:
            acc, start = self.eval(node.args[2]), 0
        elif items:
            acc, start = items[0], 1
        else:
            self.fail(node, "reduce of empty array with no initial value")
        for i in range(start, len(items)):
            acc = self.apply(predicate, items[i], i, acc)
        return acc


# --- public API --------------------------------------------------------------------------------


class Expression:
    """A parsed condition: parse once per AnalysisRun, evaluate per measurement."""

    __slots__ = ("_root", "identifiers", "limits", "regex_cache", "source")

    def __init__(
        self, source: str, root: _Node, identifiers: list[tuple[str, int]], limits: Limits
    ) -> None:
        self.source = source
        self._root = root
        self.identifiers = tuple(identifiers)
        self.limits = limits
        self.regex_cache: dict[str, RegexProgram] = {}

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def evaluate(self, env: Mapping[str, object], *, now: GoTime | None = None) -> Value:
        """Evaluate over `env` (variable name -> JSON-like value), `now()` being `now`; raises
        ExpressionError."""
        values: dict[str, Value] = {}
        for name, value in env.items():
            if not isinstance(name, str):
                raise ExpressionError("variable names must be strings")
            values[name] = import_value(value, self.limits)
        evaluator = _Evaluator(self, values, now)
        try:
            return evaluator.eval(self._root)
        except _NilChain:
            return None
        except RecursionError:  # backstop only: the depth limits are meant to trigger first
            raise ExpressionError("evaluation nested too deeply") from None

    def evaluate_condition(self, result: object) -> bool:
        """Argo's EvalCondition: bind `result`, demand a bool outcome."""
        outcome = self.evaluate({"result": result})
        if not isinstance(outcome, bool):
            raise ExpressionError(f"expected bool, but got {type_name(outcome)}")
        return outcome


def parse(expression: str, *, limits: Limits = DEFAULT_LIMITS) -> Expression:
    """Parse `expression`; raises ExpressionError naming the offending position."""
    if not isinstance(expression, str):
        raise ExpressionError("expression must be a string")
    if len(expression) > limits.max_expression_length:
        raise ExpressionError(f"expression longer than {limits.max_expression_length} characters")
    tokens = _Lexer(expression).run()
    parser = _Parser(expression, tokens, limits)
    try:
        root = parser.parse()
    except RecursionError:  # backstop only: nesting is limited explicitly
        raise ExpressionError("expression nested too deeply") from None
    return Expression(expression, root, parser.identifiers, limits)


def check(
    expression: str,
    *,
    variables: frozenset[str] = frozenset({"result"}),
    limits: Limits = DEFAULT_LIMITS,
) -> None:
    """Validate a condition at admission time: syntax, limits, and only known variables."""
    parsed = parse(expression, limits=limits)
    for name, position in parsed.identifiers:
        if name not in variables:
            raise ExpressionError(f"unknown name {name}", source=expression, position=position)


def evaluate_condition(expression: str, result: object, *, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Parse and evaluate one condition over `result`, as Argo's EvalCondition does."""
    return parse(expression, limits=limits).evaluate_condition(result)


#: Go's `%T` of the values an expression can produce, for EvalTime's error message.
_GO_TYPES: Final = {
    "nil": "<nil>",
    "float": "float64",
    "array": "[]interface {}",
    "map": "map[string]interface {}",
}


def evaluate_time(expression: str, *, now: dt.datetime, limits: Limits = DEFAULT_LIMITS) -> GoTime:
    """Argo's `evaluate.EvalTime`: `expression` must evaluate to a time (`now()` is `now`);
    raises ExpressionError ("expected time.Time, but got int" for any other outcome). As in
    Argo, only the builtins are in scope: `result` and other variables are unknown names."""
    outcome = parse(expression, limits=limits).evaluate({}, now=go_time(now))
    if not isinstance(outcome, GoTime):
        name = type_name(outcome)
        raise ExpressionError(f"expected time.Time, but got {_GO_TYPES.get(name, name)}")
    return outcome

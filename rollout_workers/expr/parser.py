"""The parser of the expr-lang condition language: tokens to a syntax tree.

A precedence-climbing parser that mirrors expr-lang's own: the same operator table and
associativity, chained comparisons (`a < b < c`), the `??` mixing rule, `not in` and friends,
predicates with `#` and `.field`, optional chains (`?.`), pipes (`x | f()`). It enforces the
size limits of a condition (node count, nesting depth) while it builds the tree, and records the
variables a condition names, so that admission (`expression.check`) can refuse unknown ones.
Separate from the evaluator: both depend on `nodes`, neither on the other.
"""

from __future__ import annotations

import math
import re
from typing import Final, NoReturn

from rollout_workers.expr.builtins import FUNCTIONS, PREDICATE, PREDICATE_BUILTINS
from rollout_workers.expr.lexer import BRACKET, EOF, IDENT, NUMBER, OPERATOR, STRING, Token
from rollout_workers.expr.nodes import (
    Array,
    Binary,
    Call,
    Chain,
    Conditional,
    Const,
    Ident,
    Map,
    Member,
    Node,
    Pointer,
    Predicate,
    Slice,
    Unary,
)
from rollout_workers.expr.values import INT64_MAX, ExpressionError, Limits

__all__ = ["Parser"]

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
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


class Parser:
    """Parses one token list (`parse`); `identifiers` then holds each variable named, with its
    position. Raises ExpressionError at the offending token."""

    def __init__(self, source: str, tokens: list[Token], limits: Limits) -> None:
        self.src = source
        self.tokens = tokens
        self.index = 0
        self.cur = tokens[0]
        self.limits = limits
        self.nodes = 0
        self.nesting = 0
        self.predicate_depth = 0
        self.identifiers: list[tuple[str, int]] = []

    def error(self, token: Token, message: str) -> NoReturn:
        raise ExpressionError(message, source=self.src, position=token.pos)

    def make(self, node: Node) -> Node:
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

    def peek(self) -> Token:
        return self.tokens[min(self.index + 1, len(self.tokens) - 1)]

    def expect(self, kind: str, value: str) -> None:
        if not self.cur.is_(kind, value):
            self.error(self.cur, f"unexpected token {self.cur}")
        self.next()

    def parse(self) -> Node:
        node = self.expression(0)
        if not self.cur.is_(EOF):
            self.error(self.cur, f"unexpected token {self.cur}")
        return node

    def expression(self, precedence: int) -> Node:
        self.nesting += 1
        if self.nesting > self.limits.max_depth:
            self.error(self.cur, f"expression nested deeper than {self.limits.max_depth}")
        try:
            return self._expression(precedence)
        finally:
            self.nesting -= 1

    def _expression(self, precedence: int) -> Node:
        left = self.primary()
        previous = ""
        while self.cur.is_(OPERATOR):
            token = self.cur
            negate = token.value == "not"
            if negate:
                suffix = self.peek()
                if not (suffix.is_(OPERATOR) and suffix.value in _NEGATABLE):
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
                if not name.is_(IDENT):
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
                left = self.make(Binary(token.pos, token.value, left, right))
            previous = token.value
        if precedence == 0:
            left = self.conditional(left)
        return left

    def comparison(self, left: Node, token: Token, *, negate: bool) -> Node:
        """`a < b < c` is `a < b && b < c`, as in expr-lang."""
        root: Node | None = None
        while True:
            right = self.expression(_COMPARISON + 1)
            node = self.make(Binary(token.pos, token.value, left, right))
            if negate:
                node = self.make(Unary(token.pos, "not", node))
            root = node if root is None else self.make(Binary(token.pos, "&&", root, node))
            left = right
            token = self.cur
            if not (token.is_(OPERATOR) and _BINARY.get(token.value, (0,))[0] == _COMPARISON):
                return root
            negate = False
            self.next()

    def conditional(self, node: Node) -> Node:
        while self.cur.is_(OPERATOR, "?"):
            question = self.cur
            self.next()
            if self.cur.is_(OPERATOR, ":"):  # `a ?: b`
                self.next()
                then, other = node, self.expression(0)
            else:
                then = self.expression(0)
                self.expect(OPERATOR, ":")
                other = self.expression(0)
            node = self.make(Conditional(question.pos, node, then, other))
        return node

    def primary(self) -> Node:
        token = self.cur
        if token.is_(OPERATOR) and token.value in _UNARY:
            self.next()
            operand = self.expression(_UNARY[token.value])
            return self.postfix(self.make(Unary(token.pos, token.value, operand)))
        if token.is_(BRACKET, "("):
            self.next()
            inner = self.expression(0)
            self.expect(BRACKET, ")")
            return self.postfix(inner)
        if token.is_(OPERATOR, "#") or token.is_(OPERATOR, "."):
            if self.predicate_depth == 0:
                self.error(token, "cannot use pointer accessor outside predicate")
            name = ""
            if token.value == "#":
                self.next()
                if self.cur.is_(IDENT):
                    name = self.cur.value
                    if name not in _POINTER_NAMES:
                        self.error(self.cur, f"unknown pointer #{name}")
                    self.next()
            return self.postfix(self.make(Pointer(token.pos, name)))
        return self.secondary()

    def secondary(self) -> Node:
        token = self.cur
        node: Node
        if token.is_(IDENT):
            self.next()
            if token.value in ("true", "false", "nil"):
                constant = {"true": True, "false": False, "nil": None}[token.value]
                return self.make(Const(token.pos, constant))
            if self.cur.is_(BRACKET, "("):
                node = self.call(token, [])
            else:
                self.identifiers.append((token.value, token.pos))
                node = self.make(Ident(token.pos, token.value))
        elif token.is_(NUMBER):
            self.next()
            return self.make(Const(token.pos, self.number(token)))
        elif token.is_(STRING):
            self.next()
            node = self.make(Const(token.pos, token.value))
        elif token.is_(BRACKET, "["):
            node = self.array(token)
        elif token.is_(BRACKET, "{"):
            node = self.map(token)
        else:
            self.error(token, f"unexpected token {token}")
        return self.postfix(node)

    def number(self, token: Token) -> int | float:
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

    def call(self, name: Token, args: list[Node]) -> Node:
        if name.value in PREDICATE_BUILTINS:
            kinds, required = PREDICATE_BUILTINS[name.value]
            self.expect(BRACKET, "(")
            first = True
            for position in range(len(args), len(kinds)):
                if self.cur.is_(BRACKET, ")"):
                    if position < required:
                        self.error(self.cur, f"not enough arguments to call {name.value}")
                    break
                if not first:
                    self.expect(OPERATOR, ",")
                first = False
                if kinds[position] == PREDICATE:
                    args.append(self.predicate())
                else:
                    args.append(self.expression(0))
            if self.cur.is_(OPERATOR, ","):
                self.next()
            self.expect(BRACKET, ")")
            return self.make(Call(name.pos, name.value, args))
        if name.value not in FUNCTIONS:
            self.error(name, f"unknown name {name.value}")
        offset = len(args)
        self.expect(BRACKET, "(")
        while not self.cur.is_(BRACKET, ")"):
            if len(args) > offset:
                self.expect(OPERATOR, ",")
                if self.cur.is_(BRACKET, ")"):
                    break
            args.append(self.expression(0))
        self.expect(BRACKET, ")")
        low, high, _ = FUNCTIONS[name.value]
        if len(args) < low:
            self.error(name, f"not enough arguments to call {name.value}")
        if high is not None and len(args) > high:
            self.error(name, f"too many arguments to call {name.value}")
        return self.make(Call(name.pos, name.value, args))

    def predicate(self) -> Node:
        start = self.cur
        braces = start.is_(BRACKET, "{")
        if braces:
            self.next()
        self.predicate_depth += 1
        body = self.expression(0)
        self.predicate_depth -= 1
        if braces:
            self.expect(BRACKET, "}")
        return self.make(Predicate(start.pos, body))

    def array(self, token: Token) -> Node:
        self.expect(BRACKET, "[")
        items: list[Node] = []
        while not self.cur.is_(BRACKET, "]"):
            if items:
                self.expect(OPERATOR, ",")
                if self.cur.is_(BRACKET, "]"):
                    break
            items.append(self.expression(0))
        self.expect(BRACKET, "]")
        return self.make(Array(token.pos, items))

    def map(self, token: Token) -> Node:
        self.expect(BRACKET, "{")
        pairs: list[tuple[Node, Node]] = []
        while not self.cur.is_(BRACKET, "}"):
            if pairs:
                self.expect(OPERATOR, ",")
                if self.cur.is_(BRACKET, "}"):
                    break
            key_token = self.cur
            key: Node
            if key_token.kind in (NUMBER, STRING, IDENT):
                key = self.make(Const(key_token.pos, key_token.value))
                self.next()
            elif key_token.is_(BRACKET, "("):
                key = self.expression(0)
            else:
                self.error(
                    key_token,
                    "a map key must be a quoted string, a number, a identifier, or an "
                    f"expression enclosed in parentheses (unexpected token {key_token})",
                )
            self.expect(OPERATOR, ":")
            pairs.append((key, self.expression(0)))
        self.expect(BRACKET, "}")
        return self.make(Map(token.pos, pairs))

    def postfix(self, node: Node) -> Node:
        while True:
            token = self.cur
            if token.is_(OPERATOR, ".") or token.is_(OPERATOR, "?."):
                optional = token.value == "?."
                self.next()
                if optional and self.cur.is_(BRACKET, "["):
                    node = self.index_or_slice(node, optional=True)
                    continue
                prop = self.cur
                self.next()
                if not (
                    prop.is_(IDENT)
                    or (prop.is_(OPERATOR) and _IDENTIFIER_RE.match(prop.value) is not None)
                ):
                    self.error(prop, "expected name")
                if self.cur.is_(BRACKET, "("):
                    self.error(prop, f"unknown method {prop.value}")
                key = self.make(Const(prop.pos, prop.value))
                node = self.member(node, key, optional=optional, pos=prop.pos)
            elif token.is_(BRACKET, "["):
                node = self.index_or_slice(node, optional=False)
            else:
                return node

    def index_or_slice(self, node: Node, *, optional: bool) -> Node:
        bracket = self.cur
        self.next()
        start: Node | None = None
        if not self.cur.is_(OPERATOR, ":"):
            start = self.expression(0)
            if not self.cur.is_(OPERATOR, ":"):
                self.expect(BRACKET, "]")
                return self.member(node, start, optional=optional, pos=bracket.pos)
        self.next()  # the ":"
        end = None if self.cur.is_(BRACKET, "]") else self.expression(0)
        self.expect(BRACKET, "]")
        return self.make(Slice(bracket.pos, node, start, end))

    def member(self, node: Node, key: Node, *, optional: bool, pos: int) -> Node:
        """`a?.b.c` is one chain: nil at `a` makes the whole chain nil (expr's ChainNode)."""
        in_chain = isinstance(node, Chain)
        base = node.inner if isinstance(node, Chain) else node
        member = self.make(Member(pos, base, key, optional))
        return self.make(Chain(pos, member)) if in_chain or optional else member

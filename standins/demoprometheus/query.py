"""The part of PromQL the demo Prometheus answers: instant vector selectors and number literals.

- `name`, `name{label="v", other!="v", re=~"a|b", nre!~"x.*"}` and `{__name__="name", ...}`;
  strings in double quotes, single quotes (with Go escapes) or backticks (raw); regular
  expressions are anchored at both ends, as in Prometheus.
- A number literal (`0.95`, `1e3`, `NaN`, `-Inf`) is a scalar.

Anything else (functions, operators, aggregations, range selectors, `offset`, `@`) raises
`QueryError` with a message in Prometheus' form (`1:5: parse error: ...`); the HTTP layer answers
it as Prometheus answers a query it cannot parse: 400 with `errorType` `bad_data`. Selectors that
could match every series are refused as Prometheus refuses them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from demoprometheus.series import LABEL_NAME, METRIC_NAME, Series

SUPPORTED = (
    "this demo Prometheus answers only instant vector selectors "
    '(such as demo_success_rate{app="x"}) and number literals'
)
_OPERATORS = ("=~", "!~", "!=", "=")
_NUMBER = re.compile(
    r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF]|[nN][aA][nN])(?![a-zA-Z0-9_:.])"
)
_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
}  # fmt: skip


class QueryError(ValueError):
    """A query this server cannot answer; the message is Prometheus-shaped."""


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.label, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        found = re.fullmatch(self.value, actual) is not None
        return found if self.op == "=~" else not found


@dataclass(frozen=True)
class Selector:
    matchers: tuple[Matcher, ...]

    def select(self, series: Iterable[Series]) -> list[Series]:
        return [s for s in series if all(m.matches(s.label_map()) for m in self.matchers)]


@dataclass(frozen=True)
class Number:
    value: float


def parse(query: str) -> Selector | Number:
    """The query's expression; raises `QueryError`."""
    return _Parser(query).expression()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> QueryError:
        at = self.pos if pos is None else pos
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return QueryError(f"{line}:{column}: parse error: {message}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expression(self) -> Selector | Number:
        self.skip_space()
        if not self.peek():
            raise self.error("no expression found in input")
        number = _NUMBER.match(self.text, self.pos)
        if number:
            self.pos = number.end()
            self.end()
            return Number(float(number.group()))
        matchers: list[Matcher] = []
        name = _IDENTIFIER.match(self.text, self.pos)
        if name:
            self.pos = name.end()
            self.skip_space()
            if self.peek() == "(":
                raise self.error(
                    f'function or aggregation "{name.group()}": {SUPPORTED}', name.start()
                )
            matchers.append(Matcher("__name__", "=", name.group()))
        if self.peek() == "{":
            start = self.pos
            braced = self.braces()
            if name and any(m.label == "__name__" for m in braced):
                raise self.error("metric name must not be set twice", start)
            matchers += braced
        elif not name:
            raise self.error(f"unexpected character {self.peek()!r}: {SUPPORTED}")
        self.end()
        if all(m.matches({}) for m in matchers):
            raise self.error("vector selector must contain at least one non-empty matcher", 0)
        return Selector(tuple(matchers))

    def end(self) -> None:
        self.skip_space()
        rest = self.peek()
        if not rest:
            return
        if rest == "[":
            raise self.error(f"range selectors are not supported: {SUPPORTED}")
        raise self.error(f"unexpected {self.text[self.pos :].split()[0]!r}: {SUPPORTED}")

    def braces(self) -> list[Matcher]:
        self.pos += 1  # {
        matchers: list[Matcher] = []
        while True:
            self.skip_space()
            if self.peek() == "}":
                self.pos += 1
                return matchers
            matchers.append(self.matcher())
            self.skip_space()
            if self.peek() == ",":
                self.pos += 1
            elif self.peek() != "}":
                what = repr(self.peek()) if self.peek() else "end of input"
                raise self.error(f'unexpected {what} in label matching, expected "," or "}}"')

    def matcher(self) -> Matcher:
        label = _LABEL.match(self.text, self.pos)
        if not label:
            what = repr(self.peek()) if self.peek() else "end of input"
            raise self.error(f"unexpected {what} in label matching, expected label name")
        self.pos = label.end()
        self.skip_space()
        op = next((o for o in _OPERATORS if self.text.startswith(o, self.pos)), None)
        if op is None:
            raise self.error(f'unexpected {self.peek()!r} in label matching, expected "=", '
                             '"!=", "=~" or "!~"')  # fmt: skip
        self.pos += len(op)
        self.skip_space()
        start = self.pos
        value = self.string()
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as err:
                raise self.error(f"error parsing regexp {value!r}: {err}", start) from None
        return Matcher(label.group(), op, value)

    def string(self) -> str:
        quote = self.peek()
        if quote not in ('"', "'", "`"):
            what = repr(quote) if quote else "end of input"
            raise self.error(f"unexpected {what} in label matching, expected string")
        start = self.pos
        self.pos += 1
        out: list[str] = []
        while True:
            char = self.peek()
            if not char or (char == "\n" and quote != "`"):
                raise self.error("unterminated quoted string", start)
            self.pos += 1
            if char == quote:
                return "".join(out)
            if char == "\\" and quote != "`":
                out.append(self.escape(quote))
            else:
                out.append(char)

    def escape(self, quote: str) -> str:
        char = self.peek()
        self.pos += 1
        if char == quote:
            return quote
        if char in _ESCAPES:
            return _ESCAPES[char]
        digits = {"x": 2, "u": 4, "U": 8}.get(char)
        if digits is not None:
            code = self.text[self.pos : self.pos + digits]
            if len(code) == digits and re.fullmatch(r"[0-9a-fA-F]+", code):
                self.pos += digits
                return chr(int(code, 16))
        raise self.error(f"unknown escape sequence '\\{char}'", self.pos - 2)


def valid_metric_name(name: str) -> bool:
    return METRIC_NAME.match(name) is not None


def valid_label_name(name: str) -> bool:
    return LABEL_NAME.match(name) is not None and not name.startswith("__")

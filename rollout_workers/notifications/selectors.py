"""Kubernetes label selectors in their string form, for the notifications ConfigMap.

The ConfigMap's ``subscriptions`` entries limit themselves to some objects with a ``selector``
string (``env=prod,team in (a,b),!canary``), which notifications-engine parses with
apimachinery's ``labels.Parse``. The controller's other selectors are structured
(``matchLabels``/``matchExpressions``) and the only string parser in the repository belongs to
the embedded API stand-in, which the controller must not import, so this module holds a small
port of ``labels.Parse``: ``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``, ``>``,
``<``, with apimachinery's key and value validation. An empty selector matches everything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
# The lexer's tokens: identifiers run up to whitespace or one of these characters.
_TOKEN = re.compile(r"\s*(==|!=|[=!(),<>]|[^\s=!(),<>]+)")
_OPERATORS = {"=", "==", "!=", "in", "notin", ">", "<"}


class SelectorError(ValueError):
    """A selector string that ``labels.Parse`` would reject."""


@dataclass(frozen=True)
class Requirement:
    """One comma-separated part of a selector."""

    key: str
    operator: str  # "exists", "!", "=", "!=", "in", "notin", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        match self.operator:
            case "exists":
                return present
            case "!":
                return not present
            case "=" | "in":
                return present and value in self.values
            case "!=" | "notin":
                return not present or value not in self.values
            case _:  # ">" or "<": the label must be an integer
                try:
                    have = int(value)
                except ValueError:
                    return False
                want = int(self.values[0])
                return have > want if self.operator == ">" else have < want


@dataclass(frozen=True)
class Selector:
    """A parsed selector: all its requirements must match."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)


def _validate_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise SelectorError(f"invalid label key {key!r}: bad prefix")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise SelectorError(f"invalid label key {key!r}")


def _validate_value(value: str) -> None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise SelectorError(f"invalid label value {value!r}")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # only trailing whitespace is left
            break
        out.append(m.group(1))
        pos = m.end()
    return out


def parse_selector(text: str) -> Selector:
    """Parse ``text`` as apimachinery's ``labels.Parse``; ``SelectorError`` if it is invalid."""
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise SelectorError(f"unexpected end of selector {self.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Selector:
        reqs: list[Requirement] = []
        while self.peek() is not None:
            reqs.append(self.requirement())
            if self.peek() is None:
                break
            if self.take() != ",":
                raise SelectorError(f"expected ',' in selector {self.text!r}")
            if self.peek() is None:
                raise SelectorError(f"unexpected end of selector {self.text!r}")
        return Selector(tuple(reqs))

    def key(self) -> str:
        key = self.take()
        _validate_key(key)
        return key

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return Requirement(self.key(), "!")
        key = self.key()
        if self.peek() in {None, ","}:
            return Requirement(key, "exists")
        op = self.take()
        if op not in _OPERATORS:
            raise SelectorError(f"unknown operator {op!r} in selector {self.text!r}")
        if op in {"in", "notin"}:
            values = self.values(op)
            for v in values:
                _validate_value(v)
            return Requirement(key, op, values)
        if op in {">", "<"}:
            value = self.take()
            try:
                int(value)
            except ValueError:
                raise SelectorError(f"for {op!r}, {value!r} is not an integer") from None
            return Requirement(key, op, (value,))
        # "key=" selects the empty value; a "," after it starts the next requirement
        nxt = self.peek()
        value = "" if nxt in {None, ","} else self.take()
        if value in {"=", "==", "!=", "!", "(", ")", "<", ">"}:
            raise SelectorError(f"unexpected {value!r} in selector {self.text!r}")
        _validate_value(value)
        return Requirement(key, "!=" if op == "!=" else "=", (value,))

    def values(self, op: str) -> tuple[str, ...]:
        if self.take() != "(":
            raise SelectorError(f"expected '(' after {op!r} in selector {self.text!r}")
        values: list[str] = []
        while True:
            tok = self.take()
            if tok in {",", ")"}:  # an empty value; "()" is the set {""} in apimachinery
                values.append("")
            else:
                values.append(tok)
                tok = self.take()
            if tok == ")":
                return tuple(values)
            if tok != ",":
                raise SelectorError(f"expected ',' or ')' in selector {self.text!r}")

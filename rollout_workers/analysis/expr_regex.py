"""A small linear-time regular-expression matcher for the `matches` operator.

expr-lang evaluates `matches` with Go's RE2, which never backtracks. Python's `re` does, so a
tenant-written pattern such as `(a+)+$` or `a*a*a*a*c` could pin a worker for hours, and a
running `re` match cannot be interrupted from Python. This module therefore compiles the
RE2 subset that metric conditions use into a Thompson NFA and simulates it breadth-first: the
work is at most (pattern states x subject length), and it is charged to the caller's step
budget as it goes, so a match is bounded exactly like the rest of an evaluation.

Supported (RE2 semantics, ASCII classes as in Go): literals, `.`, `[...]` classes with ranges
and negation, `\\d \\D \\w \\W \\s \\S`, `\\b \\B \\A \\z`, `^ $`, groups `(...)`, `(?:...)`,
`(?P<name>...)`, `(?<name>...)`, alternation `|`, quantifiers `* + ? {n} {n,} {n,m}` (greedy or
lazy, which only matters for submatches; `matches` only asks whether there is one), and
leading flag groups `(?i)`, `(?s)`, `(?m)`. Anything else (Unicode classes `\\p{..}`, POSIX
classes, flag groups in the middle of a pattern) is rejected with `RegexError` rather than
silently meaning something else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

__all__ = ["RegexError", "RegexProgram", "compile_regex"]

MAX_REPEAT = 1000  # RE2's own bound on {n,m}


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


class RegexError(ValueError):
    """The pattern is malformed, unsupported, or too large."""


# --- pattern AST -------------------------------------------------------------------------------

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_DIGIT_RANGES = ((ord("0"), ord("9")),)
_WORD_RANGES = ((ord("0"), ord("9")), (ord("A"), ord("Z")), (ord("_"), ord("_")), (97, 122))
_SPACE_RANGES = ((9, 10), (12, 13), (32, 32))


@dataclass(frozen=True, slots=True)
class _CharClass:
    ranges: tuple[tuple[int, int], ...]
    negated: bool
    fold: bool

    def test(self, ch: str) -> bool:
        hit = self._in(ord(ch))
        if not hit and self.fold:
            lower, upper = ch.lower(), ch.upper()
            hit = (len(lower) == 1 and self._in(ord(lower))) or (
                len(upper) == 1 and self._in(ord(upper))
            )
        return hit != self.negated

    def _in(self, code: int) -> bool:
        return any(lo <= code <= hi for lo, hi in self.ranges)


@dataclass(frozen=True, slots=True)
class _Lit:
    cls: _CharClass


@dataclass(frozen=True, slots=True)
class _Assert:
    kind: str  # "^", "$", "A", "z", "b", "B"


@dataclass(frozen=True, slots=True)
class _Concat:
    items: tuple[_Re, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    options: tuple[_Re, ...]


@dataclass(frozen=True, slots=True)
class _Repeat:
    item: _Re
    low: int
    high: int | None  # None: unbounded


_Re: TypeAlias = "_Lit | _Assert | _Concat | _Alt | _Repeat"


class _PatternParser:
    def __init__(self, pattern: str, max_depth: int) -> None:
        self.src = pattern
        self.pos = 0
        self.fold = False
        self.dotall = False
        self.multiline = False
        self.depth = 0
        self.max_depth = max_depth

    def parse(self) -> _Re:
        self._leading_flags()
        node = self._alternation()
        if self.pos < len(self.src):
            raise RegexError(f"unexpected ) at offset {self.pos}")
        return node

    def _leading_flags(self) -> None:
        while self.src.startswith("(?", self.pos):
            end = self.src.find(")", self.pos)
            flags = self.src[self.pos + 2 : end] if end != -1 else ""
            if not flags or any(f not in "ism" for f in flags):
                return
            self.fold = self.fold or "i" in flags
            self.dotall = self.dotall or "s" in flags
            self.multiline = self.multiline or "m" in flags
            self.pos = end + 1

    def _peek(self) -> str:
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def _alternation(self) -> _Re:
        self.depth += 1
        if self.depth > self.max_depth:
            raise RegexError("pattern nesting too deep")
        options = [self._concat()]
        while self._peek() == "|":
            self.pos += 1
            options.append(self._concat())
        self.depth -= 1
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def _concat(self) -> _Re:
        items: list[_Re] = []
        while self._peek() not in ("", "|", ")"):
            items.append(self._quantified())
        return items[0] if len(items) == 1 else _Concat(tuple(items))

    def _quantified(self) -> _Re:
        atom = self._atom()
        quantified = False
        while True:
            ch = self._peek()
            if ch in ("*", "+", "?"):
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
                self.pos += 1
            elif ch == "{" and (bounds := self._braces()) is not None:
                low, high = bounds
            else:
                return atom
            if quantified:
                raise RegexError("invalid nested repetition operator")
            if isinstance(atom, _Assert):
                raise RegexError("missing argument to repetition operator")
            quantified = True
            if self._peek() == "?":  # lazy: same language, same answer for a boolean match
                self.pos += 1
            atom = _Repeat(atom, low, high)

    def _braces(self) -> tuple[int, int | None] | None:
        end = self.src.find("}", self.pos)
        if end == -1:
            return None
        body = self.src[self.pos + 1 : end]
        low_text, comma, high_text = body.partition(",")
        if not _digits(low_text) or not (high_text == "" or _digits(high_text)):
            return None  # Go treats a malformed {..} as literal text
        if len(low_text) > 4 or len(high_text) > 4:
            raise RegexError("invalid repeat count")
        low = int(low_text)
        high: int | None = low if not comma else (int(high_text) if high_text else None)
        if low > MAX_REPEAT or (high is not None and (high > MAX_REPEAT or high < low)):
            raise RegexError("invalid repeat count")
        self.pos = end + 1
        return low, high

    def _atom(self) -> _Re:
        ch = self._peek()
        if ch in ("*", "+", "?"):
            raise RegexError("missing argument to repetition operator")
        self.pos += 1
        if ch == "(":
            if self.src.startswith("?:", self.pos):
                self.pos += 2
            elif self.src.startswith("?P<", self.pos) or self.src.startswith("?<", self.pos):
                end = self.src.find(">", self.pos)
                if end == -1:
                    raise RegexError("invalid named capture")
                self.pos = end + 1
            elif self._peek() == "?":
                raise RegexError("unsupported group syntax")
            node = self._alternation()
            if self._peek() != ")":
                raise RegexError("missing closing )")
            self.pos += 1
            return node
        if ch == ".":
            excluded = () if self.dotall else ((10, 10),)
            return _Lit(_CharClass(excluded, negated=True, fold=False))
        if ch == "^":
            return _Assert("^")
        if ch == "$":
            return _Assert("$")
        if ch == "[":
            return _Lit(self._bracket())
        if ch == "\\":
            return self._escape(in_class=False)
        return _Lit(self._char(ord(ch)))

    def _char(self, code: int) -> _CharClass:
        return _CharClass(((code, code),), negated=False, fold=self.fold)

    def _escape(self, *, in_class: bool) -> _Lit | _Assert:
        if self.pos >= len(self.src):
            raise RegexError("trailing backslash at end of expression")
        ch = self.src[self.pos]
        self.pos += 1
        classes = {"d": _DIGIT_RANGES, "w": _WORD_RANGES, "s": _SPACE_RANGES}
        if ch.lower() in classes:
            return _Lit(_CharClass(classes[ch.lower()], negated=ch.isupper(), fold=False))
        simple = {"n": 10, "t": 9, "r": 13, "f": 12, "v": 11, "a": 7}
        if ch in simple:
            return _Lit(self._char(simple[ch]))
        if not in_class and ch in "bBAz":
            return _Assert(ch)
        if ch == "x":
            return _Lit(self._char(self._hex_escape()))
        if ch.isascii() and not ch.isalnum():
            return _Lit(self._char(ord(ch)))
        raise RegexError(f"invalid or unsupported escape sequence \\{ch}")

    def _hex_escape(self) -> int:
        if self._peek() == "{":
            end = self.src.find("}", self.pos)
            digits = self.src[self.pos + 1 : end] if end != -1 else ""
            self.pos = end + 1
        else:
            digits = self.src[self.pos : self.pos + 2]
            self.pos += 2
        if not digits or len(digits) > 6 or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise RegexError("invalid escape sequence \\x")
        code = int(digits, 16)
        if code > 0x10FFFF:
            raise RegexError("invalid escape sequence \\x")
        return code

    def _bracket(self) -> _CharClass:
        negated = self._peek() == "^"
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while True:
            ch = self._peek()
            if ch == "":
                raise RegexError("missing closing ]")
            if ch == "]" and not first:
                self.pos += 1
                break
            first = False
            if self.src.startswith("[:", self.pos):
                raise RegexError("POSIX character classes are not supported")
            low = self._class_char(ranges)
            if low is None:
                continue
            if self._peek() == "-" and self.src[self.pos + 1 : self.pos + 2] not in ("]", ""):
                self.pos += 1
                high = self._class_char(ranges)
                if high is None or high < low:
                    raise RegexError("invalid character class range")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        return _CharClass(tuple(ranges), negated=negated, fold=self.fold)

    def _class_char(self, ranges: list[tuple[int, int]]) -> int | None:
        """One class member: a code point, or None when it added a whole class (\\d...)."""
        ch = self.src[self.pos]
        self.pos += 1
        if ch != "\\":
            return ord(ch)
        lit = self._escape(in_class=True)
        assert isinstance(lit, _Lit)
        if (
            lit.cls.negated
            or len(lit.cls.ranges) != 1
            or lit.cls.ranges[0][0] != lit.cls.ranges[0][1]
        ):
            if lit.cls.negated:
                raise RegexError("negated classes inside [...] are not supported")
            ranges.extend(lit.cls.ranges)
            return None
        return lit.cls.ranges[0][0]


# --- compilation to a Thompson NFA -----------------------------------------------------------

_CHAR, _SPLIT, _JMP, _ASSERT, _MATCH = range(5)


@dataclass(slots=True)
class _Inst:
    op: int
    cls: _CharClass | None = None
    x: int = 0
    y: int = 0
    kind: str = ""


class _Compiler:
    def __init__(self, max_states: int) -> None:
        self.prog: list[_Inst] = []
        self.max_states = max_states

    def emit(self, inst: _Inst) -> int:
        if len(self.prog) >= self.max_states:
            raise RegexError("pattern compiles to too many states")
        self.prog.append(inst)
        return len(self.prog) - 1

    def compile(self, node: _Re) -> None:
        if isinstance(node, _Lit):
            self.emit(_Inst(_CHAR, cls=node.cls))
        elif isinstance(node, _Assert):
            self.emit(_Inst(_ASSERT, kind=node.kind))
        elif isinstance(node, _Concat):
            for item in node.items:
                self.compile(item)
        elif isinstance(node, _Alt):
            jumps: list[int] = []
            for option in node.options[:-1]:
                split = self.emit(_Inst(_SPLIT))
                self.prog[split].x = len(self.prog)
                self.compile(option)
                jumps.append(self.emit(_Inst(_JMP)))
                self.prog[split].y = len(self.prog)
            self.compile(node.options[-1])
            for jump in jumps:
                self.prog[jump].x = len(self.prog)
        else:
            for _ in range(node.low):
                self.compile(node.item)
            if node.high is None:
                split = self.emit(_Inst(_SPLIT))
                self.prog[split].x = len(self.prog)
                self.compile(node.item)
                self.emit(_Inst(_JMP, x=split))
                self.prog[split].y = len(self.prog)
            else:
                splits: list[int] = []
                for _ in range(node.high - node.low):
                    splits.append(self.emit(_Inst(_SPLIT)))
                    self.prog[splits[-1]].x = len(self.prog)
                    self.compile(node.item)
                for split in splits:
                    self.prog[split].y = len(self.prog)


class RegexProgram:
    """A compiled pattern; `search` is RE2's unanchored MatchString."""

    def __init__(self, prog: list[_Inst], *, multiline: bool) -> None:
        self._prog = prog
        self._multiline = multiline

    def _holds(self, kind: str, subject: str, i: int) -> bool:
        before = subject[i - 1] if i > 0 else ""
        after = subject[i] if i < len(subject) else ""
        if kind in ("^", "A"):
            return i == 0 or (kind == "^" and self._multiline and before == "\n")
        if kind in ("$", "z"):
            return i == len(subject) or (kind == "$" and self._multiline and after == "\n")
        boundary = (before in _WORD and before != "") != (after in _WORD and after != "")
        return boundary if kind == "b" else not boundary

    def _add(self, threads: list[int], marks: list[int], pc: int, subject: str, i: int) -> bool:
        """Follow epsilon edges from pc at position i; True once MATCH is reachable."""
        stack = [pc]
        prog = self._prog
        while stack:
            pc = stack.pop()
            if marks[pc] == i:
                continue
            marks[pc] = i
            inst = prog[pc]
            if inst.op == _CHAR:
                threads.append(pc)
            elif inst.op == _MATCH:
                return True
            elif inst.op == _JMP:
                stack.append(inst.x)
            elif inst.op == _SPLIT:
                stack.append(inst.y)
                stack.append(inst.x)
            elif self._holds(inst.kind, subject, i):
                stack.append(pc + 1)
        return False

    def search(self, subject: str, charge: Callable[[int], None]) -> bool:
        prog = self._prog
        marks = [-1] * len(prog)
        threads: list[int] = []
        for i in range(len(subject) + 1):
            if self._add(threads, marks, 0, subject, i):
                return True
            charge(1 + len(threads) // 8)
            if i == len(subject):
                break
            ch = subject[i]
            following: list[int] = []
            for pc in threads:
                cls = prog[pc].cls
                if (
                    cls is not None
                    and cls.test(ch)
                    and self._add(following, marks, pc + 1, subject, i + 1)
                ):
                    return True
            threads = following
        return False


def compile_regex(pattern: str, *, max_length: int, max_states: int) -> RegexProgram:
    """Compile `pattern`; raises RegexError if it is malformed, unsupported or too big."""
    if len(pattern) > max_length:
        raise RegexError(f"pattern longer than {max_length} characters")
    parser = _PatternParser(pattern, max_depth=32)
    tree = parser.parse()
    compiler = _Compiler(max_states)
    compiler.compile(tree)
    compiler.emit(_Inst(_MATCH))
    return RegexProgram(compiler.prog, multiline=parser.multiline)

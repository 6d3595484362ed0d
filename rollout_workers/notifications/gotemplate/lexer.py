"""Go text/template's lexer (text/template/parse/lex.go), state for state."""

from __future__ import annotations

import enum
import unicodedata
from dataclasses import dataclass
from typing import Any

from rollout_workers.notifications.gotemplate.gofmt import go_quote


class T(enum.IntEnum):
    ERROR = 0
    BOOL = 1
    CHAR = 2
    CHAR_CONSTANT = 3
    COMMENT = 4
    COMPLEX = 5
    ASSIGN = 6
    DECLARE = 7
    EOF = 8
    FIELD = 9
    IDENTIFIER = 10
    LEFT_DELIM = 11
    LEFT_PAREN = 12
    NUMBER = 13
    PIPE = 14
    RAW_STRING = 15
    RIGHT_DELIM = 16
    RIGHT_PAREN = 17
    SPACE = 18
    STRING = 19
    TEXT = 20
    VARIABLE = 21
    KEYWORD = 22
    BLOCK = 23
    BREAK = 24
    CONTINUE = 25
    DOT = 26
    DEFINE = 27
    ELSE = 28
    END = 29
    IF = 30
    NIL = 31
    RANGE = 32
    TEMPLATE = 33
    WITH = 34


KEYWORDS = {
    ".": T.DOT,
    "block": T.BLOCK,
    "break": T.BREAK,
    "continue": T.CONTINUE,
    "define": T.DEFINE,
    "else": T.ELSE,
    "end": T.END,
    "if": T.IF,
    "range": T.RANGE,
    "nil": T.NIL,
    "template": T.TEMPLATE,
    "with": T.WITH,
}

LEFT = "{{"
RIGHT = "}}"
SPACE_CHARS = " \t\r\n"


@dataclass(frozen=True)
class Item:
    typ: T
    pos: int
    val: str
    line: int

    def __str__(self) -> str:
        if self.typ == T.EOF:
            return "EOF"
        if self.typ == T.ERROR:
            return self.val
        if self.typ > T.KEYWORD:
            return f"<{self.val}>"
        if len(self.val.encode()) > 10:
            return go_quote(_first_bytes(self.val, 10)) + "..."
        return go_quote(self.val)


def _first_bytes(s: str, n: int) -> str:
    # %.10q truncates the string to 10 runes before quoting.
    return s[:n]


def is_space(c: str) -> bool:
    return c in (" ", "\t", "\r", "\n")


def is_alnum(c: str) -> bool:
    if not c:
        return False
    return c == "_" or c.isalpha() or unicodedata.category(c) == "Nd"


def _has_left_trim(s: str) -> bool:
    return len(s) >= 2 and s[0] == "-" and is_space(s[1])


def _has_right_trim(s: str) -> bool:
    return len(s) >= 2 and is_space(s[0]) and s[1] == "-"


class Lexer:
    def __init__(self, text: str, break_ok: bool = True, continue_ok: bool = True) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.at_eof = False
        self.paren_depth = 0
        self.line = 1
        self.start_line = 1
        self.inside_action = False
        self.break_ok = break_ok
        self.continue_ok = continue_ok
        self.item = Item(T.EOF, 0, "EOF", 1)

    # -- primitives
    def next(self) -> str:
        if self.pos >= len(self.input):
            self.at_eof = True
            return ""
        c = self.input[self.pos]
        self.pos += 1
        if c == "\n":
            self.line += 1
        return c

    def peek(self) -> str:
        c = self.next()
        self.backup()
        return c

    def backup(self) -> None:
        if not self.at_eof and self.pos > 0:
            self.pos -= 1
            if self.input[self.pos] == "\n":
                self.line -= 1

    def this_item(self, t: T) -> Item:
        i = Item(t, self.start, self.input[self.start : self.pos], self.start_line)
        self.start = self.pos
        self.start_line = self.line
        return i

    def emit(self, t: T) -> None:
        self.item = self.this_item(t)

    def ignore(self) -> None:
        self.line += self.input.count("\n", self.start, self.pos)
        self.start = self.pos
        self.start_line = self.line

    def accept(self, valid: str) -> bool:
        c = self.next()
        if c and c in valid:
            return True
        self.backup()
        return False

    def accept_run(self, valid: str) -> None:
        while True:
            c = self.next()
            if not c or c not in valid:
                break
        self.backup()

    def errorf(self, msg: str) -> None:
        self.item = Item(T.ERROR, self.start, msg, self.start_line)
        self.start = 0
        self.pos = 0
        self.input = ""

    def next_item(self) -> Item:
        self.item = Item(T.EOF, self.pos, "EOF", self.start_line)
        state: Any = self.lex_inside_action if self.inside_action else self.lex_text
        while state is not None:
            state = state()
        return self.item

    # -- states (each returns the next state, or None once an item is ready)
    def lex_text(self) -> object:
        x = self.input.find(LEFT, self.pos)
        if x >= 0:
            if x > self.pos:
                self.pos = x
                trim = 0
                delim_end = self.pos + len(LEFT)
                if _has_left_trim(self.input[delim_end : delim_end + 2]):
                    seg = self.input[self.start : self.pos]
                    trim = len(seg) - len(seg.rstrip(SPACE_CHARS))
                self.pos -= trim
                self.line += self.input.count("\n", self.start, self.pos)
                i = self.this_item(T.TEXT)
                self.pos += trim
                self.ignore()
                if i.val:
                    self.item = i
                    return None
            return self.lex_left_delim
        self.pos = len(self.input)
        if self.pos > self.start:
            self.line += self.input.count("\n", self.start, self.pos)
            self.emit(T.TEXT)
            return None
        self.emit(T.EOF)
        return None

    def at_right_delim(self) -> tuple[bool, bool]:
        s = self.input
        p = self.pos
        if _has_right_trim(s[p : p + 2]) and s.startswith(RIGHT, p + 2):
            return True, True
        if s.startswith(RIGHT, p):
            return True, False
        return False, False

    def lex_left_delim(self) -> object:
        self.pos += len(LEFT)
        trim = _has_left_trim(self.input[self.pos : self.pos + 2])
        after = 2 if trim else 0
        if self.input.startswith("/*", self.pos + after):
            self.pos += after
            self.ignore()
            return self.lex_comment
        i = self.this_item(T.LEFT_DELIM)
        self.inside_action = True
        self.pos += after
        self.ignore()
        self.paren_depth = 0
        self.item = i
        return None

    def lex_comment(self) -> object:
        self.pos += 2
        x = self.input.find("*/", self.pos)
        if x < 0:
            self.errorf("unclosed comment")
            return None
        self.pos = x + 2
        delim, trim = self.at_right_delim()
        if not delim:
            self.errorf("comment ends before closing delimiter")
            return None
        self.line += self.input.count("\n", self.start, self.pos)
        self.this_item(T.COMMENT)
        if trim:
            self.pos += 2
        self.pos += len(RIGHT)
        if trim:
            rest = self.input[self.pos :]
            self.pos += len(rest) - len(rest.lstrip(SPACE_CHARS))
        self.ignore()
        return self.lex_text

    def lex_right_delim(self) -> object:
        _, trim = self.at_right_delim()
        if trim:
            self.pos += 2
            self.ignore()
        self.pos += len(RIGHT)
        i = self.this_item(T.RIGHT_DELIM)
        if trim:
            rest = self.input[self.pos :]
            self.pos += len(rest) - len(rest.lstrip(SPACE_CHARS))
            self.ignore()
        self.inside_action = False
        self.item = i
        return None

    def lex_inside_action(self) -> object:
        delim, _ = self.at_right_delim()
        if delim:
            if self.paren_depth == 0:
                return self.lex_right_delim
            self.errorf("unclosed left paren")
            return None
        r = self.next()
        if r == "":
            self.errorf("unclosed action")
        elif is_space(r):
            self.backup()
            return self.lex_space
        elif r == "=":
            self.emit(T.ASSIGN)
        elif r == ":":
            if self.next() != "=":
                self.errorf("expected :=")
            else:
                self.emit(T.DECLARE)
        elif r == "|":
            self.emit(T.PIPE)
        elif r == '"':
            return self.lex_quote
        elif r == "`":
            return self.lex_raw_quote
        elif r == "$":
            return self.lex_variable
        elif r == "'":
            return self.lex_char
        elif r == "." and self.pos < len(self.input) and not ("0" <= self.input[self.pos] <= "9"):
            return self.lex_field
        elif r in "+-." or "0" <= r <= "9":
            self.backup()
            return self.lex_number
        elif is_alnum(r):
            self.backup()
            return self.lex_identifier
        elif r == "(":
            self.paren_depth += 1
            self.emit(T.LEFT_PAREN)
        elif r == ")":
            self.paren_depth -= 1
            if self.paren_depth < 0:
                self.errorf("unexpected right paren")
            else:
                self.emit(T.RIGHT_PAREN)
        elif ord(r) < 128 and r.isprintable():
            self.emit(T.CHAR)
        else:
            self.errorf(f"unrecognized character in action: {_fmt_rune(r)}")
        return None

    def lex_space(self) -> object:
        n = 0
        while True:
            r = self.peek()
            if not is_space(r):
                break
            self.next()
            n += 1
        s = self.input
        if _has_right_trim(s[self.pos - 1 : self.pos + 1]) and s.startswith(RIGHT, self.pos + 1):
            self.backup()
            if n == 1:
                return self.lex_right_delim
        self.emit(T.SPACE)
        return None

    def lex_identifier(self) -> object:
        while True:
            r = self.next()
            if is_alnum(r):
                continue
            self.backup()
            word = self.input[self.start : self.pos]
            if not self.at_terminator():
                self.errorf(f"bad character {_fmt_rune(r)}")
                return None
            kw = KEYWORDS.get(word)
            if kw is not None and kw > T.KEYWORD:
                if (kw == T.BREAK and not self.break_ok) or (
                    kw == T.CONTINUE and not self.continue_ok
                ):
                    self.emit(T.IDENTIFIER)
                else:
                    self.emit(kw)
            elif word[0] == ".":
                self.emit(T.FIELD)
            elif word in ("true", "false"):
                self.emit(T.BOOL)
            else:
                self.emit(T.IDENTIFIER)
            return None

    def lex_field(self) -> object:
        return self._field_or_variable(T.FIELD)

    def lex_variable(self) -> object:
        if self.at_terminator():
            self.emit(T.VARIABLE)
            return None
        return self._field_or_variable(T.VARIABLE)

    def _field_or_variable(self, typ: T) -> object:
        if self.at_terminator():
            self.emit(T.VARIABLE if typ == T.VARIABLE else T.DOT)
            return None
        r = ""
        while True:
            r = self.next()
            if not is_alnum(r):
                self.backup()
                break
        if not self.at_terminator():
            self.errorf(f"bad character {_fmt_rune(r)}")
            return None
        self.emit(typ)
        return None

    def at_terminator(self) -> bool:
        r = self.peek()
        if is_space(r):
            return True
        if r in ("", ".", ",", "|", ":", ")", "("):
            return True
        return self.input.startswith(RIGHT, self.pos)

    def lex_char(self) -> object:
        return self._lex_escaped("'", "unterminated character constant", T.CHAR_CONSTANT)

    def lex_number(self) -> object:
        if not self.scan_number():
            self.errorf(f"bad number syntax: {go_quote(self.input[self.start : self.pos])}")
            return None
        sign = self.peek()
        if sign in ("+", "-"):
            if not self.scan_number() or self.input[self.pos - 1] != "i":
                self.errorf(f"bad number syntax: {go_quote(self.input[self.start : self.pos])}")
                return None
            self.emit(T.COMPLEX)
            return None
        self.emit(T.NUMBER)
        return None

    def scan_number(self) -> bool:
        self.accept("+-")
        digits = "0123456789_"
        if self.accept("0"):
            if self.accept("xX"):
                digits = "0123456789abcdefABCDEF_"
            elif self.accept("oO"):
                digits = "01234567_"
            elif self.accept("bB"):
                digits = "01_"
        self.accept_run(digits)
        if self.accept("."):
            self.accept_run(digits)
        if len(digits) == 11 and self.accept("eE"):
            self.accept("+-")
            self.accept_run("0123456789_")
        if len(digits) == 23 and self.accept("pP"):
            self.accept("+-")
            self.accept_run("0123456789_")
        self.accept("i")
        if is_alnum(self.peek()):
            self.next()
            return False
        return True

    def lex_quote(self) -> object:
        return self._lex_escaped('"', "unterminated quoted string", T.STRING)

    def _lex_escaped(self, end: str, unterminated: str, token: T) -> object:
        """A quoted literal with backslash escapes, up to `end` on the same line."""
        while True:
            r = self.next()
            if r == "\\":
                if self.next() not in ("", "\n"):
                    continue
                self.errorf(unterminated)
                return None
            if r in ("", "\n"):
                self.errorf(unterminated)
                return None
            if r == end:
                break
        self.emit(token)
        return None

    def lex_raw_quote(self) -> object:
        while True:
            r = self.next()
            if r == "":
                self.errorf("unterminated raw quoted string")
                return None
            if r == "`":
                break
        self.emit(T.RAW_STRING)
        return None


def _fmt_rune(r: str) -> str:
    if r == "":
        return "U+FFFFFFFFFFFFFFFF"
    cp = ord(r)
    s = f"U+{cp:04X}"
    if r.isprintable():
        s += f" '{r}'"
    return s

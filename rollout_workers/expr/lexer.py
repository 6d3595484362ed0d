"""The tokenizer of the expr-lang condition language: source text to tokens.

It mirrors expr-lang's own lexer (token kinds, word operators, string escapes, number syntax,
comments), so that a condition splits into the same tokens, and fails with the same messages, as
under Argo Rollouts. Separate from the parser because it knows characters, not grammar: the
parser (`parser`) reads only the `Token`s made here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, NoReturn

from rollout_workers.expr.values import ExpressionError

__all__ = ["BRACKET", "EOF", "IDENT", "NUMBER", "OPERATOR", "STRING", "Lexer", "Token"]

IDENT, NUMBER, STRING, OPERATOR, BRACKET, EOF = (
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
class Token:
    """One token: its kind (one of the constants above), its text (a string literal's value,
    unescaped) and its offset in the source, where an error's caret points."""

    kind: str
    value: str
    pos: int

    def __str__(self) -> str:
        if self.kind == EOF:
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


class Lexer:
    """Splits one source into tokens ending with EOF (`run`); raises ExpressionError at the
    offending character."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0
        self.tokens: list[Token] = []

    def error(self, message: str, position: int) -> NoReturn:
        raise ExpressionError(message, source=self.src, position=position)

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.src[index] if index < len(self.src) else ""

    def run(self) -> list[Token]:
        src = self.src
        while True:
            while self.pos < len(src) and src[self.pos].isspace():
                self.pos += 1
            if self.pos >= len(src):
                self.tokens.append(Token(EOF, "", len(src)))
                return self.tokens
            start = self.pos
            ch = src[start]
            nxt = self.peek(1)
            if ch in "'\"":
                self.tokens.append(Token(STRING, self.string(ch), start))
            elif ch == "`":
                end = src.find("`", start + 1)
                if end == -1:
                    self.error("literal not terminated", start)
                self.tokens.append(Token(STRING, src[start + 1 : end], start))
                self.pos = end + 1
            elif "0" <= ch <= "9" or (ch == "." and "0" <= nxt <= "9"):
                self.number()
            elif ch == ".":
                self.emit(OPERATOR, 2 if nxt == "." else 1)
            elif ch == "?":
                self.emit(OPERATOR, 2 if nxt in (".", "?") and nxt else 1)
            elif ch == "/" and nxt == "/":
                end = src.find("\n", start)
                self.pos = len(src) if end == -1 else end
            elif ch == "/" and nxt == "*":
                end = src.find("*/", start + 2)
                if end == -1:
                    self.error("unclosed comment", start)
                self.pos = end + 2
            elif ch == "#":
                self.emit(OPERATOR, 1)
                word_end = self.pos
                while word_end < len(src) and _is_alnum(src[word_end]):
                    word_end += 1
                if word_end > self.pos:
                    self.tokens.append(Token(IDENT, src[self.pos : word_end], self.pos))
                    self.pos = word_end
            elif ch in "|:":
                self.emit(OPERATOR, 2 if nxt == ch else 1)
            elif ch in "([{)]}":
                self.emit(BRACKET, 1)
            elif ch in ",;%+-^/":
                self.emit(OPERATOR, 1)
            elif ch in "&!=*<>":
                self.emit(OPERATOR, 2 if nxt and nxt in "&=*" else 1)
            elif _is_alnum(ch):
                end = start
                while end < len(src) and _is_alnum(src[end]):
                    end += 1
                word = src[start:end]
                kind = OPERATOR if word in _WORD_OPERATORS else IDENT
                self.tokens.append(Token(kind, word, start))
                self.pos = end
            else:
                self.error(f"unrecognized character: U+{ord(ch):04X} {ch!r}", start)

    def emit(self, kind: str, length: int) -> None:
        self.tokens.append(Token(kind, self.src[self.pos : self.pos + length], self.pos))
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
        self.tokens.append(Token(NUMBER, self.src[start : self.pos], start))

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

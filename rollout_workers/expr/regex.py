"""Regular expressions for the `matches` operator: RE2, as in expr-lang.

expr-lang evaluates `matches` with Go's regexp package, an implementation of RE2: it never
backtracks, so a tenant-written pattern such as `(a+)+$` or `a*a*a*a*c` matches in time linear
in the subject, where Python's `re` could pin a worker for hours (and a running `re` match
cannot be interrupted from Python). This module compiles patterns with google-re2, the binding
of the C++ RE2 library Go's package was ported from, so conditions get the same syntax and
semantics as under Argo Rollouts:

- Perl classes `\\d \\w \\s`, `\\b` and POSIX classes (`[[:alpha:]]`) are ASCII; Unicode classes
  (`\\pL`, `\\p{Greek}`, `\\PN`) and `(?i)` case folding are Unicode;
- flags `(?i)`, `(?m)`, `(?s)`, `(?U)`, also in the middle of a pattern or scoped (`(?i:...)`);
- `^`/`$` are the text's ends unless `(?m)`; `\\A` and `\\z` always are (there is no `\\Z`);
- `.` does not match a newline unless `(?s)`; repetition counts are at most 1000;
- no backreferences, lookaround or atomic groups: RE2 cannot run them in linear time, so they
  are errors, as in Go.

`search` is an unanchored search, like Go's `MatchString` that expr-lang calls.

The one RE2 construct C++ accepts and Go does not, `\\C` (any single byte), is rejected here.
Subjects are matched as Unicode text (RE2's UTF-8 mode); a lone surrogate, which only a JSON
escape can put in a Python string, is matched as U+FFFD, as Go decodes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

__all__ = ["RegexError", "RegexProgram", "compile_regex"]

#: RE2's memory budget for one compiled pattern (its program and the DFA cache that speeds up
#: matching; a search that fills the cache falls back to RE2's NFA, which is still linear).
MAX_MEMORY = 4 << 20


class RegexError(ValueError):
    """The pattern is malformed, uses syntax RE2 does not have, or is too large."""


class _Compiled(Protocol):
    """The part of `re2._Regexp` used here."""

    programsize: int

    def search(self, text: str) -> Any: ...


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are raised to the caller, not printed to stderr
    options.max_mem = MAX_MEMORY
    return options


_OPTIONS = _options()


def _reject_non_go_syntax(pattern: str) -> None:
    """Raise for what C++ RE2 accepts and Go's regexp does not (`\\C`)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\" and i + 1 < len(pattern):
            if pattern[i + 1] == "C":
                raise RegexError("invalid escape sequence: \\C")
            i += 2
        else:
            i += 1


def _message(err: Exception) -> str:
    text = err.args[0] if err.args else str(err)
    message = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    escape = "invalid escape sequence: \\"
    if message.startswith(escape) and message[len(escape) :][:1].isdigit():
        message += " (RE2 has no backreferences)"
    elif message.startswith("invalid perl operator: (?"):
        message += " (RE2 has no lookaround or atomic groups)"
    return message


def _without_surrogates(text: str) -> str:
    """The text with each lone surrogate (not encodable as UTF-8) replaced by U+FFFD."""
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


class RegexProgram:
    """A compiled pattern; `search` is RE2's unanchored match, as Go's `MatchString`."""

    __slots__ = ("_regexp",)

    def __init__(self, regexp: _Compiled) -> None:
        self._regexp = regexp

    @property
    def size(self) -> int:
        """RE2's program size (instructions)."""
        return self._regexp.programsize

    def search(self, subject: str, charge: Callable[[int], None]) -> bool:
        """Whether the pattern matches anywhere in `subject`.

        RE2 runs in time linear in the subject and cannot be interrupted, so the work is charged
        before it starts: one step per character, as the evaluator charges other string work.
        """
        charge(1 + len(subject))
        try:
            return self._regexp.search(subject) is not None
        except UnicodeEncodeError:
            return self._regexp.search(_without_surrogates(subject)) is not None


def compile_regex(pattern: str, *, max_length: int, max_states: int) -> RegexProgram:
    """Compile `pattern`; raises RegexError if it is malformed, unsupported or too big.

    `max_length` bounds the pattern's characters, `max_states` RE2's program size (about two
    instructions per repeated item: `[[:alpha:]]{1,1000}` is 2003), and RE2's MAX_MEMORY the
    memory its compilation may take.
    """
    if len(pattern) > max_length:
        raise RegexError(f"pattern longer than {max_length} characters")
    _reject_non_go_syntax(pattern)
    try:
        regexp = cast(_Compiled, re2.compile(pattern, _OPTIONS))
    except re2.error as err:
        raise RegexError(_message(err)) from None
    except UnicodeEncodeError:
        raise RegexError("invalid UTF-8 in pattern") from None
    if regexp.programsize > max_states:
        raise RegexError(f"too many states ({regexp.programsize} > {max_states})")
    return RegexProgram(regexp)

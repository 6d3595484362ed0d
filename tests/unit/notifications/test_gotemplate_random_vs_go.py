"""Randomised differential test: generated templates render (or fail) exactly as in Go.

A fixed seed keeps it reproducible; the generator mixes every construct the engine supports
over the JSON-shaped data of the table test, so it also reaches combinations nobody wrote by
hand (errors included: wrong types, missing keys, nil receivers).
"""

from __future__ import annotations

import random

from tests.unit.notifications.conftest import GoRender
from tests.unit.notifications.test_gotemplate_vs_go import D, _ours

FIELDS = [
    ".s",
    ".empty",
    ".i",
    ".zero",
    ".neg",
    ".f",
    ".whole",
    ".big",
    ".tiny",
    ".t",
    ".no",
    ".n",
    ".list",
    ".nums",
    ".mixed",
    ".elist",
    ".map",
    ".emap",
    ".map.a",
    ".map.c.d",
    ".nope",
    ".nope.x",
    ".nested.x",
    ".nested.l",
    ".html",
    ".unicode",
    ".quote",
    "$",
    ".",
]
LITERALS = ['"a"', '""', "0", "1", "-2", "2.5", "1e6", "true", "false", "`r`", "'x'", "nil"]
VERBS = ["%s", "%d", "%v", "%q", "%x", "%5s", "%-4v", "%.2f", "%t", "%05d", "%e", "%g", "%T"]
FUNCS1 = ["len", "not", "html", "js", "urlquery", "print", "println"]
FUNCS2 = ["eq", "ne", "lt", "le", "gt", "ge", "and", "or", "index", "slice", "add", "print"]


TIME_FIELDS = [
    "(call .time.Parse .ts)", "(call .time.Parse .tsoff)", '(call .time.Parse "2024")',
    "(call .time.Parse .ts).UTC", '(toDate "2006-01-02" "2024-02-29")', ".ts", ".epoch",
]  # fmt: skip
TIME_FUNCS1 = ["unixEpoch", "duration", "htmlDate", "len", "print"]
TIME_FUNCS2 = ['date "Mon Jan _2 15:04:05.000 MST 2006"', "eq", "lt", 'dateInZone "3PM" 0']
TIME_DATA = {
    **D,
    "ts": "2024-03-02T10:04:05Z",
    "tsoff": "2023-11-05T01:30:00.5-07:00",
    "epoch": 1700000000,
}


class Gen:
    def __init__(self, seed: int, time: bool = False) -> None:
        self.r = random.Random(seed)
        self.vars: list[str] = []
        if time:
            # not "$" or ".": the time variable's functions print as (random) addresses
            self.fields = [f for f in FIELDS if f not in ("$", ".")] + TIME_FIELDS * 3
            self.funcs1 = FUNCS1 + TIME_FUNCS1 * 2
            self.funcs2 = FUNCS2 + TIME_FUNCS2 * 2
        else:
            self.fields, self.funcs1, self.funcs2 = FIELDS, FUNCS1, FUNCS2

    def operand(self, depth: int) -> str:
        r = self.r.random()
        if r < 0.45:
            return self.r.choice(self.fields)
        if r < 0.65:
            return self.r.choice(LITERALS)
        if r < 0.75 and self.vars:
            return self.r.choice(self.vars)
        if depth < 2:
            return "(" + self.command(depth + 1) + ")"
        return self.r.choice(self.fields)

    def command(self, depth: int) -> str:
        r = self.r.random()
        if r < 0.3:
            return self.operand(depth)
        if r < 0.5:
            verbs = " ".join(self.r.choice(VERBS) for _ in range(self.r.randint(0, 3)))
            args = " ".join(self.operand(depth) for _ in range(self.r.randint(0, 3)))
            return f'printf "{verbs}" {args}'.rstrip()
        if r < 0.7:
            return f"{self.r.choice(self.funcs1)} {self.operand(depth)}"
        f = self.r.choice(self.funcs2)
        return f"{f} {self.operand(depth)} {self.operand(depth)}"

    def pipeline(self, depth: int) -> str:
        p = self.command(depth)
        if self.r.random() < 0.2:
            p += " | " + self.r.choice(["print", "len", "not", 'printf "<%v>"', "html", "js"])
        return p

    def action(self) -> str:
        left = "{{- " if self.r.random() < 0.2 else "{{"
        right = " -}}" if self.r.random() < 0.2 else "}}"
        if self.r.random() < 0.15:
            name = f"$v{len(self.vars)}"
            self.vars.append(name)
            return f"{left}{name} := {self.pipeline(0)}{right}"
        return f"{left}{self.pipeline(0)}{right}"

    def text(self) -> str:
        return self.r.choice(["", " ", "x", "\n", " - ", "  \n  "])

    def block(self, depth: int) -> str:
        parts = []
        for _ in range(self.r.randint(1, 3)):
            r = self.r.random()
            saved = list(self.vars)
            if depth < 2 and r < 0.15:
                els = "{{else}}" + self.block(depth + 1) if self.r.random() < 0.5 else ""
                parts.append(
                    f"{{{{if {self.pipeline(0)}}}}}{self.block(depth + 1)}{els}{{{{end}}}}"
                )
            elif depth < 2 and r < 0.25:
                els = "{{else}}" + self.block(depth + 1) if self.r.random() < 0.5 else ""
                parts.append(
                    f"{{{{with {self.pipeline(0)}}}}}{self.block(depth + 1)}{els}{{{{end}}}}"
                )
            elif depth < 2 and r < 0.4:
                decl = self.r.choice(["", "$i, $e := ", "$e := "])
                if decl:
                    self.vars.extend(["$i", "$e"] if "," in decl else ["$e"])
                body = self.block(depth + 1)
                if self.r.random() < 0.2:
                    body += self.r.choice(["{{break}}", "{{continue}}"])
                els = "{{else}}" + self.block(depth + 1) if self.r.random() < 0.3 else ""
                parts.append(f"{{{{range {decl}{self.operand(1)}}}}}{body}{els}{{{{end}}}}")
            else:
                parts.append(self.text() + self.action())
                saved = list(self.vars)
            self.vars = saved
        return "".join(parts) + self.text()

    def template(self) -> str:
        self.vars = []
        return self.block(0)


def test_random_templates_same_as_go(go_render: GoRender) -> None:
    gen = Gen(seed=19)
    cases = [{"name": "rnd", "template": gen.template(), "data": D} for _ in range(600)]
    go = go_render(cases)
    mismatches = []
    for case, want in zip(cases, go, strict=True):
        got = _ours(case)
        if got != want:
            mismatches.append((case["template"], got, want))
    assert not mismatches, "\n\n".join(
        f"{t!r}\n  ours: {g}\n  go:   {w}" for t, g, w in mismatches[:8]
    )
    outputs = sum("output" in r for r in go)
    assert outputs > 150  # the generator is not producing errors only


def test_random_time_templates_same_as_go(go_render: GoRender) -> None:
    gen = Gen(seed=7, time=True)
    cases = [
        {"name": "rnd", "template": gen.template(), "data": TIME_DATA, "argoTime": True}
        for _ in range(300)
    ]
    go = go_render(cases)
    mismatches = [
        (c["template"], got, want)
        for c, want in zip(cases, go, strict=True)
        if (got := _ours(c)) != want
    ]
    assert not mismatches, "\n\n".join(
        f"{t!r}\n  ours: {g}\n  go:   {w}" for t, g, w in mismatches[:8]
    )


SOUP = [
    "{{", "}}", "{{-", "-}}", " ", "\n", ".", ".s", ".map", "$", "$x", ":=", "=", "|", "(", ")",
    '"', "`", "'", "a", "1", "-", "if", "else", "end", "range", "with", "define", "template",
    "block", "break", "continue", "nil", "true", "/*", "*/", ",", "printf", "len", "index", "é",
    "\t", "#", "\\", "0x", "e5", "_",
]  # fmt: skip


def test_token_soup_same_as_go(go_render: GoRender) -> None:
    """Random sequences of template tokens: mostly lexer and parser errors, worded as Go's."""
    r = random.Random(5)
    cases = [
        {
            "name": "s",
            "template": "".join(r.choice(SOUP) for _ in range(r.randint(1, 14))),
            "data": D,
        }
        for _ in range(1500)
    ]
    go = go_render(cases)
    mismatches = [
        (c["template"], got, want)
        for c, want in zip(cases, go, strict=True)
        if (got := _ours(c)) != want
    ]
    assert not mismatches, "\n\n".join(
        f"{t!r}\n  ours: {g}\n  go:   {w}" for t, g, w in mismatches[:8]
    )

"""Differential tests: our engine against Go's own text/template on the same templates.

Every case renders with Go (tests/support/gotemplate, built once per session) and with
rollout_workers.notifications.gotemplate; outputs, or error messages, must be identical.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rollout_workers.notifications.gotemplate import TemplateError, argo_time_vars, parse
from tests.unit.notifications.conftest import GoRender

TESTDATA = Path(__file__).parent / "testdata"
API_TESTDATA = Path(__file__).parents[1] / "api" / "testdata"

D: dict[str, Any] = {
    "s": "hello",
    "empty": "",
    "i": 3,
    "zero": 0,
    "neg": -7,
    "f": 2.5,
    "whole": 4.0,
    "big": 1000000.0,
    "huge": 1.5e21,
    "tiny": 0.00001,
    "t": True,
    "no": False,
    "n": None,
    "list": ["a", "b", "c"],
    "nums": [3, 1, 2],
    "mixed": [1, "x", 2.5, None, True, {"k": "v"}, [1, 2]],
    "elist": [],
    "map": {"b": 2, "a": 1, "c": {"d": "deep"}},
    "emap": {},
    "nested": {"x": {"y": {"z": "zz"}}, "l": [{"name": "first"}, {"name": "second"}]},
    "html": "<a href=\"x\">'&'</a>",
    "unicode": "héllo wörld ✓",
    "multiline": "line1\nline2",
    "quote": 'say "hi"\t\\',
}

# (id, template) rendered with D; or (id, template, data).
CASES: list[tuple[str, str] | tuple[str, str, Any]] = [
    # text, comments, trimming
    ("text", "plain text"),
    ("empty-template", ""),
    ("comment", "a{{/* a comment */}}b"),
    ("comment-trim", "a  {{- /* c */ -}}  b"),
    ("trim-left", "a   \n\t {{- .s}}"),
    ("trim-right", "{{.s -}}   \n  b"),
    ("trim-both", "x \n {{- .s -}} \n y"),
    ("minus-number", "{{-3}}"),
    ("minus-space-number", "{{- 3}}"),
    # fields and printing
    ("field", "{{.s}}"),
    ("dot", "{{.}}", {"a": 1, "b": [1, "two"]}),
    ("dot-string", "{{.}}", "just a string"),
    ("dot-nil-data", "{{.}}", None),
    ("nested-field", "{{.nested.x.y.z}}"),
    ("missing-key", "{{.nope}}"),
    ("missing-deep", "{{.nope.deeper.still}}"),
    ("nil-value", "{{.n}}"),
    ("nil-field", "{{.n.x}}"),
    ("field-of-string", "{{.s.x}}"),
    ("field-of-int", "{{.i.x}}"),
    ("field-of-list", "{{.list.x}}"),
    ("int", "{{.i}} {{.zero}} {{.neg}}"),
    ("floats", "{{.f}} {{.whole}} {{.big}} {{.huge}} {{.tiny}}"),
    (
        "more-floats",
        "{{.a}} {{.b}} {{.c}} {{.d}} {{.e}}",
        {"a": 123456.0, "b": 1234567.0, "c": 0.0001, "d": 1e-5, "e": -2.75},
    ),
    ("bools", "{{.t}} {{.no}}"),
    ("list-print", "{{.list}} {{.nums}} {{.elist}}"),
    ("mixed-print", "{{.mixed}}"),
    ("map-print", "{{.map}} {{.emap}}"),
    ("map-sorted", "{{.}}", {"b": 1, "a": 2, "B": 3, "_": 4, "aa": 5}),
    ("html-unescaped", "{{.html}}"),
    ("unicode", "{{.unicode}}"),
    # literals
    ("string-lit", '{{"a\\tb\\n\\u00e9\\x41"}}'),
    ("raw-string", '{{`raw\\n"x"`}}'),
    ("numbers", "{{1}} {{-2}} {{1.5}} {{1e3}} {{0x1F}} {{0o17}} {{1_000}} {{'a'}} {{017}}"),
    ("float-lit", "{{3.0}} {{1e6}} {{.5}}"),
    ("bool-lit", "{{true}} {{false}}"),
    ("nil-command", "{{nil}}"),
    ("char-escape", "{{'\\n'}}"),
    # variables
    ("var", "{{$x := .s}}{{$x}}"),
    ("var-assign", "{{$x := 1}}{{$x = 2}}{{$x}}"),
    ("var-dollar", "{{with .nested}}{{$.s}}{{end}}"),
    ("var-scope-if", "{{$x := 1}}{{if true}}{{$x := 2}}{{$x}}{{end}}{{$x}}"),
    ("var-assign-in-if", "{{$x := 1}}{{if true}}{{$x = 2}}{{end}}{{$x}}"),
    ("var-field", "{{$m := .map}}{{$m.c.d}}"),
    ("var-missing-field", "{{$m := .map}}{{$m.nope}}"),
    ("var-nil-field", "{{$v := .n}}{{$v.x}}"),
    ("undefined-var", "{{$nope}}"),
    ("var-declare-only-prints-nothing", "a{{$x := 5}}b"),
    # pipelines
    ("pipe-printf", '{{.s | printf "%s!"}}'),
    ("pipe-chain", '{{.i | printf "%d" | printf "<%s>"}}'),
    ("paren", '{{(printf "%s-%s" "a" "b")}}'),
    ("paren-field", "{{(.nested.x).y.z}}"),
    ("paren-index", "{{(index .nested.l 1).name}}"),
    ("pipe-to-len", "{{.list | len}}"),
    ("pipe-non-exec", "{{.s | 3}}"),
    ("pipe-into-field", "{{.s | .s}}"),
    ("chain-nil", "{{(nil).x}}"),
    # if / else
    ("if-true", "{{if .t}}yes{{end}}"),
    ("if-else", "{{if .no}}yes{{else}}no{{end}}"),
    ("if-else-if", "{{if .no}}a{{else if .zero}}b{{else if .s}}c{{else}}d{{end}}"),
    (
        "if-truthiness",
        "{{if .empty}}1{{end}}{{if .elist}}2{{end}}{{if .emap}}3{{end}}{{if .zero}}4{{end}}"
        "{{if .n}}5{{end}}{{if .nope}}6{{end}}{{if .list}}7{{end}}{{if .f}}8{{end}}"
        "{{if .map}}9{{end}}",
    ),
    ("if-not", "{{if not .no}}ok{{end}}"),
    ("if-and-or", "{{if and .t .s}}a{{end}}{{if or .no .zero}}b{{else}}c{{end}}"),
    ("and-value", '{{and 1 0 2}} {{and 1 2}} {{or 0 "" 3}} {{or 0 ""}}'),
    ("and-short-circuit", "{{and .no (index .list 10)}}"),
    ("or-short-circuit", "{{or .t (index .list 10)}}"),
    ("and-missing", "{{and .nope 1}}"),
    # with
    ("with", "{{with .nested.x}}{{.y.z}}{{end}}"),
    ("with-else", "{{with .nope}}x{{else}}none{{end}}"),
    ("with-else-with", "{{with .nope}}x{{else with .s}}{{.}}{{end}}"),
    ("with-nil", "{{with .n}}x{{else}}nil{{end}}"),
    # range
    ("range-list", "{{range .list}}[{{.}}]{{end}}"),
    ("range-index", "{{range $i, $v := .list}}{{$i}}={{$v}} {{end}}"),
    ("range-one-var", "{{range $v := .list}}{{$v}}{{end}}"),
    ("range-map", "{{range $k, $v := .map}}{{$k}}:{{$v}};{{end}}"),
    ("range-map-dot", "{{range .map}}{{.}};{{end}}"),
    ("range-else", "{{range .elist}}x{{else}}empty{{end}}"),
    ("range-missing", "{{range .nope}}x{{else}}none{{end}}"),
    ("range-nil", "{{range .n}}x{{else}}none{{end}}"),
    ("range-int", "{{range 3}}{{.}}{{end}}"),
    ("range-int-data", "{{range .i}}{{.}}{{end}}"),
    ("range-string", "{{range .s}}{{.}}{{end}}"),
    ("range-float", "{{range .f}}{{.}}{{end}}"),
    ("range-break", "{{range .nums}}{{if eq . 1}}{{break}}{{end}}{{.}}{{end}}"),
    ("range-continue", "{{range .nums}}{{if eq . 1}}{{continue}}{{end}}{{.}}{{end}}"),
    ("break-outside", "{{break}}"),
    ("range-nested-dollar", "{{range .nested.l}}{{.name}}/{{$.s}} {{end}}"),
    ("range-mixed", "{{range .mixed}}<{{.}}>{{end}}"),
    ("range-elem-field-of-string", "{{range .list}}{{.x}}{{end}}"),
    ("range-var-scope", "{{range $i, $v := .list}}{{end}}{{$i}}"),
    ("range-assign", "{{$i := 0}}{{range $i = .list}}{{end}}{{$i}}"),
    ("range-two-vars-int", "{{range $i, $v := 3}}{{end}}"),
    ("range-too-many-vars", "{{range $a, $b, $c := .list}}{{end}}"),
    # builtins
    ("len", "{{len .list}} {{len .s}} {{len .map}} {{len .unicode}} {{len .elist}}"),
    ("len-int", "{{len .i}}"),
    ("len-nil", "{{len .n}}"),
    ("len-missing", "{{len .nope}}"),
    ("index-list", '{{index .list 1}} {{index .nested.l 0 | printf "%v"}}'),
    ("index-map", '{{index .map "a"}} {{index .map "c" "d"}} {{index .map "nope"}}'),
    ("index-string", '{{index .s 1}} {{printf "%T %c %v" (index .s 0) (index .s 0) (index .s 0)}}'),
    (
        "index-string-compare",
        "{{eq (index .s 0) 104}} {{lt (index .s 0) 200}} {{eq .t (index .s 0)}}",
    ),
    ("index-out-of-range", "{{index .list 3}}"),
    ("index-out-of-range-2", "{{index .list 5}}"),
    ("index-negative", "{{index .list -1}}"),
    ("index-bad-type", '{{index .list "a"}}'),
    ("index-map-int-key", "{{index .map 1}}"),
    ("index-of-int", "{{index .i 1}}"),
    ("index-nil", "{{index .n 1}}"),
    ("index-no-index", "{{index .list}}"),
    # slice is sprig's (it shadows the builtin in notifications-engine; the Go side defines it)
    ("slice", "{{slice .list 1}} {{slice .list 1 2}} {{slice .list}} {{slice .list .i}}"),
    ("slice-index-conversion", '{{slice .list "1" 2.7}} {{slice .nums true}}'),
    ("slice-empty", "{{slice .elist 1 2}}"),
    ("slice-bad", "{{slice .list 2 1}}"),
    ("slice-string", "{{slice .s 1 3}}"),
    ("slice-map", "{{slice .map 1}}"),
    ("slice-nil", "{{slice .n 1}}"),
    ("slice-missing", "{{slice .nope 1}}"),
    ("print", '{{print 1 2 "a" "b" 3 .n .list}}'),
    ("print-missing", "{{print .nope}}"),
    ("println", '{{println 1 "a" .f}}'),
    (
        "printf-verbs",
        '{{printf "%s|%d|%v|%q|%t|%x|%X|%5s|%-5s|%05d|%+d" '
        '.s .i .map .s .t 255 .s "ab" "ab" 42 5}}',
    ),
    ("printf-floats", '{{printf "%f|%.2f|%e|%g|%8.3f|%.0f|%v" .f .f .big .f .f 2.5 .big}}'),
    ("printf-int-as-float", '{{printf "%f" .i}}'),
    ("printf-float-as-int", '{{printf "%d" .f}}'),
    ("printf-string-as-int", '{{printf "%d" .s}}'),
    ("printf-nil", '{{printf "%s %v %d" .n .n .n}}'),
    ("printf-missing-arg", '{{printf "%s %s" "a"}}'),
    ("printf-extra-arg", '{{printf "%s" "a" 1 "b"}}'),
    ("printf-percent", '{{printf "100%%"}}'),
    ("printf-list", '{{printf "%v %s %d %q" .list .list .nums .list}}'),
    ("printf-map", '{{printf "%v|%s" .map .map}}'),
    ("printf-q-int", '{{printf "%q %c" 65 66}}'),
    ("printf-width-star", '{{printf "%*d|%-*d|" 5 42 4 7}}'),
    ("printf-bad-verb", '{{printf "%z" 1}}'),
    ("printf-no-verb", '{{printf "abc%"}}'),
    ("printf-T", '{{printf "%T %T %T %T %T %T" .s .i .f .t .list .map}}'),
    ("printf-prec-string", '{{printf "%.3s|%.10s" "abcdef" "ab"}}'),
    ("printf-hex-string", '{{printf "%x %X" "hi" "hi"}}'),
    ("printf-plus-float", '{{printf "%+.1f %+d" 2.0 -3}}'),
    ("printf-not-string", "{{printf 3}}"),
    (
        "printf-huge-width",
        '{{printf "%99999999d|%*d|%.*f|%.99999999f" 1 2000000 2 3000000 1.5 2.5}}',
    ),
    ("printf-star-prec", '{{printf "%.*f|%-*d|" 2 3.14159 -4 7}}'),
    ("printf-int-lit", '{{printf "%v %T" 3 3}}'),
    ("html", '{{html .html}} {{html "a" 1}}'),
    ("js", '{{js .html}} {{js .quote}} {{js "a=b\\n"}}'),
    ("urlquery", '{{urlquery "a b&c=d/é?"}} {{urlquery .s 1}}'),
    ("not-arity", "{{not}}"),
    ("not-two", "{{not 1 2}}"),
    # comparisons
    ("eq", '{{eq .s "hello"}} {{eq .i 3}} {{eq .f 2.5}} {{eq .t true}} {{eq 1 2 3 1}}'),
    ("eq-int-literal-vs-data", "{{eq .i 3}} {{eq 3 .i}}"),
    ("eq-missing", '{{eq .nope "x"}} {{eq .nope .nope2}}'),
    ("eq-nil", '{{eq .n "x"}}'),
    ("eq-incompatible", '{{eq .i "3"}}'),
    ("eq-int-float", "{{eq .i 3.0}}"),
    ("eq-list", "{{eq .list .list}}"),
    ("eq-one-arg", "{{eq 1}}"),
    ("ne", '{{ne .s "x"}} {{ne .i 3}}'),
    ("lt", '{{lt 1 2}} {{lt .f 3.5}} {{lt "a" "b"}} {{le 2 2}} {{gt .i 1}} {{ge .i 4}}'),
    ("lt-incompatible", '{{lt 1 "a"}}'),
    ("lt-bool", "{{lt true false}}"),
    ("lt-nil", "{{lt .n 1}}"),
    ("gt-list", "{{gt .list 1}}"),
    ("ne-arity", "{{ne 1 2 3}}"),
    # call
    ("call-non-function", "{{call .s}}"),
    ("call-nil", "{{call .n}}"),
    # define / template / block
    ("define-template", '{{define "T"}}<{{.}}>{{end}}{{template "T" .s}}{{template "T"}}'),
    ("define-dollar", '{{define "T"}}{{$}}{{end}}{{template "T" .i}}'),
    ("template-undefined", '{{template "nope"}}'),
    ("block", '{{block "B" .list}}{{range .}}{{.}}{{end}}{{end}}|{{template "B" .nums}}'),
    ("define-error-position", '{{define "T"}}\n{{.x.y}}{{end}}{{template "T" .s}}'),
    (
        "template-recursion",
        '{{define "R"}}{{if .}}{{template "R" (slice . 1)}}{{.}}{{end}}{{end}}'
        '{{template "R" .list}}',
    ),
    # parse errors
    ("err-function-undefined", "{{nope 1}}"),
    ("err-env", '{{env "HOME"}}'),
    ("err-expandenv", '{{expandenv "$HOME"}}'),
    ("err-unclosed-action", "{{.s"),
    ("err-unclosed-action-nl", "{{.s\n"),
    ("err-unclosed-comment", "{{/* x"),
    ("err-comment-not-closed", "{{/* x */ .s}}"),
    ("err-unexpected-eof", "{{if .t}}x"),
    ("err-end-no-if", "x{{end}}"),
    ("err-else-top", "{{else}}"),
    ("err-empty-action", "{{}}"),
    ("err-missing-value-if", "{{if}}{{end}}"),
    ("err-bad-number", "{{3k}}"),
    ("err-unterminated-string", '{{"abc}}'),
    ("err-unterminated-raw", "{{`abc}}"),
    ("err-bad-char", "{{.s#}}"),
    ("err-unexpected-rparen", "{{.s)}}"),
    ("err-unclosed-lparen", "{{(.s}}"),
    ("err-dot-after-term", '{{"a".b}}'),
    ("err-expected-end", "{{if .t}}a{{else}}b{{else}}c{{end}}"),
    ("err-multi-line", "line1\nline2\n{{.s | nope}}"),
    ("err-action-started", "{{if\n.t}}"),
    ("err-unclosed-action-multiline", "{{.s\n\n"),
    ("err-continue-outside", "{{continue}}"),
    ("err-bad-unicode", "{{.s ä}}"),
    ("err-assign-char", "{{$x = 1}}"),
    ("err-declare-colon", "{{$x : 1}}"),
    ("err-redefine", '{{define "a"}}x{{end}}{{define "a"}}y{{end}}'),
    ("err-template-name", "{{template .s}}"),
    ("err-range-init", "{{range $i, 3}}{{end}}"),
    ("err-too-many-decl", "{{$a, $b := 1}}"),
    ("err-overflow", "{{99999999999999999999}}"),
    ("err-string-escape", '{{"\\q"}}'),
    # execution errors
    ("err-wrong-args-len", "{{len}}"),
    ("err-wrong-args-len-2", "{{len 1 2}}"),
    ("err-not-method", "{{.s 1}}"),
    ("err-arg-to-non-function", "{{.n | .s}}"),
    ("err-arg-non-function-var", "{{$x := 1}}{{$x 2}}"),
    ("err-field-has-args", "{{.map.a 1}}"),
    ("err-dot-as-command-arg", "{{. 1}}"),
    ("err-exec-position-line3", "a\nbb\n  {{index .list 9}}"),
    ("err-exec-unicode-col", "é{{index .list 9}}"),
    ("err-printf-arg-type", "{{printf .i}}"),
    ("err-printf-nil-fmt", "{{printf .n}}"),
    ("err-printf-missing-fmt", "{{printf .nope}}"),
    ("err-nil-arg-to-string", "{{printf nil}}"),
    # catalog-style constructs
    ("add", '{{add .i 1}} {{add 1 2 3}} {{add .f 1}} {{add}} {{add .nope 1}} {{add "5" 1}}'),
    (
        "catalog-range",
        "{{range $index, $c := .cs}}{{if not $index}},{{end}}{{if $index}},{{end}}"
        "{{$c.name}}{{end}}",
        {"cs": [{"name": "a"}, {"name": "b"}]},
    ),
    (
        "catalog-if-blue-green",
        "{{if .rollout.spec.strategy.blueGreen}}BlueGreen{{end}}"
        "{{if .rollout.spec.strategy.canary}}Canary{{end}}",
        {"rollout": {"spec": {"strategy": {"canary": {}}}}},
    ),
    ("whitespace-in-action", "{{ .s }}{{\t.i\n}}"),
    # more printing and edge cases
    (
        "float-printing",
        "{{range .}}{{.}} {{end}}",
        [0.1, 100.5, 123456789.0, 1e21, 1e-7, 1e20, 999999.0, 1e6, -0.5, 2.0e-4, 1.0e-5, 5e-324],
    ),
    ("big-ints", "{{.a}} {{.b}}", {"a": 9007199254740993, "b": -9223372036854775808}),
    ("nested-nil-in-map", "{{.}}", {"a": None, "b": [None, {}], "c": {"d": []}}),
    ("crlf", "a\r\n{{- .s -}}\r\nb"),
    ("trim-at-start-and-end", "{{- .s -}}"),
    ("only-trim-markers", "  {{- /* x */ -}}  "),
    ("template-text-only-spaces", "   "),
    ("range-break-map", '{{range $k, $v := .map}}{{if eq $k "b"}}{{break}}{{end}}{{$k}}{{end}}'),
    ("nested-range-break", "{{range .list}}{{range $.nums}}{{break}}{{end}}{{.}}{{end}}"),
    ("range-continue-else", "{{range .elist}}{{continue}}{{else}}e{{end}}"),
    ("index-mixed", '{{index .mixed 5 "k"}} {{len (index .mixed 6)}} {{index .mixed 3}}'),
    ("index-key-dash", '{{index . "a-b"}}', {"a-b": "dash"}),
    ("printf-int64-data", '{{printf "%d %5d %-5d| %x %o %b %c" .i .i .i .i .i .i .i}}'),
    ("printf-bools-as-s", '{{printf "%s %v %d" .t .t .t}}'),
    ("printf-map-d", '{{printf "%d" .map}}'),
    ("printf-nested-list", '{{printf "%v|%q" .mixed .mixed}}'),
    ("printf-e-small", '{{printf "%e %E %.3e %g %G" .tiny .tiny .big .tiny .huge}}'),
    ("printf-g-prec", '{{printf "%.3g %.10g %.1g" .f 3.14159 1234.5}}'),
    ("printf-zero-pad-neg", '{{printf "%06.2f|%06d|%-06d|" -1.5 -42 7}}'),
    ("printf-space-flag", '{{printf "% d|% d" 5 -5}}'),
    ("printf-q-unicode", '{{printf "%q" .unicode}} {{printf "%q" .quote}} {{printf "%#q" "ab"}}'),
    ("printf-x-neg", '{{printf "%x %X %#x" -255 255 255}}'),
    ("printf-s-width-unicode", '{{printf "%8s|%-8s|" "é✓" "é✓"}}'),
    ("printf-v-nil-in-list", '{{printf "%v %s" .mixed .n}}'),
    ("printf-v-width", '{{printf "%6v|%-6v|%6v" 1.5 true .list}}'),
    ("print-adjacent", '{{print "a" 1 2 "b" .t .no "c"}}'),
    ("print-nil-nil", "{{print .n .n}}"),
    ("println-empty", "{{println}}"),
    ("html-numbers", "{{html 1 2 .n}}"),
    ("js-unicode", '{{js "\u2028é\x01"}}'),
    ("urlquery-special", '{{urlquery "~!*()\'+"}}'),
    ("if-else-if-chain-vars", "{{if $x := .nope}}a{{else if $y := .s}}{{$y}}{{end}}"),
    ("with-var", "{{with $x := .nested.x.y}}{{$x.z}}{{.z}}{{end}}"),
    ("with-else-if", "{{with .nope}}a{{else if .t}}b{{end}}"),
    ("if-pipeline-result", "{{if eq (len .list) 3}}three{{end}}"),
    ("eq-float-int-data", "{{eq .whole 4.0}} {{eq .i .i}}"),
    ("eq-string-bytes", '{{lt "Z" "a"}} {{lt "é" "z"}}'),
    ("ge-strings", '{{ge "b" "a"}} {{gt "a" "a"}} {{le "a" "a"}}'),
    ("not-values", "{{not .s}} {{not .empty}} {{not .nope}} {{not .n}} {{not .elist}}"),
    ("and-returns-value", "{{and .s .list}} {{or .empty .elist .s}}"),
    ("and-pipeline-final", "{{.s | and 1}} {{0 | or .empty}}"),
    ("call-piped", "{{.s | call}}"),
    (
        "define-nested-use",
        '{{define "A"}}a{{template "B" .}}{{end}}{{define "B"}}b{{.}}{{end}}{{template "A" 1}}',
    ),
    ("define-only", '{{define "X"}}x{{end}}'),
    ("define-var-isolation", '{{$x := 1}}{{define "X"}}{{$x}}{{end}}'),
    ("block-and-define-override", '{{block "B" .}}default{{end}}'),
    ("comment-with-trim-no-space", "a{{-/* c */-}}b"),
    ("trim-needs-space", "{{-.s}}"),
    ("negative-field-number", "{{-.5}}"),
    ("dollar-alone", "{{$}}", {"a": 1}),
    ("dollar-field-chain", "{{$.map.c.d}}"),
    ("var-in-paren", "{{$x := .list}}{{(index $x 0)}}"),
    ("paren-nested", '{{printf "%s" (printf "%d" (len (slice .list 1)))}}'),
    ("char-lit-arith", "{{'\\u00e9'}} {{'\\x41'}}"),
    ("hex-float", "{{0x1p4}} {{0X10}}"),
    ("underscores", "{{1_000}} {{0x_1F}} {{1_000.5}} {{0b1_0}}"),
    ("err-underscore-trailing", "{{1_}}"),
    ("err-underscore-double", "{{1__0}}"),
    ("char-escapes", "{{'\\x41'}} {{'\\101'}} {{'\\u00e9'}} {{'\\''}} {{'\"'}}"),
    ("err-char-long", "{{'ab'}}"),
    ("err-char-empty", "{{''}}"),
    ("err-char-octal-range", "{{'\\400'}}"),
    ("assign-undeclared", "{{$x = 1}}"),
    ("err-nested-unclosed", "{{if .t}}{{range .list}}{{end}}"),
    ("err-else-in-range", "{{range .list}}{{else}}{{else}}{{end}}"),
    ("err-bad-define", "{{define x}}{{end}}"),
    ("err-define-in-action", '{{if .t}}{{define "x"}}{{end}}{{end}}'),
    ("err-index-list-nil", "{{index .list nil}}"),
    ("err-slice-of-int", "{{slice .i 1}}"),
    ("err-range-bool", "{{range .t}}{{end}}"),
    ("err-print-func", "{{print}}{{.s | printf}}"),
    ("err-wrong-type-pipe", '{{3 | printf "%d"}}'),
    ("err-nil-pipe", "{{nil | print}}"),
    ("err-missing-in-and", "{{and}}"),
    ("err-comma-outside-range", "{{$a, $b := .list}}"),
    ("err-position-after-multibyte", "✓✓\n  é {{.s.x}}"),
    ("err-eq-map", "{{eq .map .map}}"),
    ("err-eq-list-nil", "{{eq .list .n}}"),
    ("err-eq-map-missing", "{{eq .map .nope}}"),
    ("len-steps-missing", "{{len .rollout.spec.strategy.canary.steps}}", {"rollout": {"spec": {}}}),
]


def _case(c: tuple[Any, ...]) -> dict[str, Any]:
    data = c[2] if len(c) > 2 else D
    return {"name": "t", "template": c[1], "data": data}


def _ours(case: dict[str, Any]) -> dict[str, str]:
    data = copy.deepcopy(case["data"])
    if case.get("argoTime"):
        data["time"] = argo_time_vars()
    try:
        tmpl = parse(case["template"], name=case["name"])
        return {"output": tmpl.render(data)}
    except TemplateError as e:
        return {"error": str(e)}


@pytest.fixture(scope="module")
def go_table(go_render: GoRender) -> dict[str, dict[str, str]]:
    results = go_render([_case(c) for c in CASES])
    return {c[0]: r for c, r in zip(CASES, results, strict=True)}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_same_as_go(case: tuple[Any, ...], go_table: dict[str, dict[str, str]]) -> None:
    assert _ours(_case(case)) == go_table[case[0]]


def test_case_ids_are_unique() -> None:
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))


# -- time: Argo's "time" variable, methods of time.Time, sprig's date functions (as the Go side
# defines them); Local is UTC on both sides

T: dict[str, Any] = {
    "ts": "2024-03-02T10:04:05Z",
    "tsoff": "2024-03-02T10:04:05.123456789+05:30",
    "tsneg": "2024-12-31T23:59:59-08:00",
    "epoch": 1709373845,
    "bad": "2024-13-02T10:04:05Z",
    "t": "2024-03-02 10:04:05",
}
LAYOUTS = [
    "2006-01-02T15:04:05Z07:00",
    "Mon Jan _2 15:04:05 MST 2006",
    "Monday, 02-Jan-06 15:04:05 MST",
    "January 2, 2006 3:04:05.000 PM -0700",
    "02 Jan 06 15:04 -07:00:00 Z0700 Z07",
    "2006-01-02 15:04:05.999999999 -0700 MST",
    "__2 002 .000000 ,999 pm 03",
    "Jan 2nd, Mondays, 1/2/6, 06 -07",
]
TIME_CASES: list[tuple[str, str]] = (
    [
        (
            "parse-print",
            "{{call .time.Parse .ts}} {{call .time.Parse .tsoff}} {{call .time.Parse .tsneg}}",
        ),
        ("parse-error", "{{call .time.Parse .bad}}"),
        ("parse-error-text", '{{call .time.Parse "yesterday"}}'),
        ("parse-extra-text", '{{call .time.Parse "2024-03-02T10:04:05Zjunk"}}'),
        ("parse-wrong-arg", "{{call .time.Parse .epoch}}"),
        ("parse-wrong-arity", "{{call .time.Parse}}"),
        ("print-func", "{{.time.Now}}"),
        ("print-parse-func", "{{.time.Parse}}"),
        ("if-func", "{{if .time.Now}}yes{{end}}"),
        (
            "methods",
            "{{$t := call .time.Parse .tsoff}}{{$t.Unix}} {{$t.UTC}} {{$t.Year}} {{$t.YearDay}} "
            "{{$t.Hour}} {{$t.Nanosecond}} {{$t.IsZero}} {{$t.UnixMilli}}",
        ),
        ("method-format", '{{(call .time.Parse .tsneg).Format "Jan 2, 2006 at 3:04pm (MST)"}}'),
        ("method-chain", '{{(call .time.Parse .tsoff).UTC.Format "15:04:05.000"}}'),
        (
            "method-sub",
            "{{$a := call .time.Parse .ts}}{{$b := call .time.Parse .tsoff}}{{$a.Sub $b}} "
            "{{($b.Sub $a).Hours}} {{$a.Before $b}} {{$a.After $b}} {{$a.Equal $a}}",
        ),
        ("method-bad-arg", "{{(call .time.Parse .ts).Format 3}}"),
        ("method-missing", "{{(call .time.Parse .ts).Nope}}"),
        ("method-arity", '{{(call .time.Parse .ts).Format "a" "b"}}'),
        (
            "printf-time",
            '{{printf "%v|%s|%T" (call .time.Parse .ts) (call .time.Parse .tsneg) '
            "(call .time.Parse .ts)}}",
        ),
        ("eq-time", "{{eq (call .time.Parse .ts) (call .time.Parse .ts)}}"),
        (
            "sprig-date",
            '{{date "2006-01-02 15:04" .epoch}} {{dateInZone "Jan 2 15:04 MST" .epoch "UTC"}}',
        ),
        ("sprig-date-time", '{{date "Mon Jan 2" (call .time.Parse .tsoff)}}'),
        ("sprig-todate", '{{toDate "2006-01-02 15:04:05" .t}} {{toDate "2006-01-02" "nope"}}'),
        ("sprig-todate-chain", '{{(toDate "2006-01-02T15:04:05Z07:00" .tsneg).Unix}}'),
        ("sprig-unixepoch", "{{unixEpoch (call .time.Parse .tsoff)}}"),
        ("sprig-unixepoch-bad", "{{unixEpoch .epoch}}"),
        (
            "sprig-duration",
            '{{duration .epoch}} {{duration "95"}} {{duration 95}} {{duration "x"}}',
        ),
    ]
    + [
        (
            f"format-{i}",
            f'{{{{(call .time.Parse .tsoff).Format "{layout}"}}}} '
            f'{{{{(call .time.Parse .tsneg).Format "{layout}"}}}} '
            f'{{{{(call .time.Parse .ts).Format "{layout}"}}}}',
        )
        for i, layout in enumerate(LAYOUTS)
    ]
    + [
        (
            f"roundtrip-{i}",
            f'{{{{$s := (call .time.Parse .tsoff).Format "{layout}"}}}}{{{{$s}}}} => '
            f'{{{{toDate "{layout}" $s}}}}',
        )
        for i, layout in enumerate(LAYOUTS)
    ]
)


@pytest.fixture(scope="module")
def go_time_table(go_render: GoRender) -> dict[str, dict[str, str]]:
    results = go_render([_time_case(c) for c in TIME_CASES])
    return {c[0]: r for c, r in zip(TIME_CASES, results, strict=True)}


def _time_case(c: tuple[str, str]) -> dict[str, Any]:
    return {"name": "t", "template": c[1], "data": T, "argoTime": True}


@pytest.mark.parametrize("case", TIME_CASES, ids=[c[0] for c in TIME_CASES])
def test_time_same_as_go(case: tuple[str, str], go_time_table: dict[str, dict[str, str]]) -> None:
    assert _ours(_time_case(case)) == go_time_table[case[0]]


# -- Argo's notification catalog ---------------------------------------------------------------


def _rollout(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((API_TESTDATA / name).read_text())
    return json.loads(json.dumps(loaded, default=str))  # as JSON: timestamps are strings


def _catalog_data() -> dict[str, dict[str, Any]]:
    canary = _rollout("rollout-canary.yaml")
    two = copy.deepcopy(canary)
    containers = two["spec"]["template"]["spec"]["containers"]
    containers.append({"name": "sidecar", "image": "envoyproxy/envoy:v1.29"})
    bare = {"metadata": {"name": "bare"}, "spec": {"template": {"spec": {"containers": []}}}}
    return {
        "canary": canary,
        "bluegreen": _rollout("rollout-bluegreen.yaml"),
        "canary-two-containers": two,
        "bare": bare,
    }


CATALOG = json.loads((TESTDATA / "catalog-v1.9.1.json").read_text())
ROLLOUTS = _catalog_data()
CATALOG_CASES = [
    (f"{c['name']}/{c['field']}/{rname}", c, rollout)
    for c in CATALOG
    for rname, rollout in ROLLOUTS.items()
]


def _catalog_case(c: dict[str, Any], rollout: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": c["name"],
        "template": c["template"],
        "data": {"rollout": rollout, "recipient": "team-a", "serviceType": "slack"},
    }


@pytest.fixture(scope="module")
def go_catalog(go_render: GoRender) -> dict[str, dict[str, str]]:
    results = go_render([_catalog_case(c, r) for _, c, r in CATALOG_CASES])
    return {cid: r for (cid, _, _), r in zip(CATALOG_CASES, results, strict=True)}


def test_catalog_is_complete() -> None:
    names = {c["name"] for c in CATALOG}
    assert len(names) == 9
    assert "rollout-step-completed" in names
    assert len(CATALOG) == 27  # message, email.subject and slack.attachments of each


def test_catalog_renders_as_argo_documents() -> None:
    canary = _catalog_case(
        next(
            c for c in CATALOG if (c["name"], c["field"]) == ("rollout-step-completed", "message")
        ),
        ROLLOUTS["canary"],
    )
    assert _ours(canary) == {"output": "Rollout checkout step number 7/12 has been completed."}


@pytest.mark.parametrize(
    ("cid", "template", "rollout"), CATALOG_CASES, ids=[c[0] for c in CATALOG_CASES]
)
def test_catalog_same_as_go(
    cid: str,
    template: dict[str, Any],
    rollout: dict[str, Any],
    go_catalog: dict[str, dict[str, str]],
) -> None:
    ours = _ours(_catalog_case(template, rollout))
    assert ours == go_catalog[cid]
    # Real rollouts render, but for the canary-only step template on a blue-green rollout (len of
    # a missing .steps), which fails in Go as well.
    canary_only = cid.startswith("rollout-step-completed/") and not cid.endswith("canary")
    if not cid.endswith("/bare") and not canary_only:
        assert "output" in ours, ours

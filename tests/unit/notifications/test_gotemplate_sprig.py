"""sprig's functions, against the outputs sprig's documentation gives (docs/*.md of
Masterminds/sprig v3): sprig is not in Go's stdlib, so these cannot be compared with Go here.
A few cases pin behaviour read from sprig's source; those say so.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from rollout_workers.notifications.gotemplate import TemplateError, argo_time_vars, parse

DATA: dict[str, Any] = {
    "Bar": "",
    "name": "checkout",
    "text": "line one\nline two",
    "lst": ["a", "b", "c"],
    "replicas": 5,
    "ratio": 2.5,
    "obj": {"b": [1, 2.5, None], "a": "<x&y>", "c": {}},
    "n": None,
}

DOCUMENTED: list[tuple[str, str]] = [
    # strings.md
    ('{{trim "   hello    "}}', "hello"),
    ('{{trimAll "$" "$5.00"}}', "5.00"),
    ('{{trimSuffix "-" "hello-"}}', "hello"),
    ('{{trimPrefix "-" "-hello"}}', "hello"),
    ('{{upper "hello"}}', "HELLO"),
    ('{{lower "HELLO"}}', "hello"),
    ('{{title "hello world"}}', "Hello World"),
    ('{{repeat 3 "hello"}}', "hellohellohello"),
    ('{{trunc 5 "hello world"}}', "hello"),
    ('{{trunc -5 "hello world"}}', "world"),
    ('{{contains "cat" "catch"}}', "true"),
    ('{{hasPrefix "cat" "catch"}}', "true"),
    ('{{hasSuffix "cat" "catch"}}', "false"),
    ('{{"I Am Henry VIII" | replace " " "-"}}', "I-Am-Henry-VIII"),
    ('{{quote "a" "b"}} {{squote "a"}}', '"a" "b" \'a\''),
    ('{{indent 4 "a\\nb"}}', "    a\n    b"),
    ('{{nindent 4 "a\\nb"}}', "\n    a\n    b"),
    (
        '{{regexMatch "^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\\\.[A-Za-z]{2,}$" "test@acme.com"}}',
        "true",
    ),
    ('{{regexFindAll "[2,4,6,8]" "123456789" -1}}', "[2 4 6 8]"),
    ('{{regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W"}}', "-W-xxW-"),
    ('{{regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}"}}', "-${1}-${1}-"),
    # string_slice.md
    ('{{join "_" (list "a" "b" "c")}}', "a_b_c"),
    ('{{splitList "$" "foo$bar$baz"}}', "[foo bar baz]"),
    ('{{$a := split "$" "foo$bar$baz"}}{{$a._0}} {{$a._2}}', "foo baz"),
    ("{{list 1 2 3 | toStrings}}", "[1 2 3]"),
    # defaults.md
    ('{{default "foo" .Bar}}', "foo"),
    ('{{default "foo" .nope}} {{.name | default "foo"}}', "foo checkout"),
    ("{{coalesce 0 1 2}}", "1"),
    ('{{coalesce .name .Bar "default"}}', "checkout"),
    ('{{ternary "foo" "bar" true}} {{false | ternary "foo" "bar"}}', "foo bar"),
    (
        "{{empty .Bar}} {{empty .name}} {{empty 0}} {{empty .nope}} {{empty .lst}}",
        "true false true true false",
    ),
    ("{{toJson .obj}}", '{"a":"\\u003cx\\u0026y\\u003e","b":[1,2.5,null],"c":{}}'),
    (
        '{{toPrettyJson (dict "a" 1 "b" (list 1 2))}}',
        '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}',
    ),
    # dicts.md
    (
        '{{$d := dict "name1" "value1" "name2" "value2"}}{{get $d "name1"}}|{{get $d "x"}}|',
        "value1||",
    ),
    ('{{$d := dict "a" 1}}{{$_ := set $d "b" 2}}{{$d}}', "map[a:1 b:2]"),
    ('{{hasKey (dict "name1" "value1") "name1"}}', "true"),
    ('{{keys (dict "b" 1) (dict "a" 2)}}', "[b a]"),
    ('{{dict "a"}}', "map[a:]"),
    # lists.md
    ("{{first (list 1 2 3 4 5)}} {{last (list 1 2 3 4 5)}}", "1 5"),
    (
        "{{$l := list 1 2 3 4 5}}{{slice $l}} {{slice $l 1}} {{slice $l 1 3}} {{slice $l 0 3}}",
        "[1 2 3 4 5] [2 3 4 5] [2 3] [1 2 3]",
    ),
    # math.md
    ("{{add 1 2 3}} {{add1 5}} {{sub 5 3}} {{div 7 2}} {{mod 7 3}} {{mul 2 3 4}}", "6 6 2 3 1 24"),
    ("{{max 1 2 3}} {{min 1 2 3}}", "3 1"),
    # conversion.md
    ('{{atoi "42"}} {{int "42"}} {{int64 "0x10"}} {{float64 "1.5"}} {{int 2.9}}', "42 42 16 1.5 2"),
    ("{{toString 5}} {{toString .ratio}} {{toString .lst}}", "5 2.5 [a b c]"),
    # date.md
    ('{{duration "95"}}', "1m35s"),
    ('{{htmlDate 0}} {{dateInZone "2006-01-02 15:04" 86400 "UTC"}}', "1970-01-01 1970-01-02 00:00"),
    ('{{toDate "2006-01-02" "2017-12-31" | date "02/01/2006"}}', "31/12/2017"),
    ('{{toDate "2006-01-02" "2017-12-31" | unixEpoch}}', "1514678400"),
    # lists.md
    (
        "{{$l := list 1 2 3 4 5}}{{append $l 6}} {{prepend $l 0}} "
        "{{concat $l (list 6 7) (list 8)}}",
        "[1 2 3 4 5 6] [0 1 2 3 4 5] [1 2 3 4 5 6 7 8]",
    ),
    (
        "{{$l := list 1 2 3 4 5}}{{rest $l}} {{initial $l}} {{reverse $l}} {{has 4 $l}}",
        "[2 3 4 5] [1 2 3 4] [5 4 3 2 1] true",
    ),
    ("{{uniq (list 1 1 1 2)}} {{without (list 1 2 3 4 5) 1 3 5}}", "[1 2] [2 4]"),
    ('{{compact (list 1 "a" "foo" "")}} {{sortAlpha (list "b" "a" "C")}}', "[1 a foo] [C a b]"),
    ("{{until 5}} {{untilStep 3 6 2}}", "[0 1 2 3 4] [3 5]"),
    # dicts.md
    (
        '{{$d := dict "a" 1 "b" 2 "c" 3}}{{pick $d "a" "b"}} {{omit $d "a"}} {{unset $d "c"}}',
        "map[a:1 b:2] map[b:2 c:3] map[a:1 b:2]",
    ),
    ('{{pluck "name1" (dict "name1" "v1") (dict "name1" "v2") (dict "x" 1)}}', "[v1 v2]"),
    (
        '{{dig "user" "role" "humanName" "guest" '
        '(dict "user" (dict "role" (dict "humanName" "cool")))}}',
        "cool",
    ),
    ('{{dig "user" "nope" "x" "guest" (dict "user" (dict))}}', "guest"),
    # strings.md
    ('{{substr 0 5 "hello world"}}', "hello"),
    ('{{cat "hello" "beautiful" "world"}}', "hello beautiful world"),
    ('{{nospace "hello w o r l d"}}', "helloworld"),
    ('{{len .lst | plural "one anchovy" "many anchovies"}}', "many anchovies"),
    ('{{regexFind "[a-zA-Z][1-9]" "abcd1234"}}', "d1"),
    ('{{regexSplit "z+" "pizza" -1}}', "[pi a]"),
    ('{{regexQuoteMeta "1.2.3"}}', "1\\.2\\.3"),
    ('{{trimall "$" "$5.00"}}', "5.00"),
    # crypto.md
    ('{{sha1sum "Hello world!"}}', "d3486ae9136e7856bc42212385ea797094475802"),
    (
        '{{sha256sum "Hello world!"}}',
        "c0535e4be2b79ffd93291305436bf889314e4a3faec05ecffcbb7df31ad9e51a",
    ),
    ('{{adler32sum "Hello world!"}}', "487130206"),
    # math.md
    (
        "{{floor 123.9999}} {{ceil 123.001}} {{round 123.555555 3}} {{round 123.5555 3 0.4}}",
        "123 124 123.556 123.556",
    ),
    ("{{biggest 1 2 3}}", "3"),
    # reflection.md, flow_control.md, defaults.md
    (
        '{{kindOf "hello"}} {{kindIs "int64" .replicas}} {{typeOf .lst}} {{typeIs "float64" 1.5}}',
        "string true []interface {} true",
    ),
    ('{{deepEqual (list 1 2) (list 1 2)}} {{all 1 "a"}} {{any 0 ""}}', "true true false"),
    (
        '{{fromJson "{\\"foo\\": 55}"}} {{toRawJson .obj}}',
        'map[foo:55] {"a":"<x&y>","b":[1,2.5,null],"c":{}}',
    ),
    ('{{b32enc "hello"}} {{b32dec "NBSWY3DP"}}', "NBSWY3DP hello"),
    # encoding.md
    ('{{b64enc "hello"}} {{b64dec "aGVsbG8="}}', "aGVsbG8= hello"),
]

FROM_SOURCE: list[tuple[str, str]] = [
    ('{{rest (list)}} {{concat}} {{regexFindAll "x" "abc" -1}}', "[] [] []"),  # typed nil slices
    ('{{fromJson "not json"}}', "<no value>"),  # the error is dropped: nil
    ('{{(fromJson "{\\"n\\": 1}").n | printf "%T"}}', "float64"),  # json numbers are float64
    ('{{regexFindAll "x*" "abxd" -1}} {{regexSplit "" "abc" -1}}', "[  x ] [a b c]"),
    ("{{duration 95}} {{duration .replicas}}", "0s 5s"),  # an int literal is not an int64
    ('{{toDate "2006-01-02" "bad"}}', "0001-01-01 00:00:00 +0000 UTC"),  # errors give zero time
    # cast.ToInt64: floats truncate, strings parse with base 0, junk is 0, "3.0" is 3
    (
        '{{add .replicas 1}} {{add .ratio 1}} {{add "07" 1}} {{add "x" 1}} {{add "3.0" 1}}',
        "6 3 8 1 4",
    ),
    ("{{div -7 2}} {{mod -7 3}}", "-3 -1"),  # Go truncates toward zero
    ('{{b64dec "%%%"}}', "illegal base64 data at input byte 0"),
    ('{{atoi "x"}} {{atoi " 1"}}', "0 0"),
    ('{{trunc 2 "héllo"}}', "h\ufffd"),  # bytes, not runes
    ('{{title "hello_world-foo bar"}}', "Hello_world-Foo Bar"),
    ("{{quote .n 1 .nope}}", '"1"'),
    ('{{join "," (list 1 .n "b")}}', "1,b"),
    ('{{regexReplaceAll "x*" "abxd" "-"}}', "-a-b-d-"),  # Go skips an empty match after a match
    ('{{regexReplaceAll "a(?P<n>x*)b" "axxb" "$n $1x ${1}x $$"}}', "xx  xxx $"),
    ('{{regexMatch "(" "x"}}', "false"),
    ("{{slice (list) 1}}", "<no value>"),
    ("{{empty .n}} {{default 3 .n}}", "true 3"),
]


def test_now_and_ago_are_current() -> None:
    out = render('{{now | unixEpoch}} {{ago now}} {{(now).Year}} {{now | date "2006"}}')
    epoch, ago, year, year2 = out.split()
    assert abs(int(epoch) - time.time()) < 5
    assert ago == "0s"
    assert year == year2 == time.strftime("%Y", time.gmtime())


def test_argo_time_variable() -> None:
    data = {"time": argo_time_vars(), "ts": "2024-03-02T10:04:05Z"}
    text = '{{(call .time.Parse .ts).Format "Jan 2 15:04"}} {{(call .time.Now).Year}}'
    assert parse(text).render(data) == f"Mar 2 10:04 {time.gmtime().tm_year}"


def test_named_time_zones_are_refused_not_guessed() -> None:
    with pytest.raises(TemplateError, match="time zone 'Europe/Paris' is not supported"):
        render('{{dateInZone "15:04" 0 "Europe/Paris"}}')


def render(text: str, data: Any = None) -> str:
    return parse(text, name="t").render(DATA if data is None else data)


@pytest.mark.parametrize(("text", "want"), DOCUMENTED + FROM_SOURCE)
def test_sprig(text: str, want: str) -> None:
    assert render(text) == want


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{{env "HOME"}}', 'template: t:1: function "env" not defined'),
        ('{{expandenv "$HOME"}}', 'template: t:1: function "expandenv" not defined'),
        (
            '{{semver "1.2.3"}}',
            'template: t:1: function "semver" is a sprig function that rollout-workers '
            "does not implement",
        ),
        ("{{upper 3}}", 'template: t:1:8: executing "t" at <3>: expected string; found 3'),
        (
            "{{upper .replicas}}",
            'template: t:1:8: executing "t" at <.replicas>: '
            "wrong type for value; expected string; got int64",
        ),
        (
            '{{trunc "a" "b"}}',
            'template: t:1:8: executing "t" at <"a">: expected integer; found "a"',
        ),
        (
            "{{div 1 0}}",
            'template: t:1:2: executing "t" at <div 1 0>: '
            "error calling div: runtime error: integer divide by zero",
        ),
        (
            '{{first "abc"}}',
            'template: t:1:2: executing "t" at <first "abc">: '
            "error calling first: Cannot find first on type string",
        ),
        (
            '{{regexReplaceAll "(" "x" "y"}}',
            'template: t:1:2: executing "t" at <regexReplaceAll "(" "x" "y">: '
            'error calling regexReplaceAll: regexp: Compile("("): '
            "error parsing regexp: missing ): (",  # RE2's wording of the detail
        ),
        (
            '{{fail "Please accept the end user license agreement"}}',
            'template: t:1:2: executing "t" at <fail "Please accept the end user license '
            'agreement">: error calling fail: Please accept the end user license agreement',
        ),
        (
            '{{first (list) | printf "%v"}} {{dig "a" "b" "d" (dict "a" "x")}}',
            'template: t:1:33: executing "t" at <dig "a" "b" "d" (dict "a" "x")>: '
            "error calling dig: interface conversion: interface {} is string, "
            "not map[string]interface {}",
        ),
        (
            '{{set .n "a" 1}}',  # a nil interface{} is not a map[string]interface{}
            'template: t:1:6: executing "t" at <.n>: wrong type for value; '
            "expected map[string]interface {}; got interface {}",
        ),
        (
            '{{set .nope "a" 1}}',  # a missing key is a nil map
            'template: t:1:2: executing "t" at <set .nope "a" 1>: '
            "error calling set: assignment to entry in nil map",
        ),
    ],
)
def test_sprig_errors(text: str, error: str) -> None:
    with pytest.raises(TemplateError) as e:
        render(text)
    assert str(e.value) == error

"""The sprig (v3) text functions that notification templates use, written to sprig's docs.

notifications-engine passes ``sprig.TxtFuncMap()`` minus ``env`` and ``expandenv``; nothing
here reads the environment, files or the network.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information

from rollout_workers.notifications.gotemplate.functions import Func, GoError
from rollout_workers.notifications.gotemplate.gofmt import go_quote, shortest_digits, sprint_value
from rollout_workers.notifications.gotemplate.gotime import SPRIG_DATE, GoTime, format_time
from rollout_workers.notifications.gotemplate.values import MISSING, GoInt, Uint8, is_true


def _strval(v: Any) -> str:
    if isinstance(v, str):
        return v
    if v is None or v is MISSING:
        return "<nil>"
    return sprint_value(v)


def _parse_int_base0(s: str) -> int:
    t = s.replace("_", "")
    neg = t.startswith("-")
    if t[:1] in "+-":
        t = t[1:]
    if not t:
        raise ValueError(s)
    low = t.lower()
    if low.startswith(("0x", "0o", "0b")):
        v = int(t, 0)
    elif len(t) > 1 and t[0] == "0":
        v = int(t[1:], 8)
    elif t.isdigit():
        v = int(t)
    else:
        raise ValueError(s)
    v = -v if neg else v
    if not -(2**63) <= v < 2**63:
        raise ValueError(s)
    return v


def _trim_zero_decimal(s: str) -> str:
    # spf13/cast: "3.000" parses as an integer, "3.5" does not.
    if "." in s:
        head, tail = s.split(".", 1)
        if tail and set(tail) == {"0"} and head:
            return head
    return s


def _to_int64(v: Any) -> int:
    """spf13/cast ToInt64 (errors give 0)."""
    if isinstance(v, bool):
        return 1 if v else 0
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return -(2**63)
        return int(v)
    if isinstance(v, str):
        try:
            return _parse_int_base0(_trim_zero_decimal(v))
        except ValueError:
            return 0
    return 0


def _to_float64(v: Any) -> float:
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return 0.0
    return 0.0


def _wrap64(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _empty(v: Any) -> bool:
    if v is MISSING or v is None:
        return True
    return not is_true(v)


def _default(d: Any, *given: Any) -> Any:
    if not given or _empty(given[0]):
        return d
    return given[0]


def _coalesce(*vs: Any) -> Any:
    for v in vs:
        if not _empty(v):
            return v
    return None


def _ternary(vt: Any, vf: Any, v: bool) -> Any:
    return vt if v else vf


def _is_title_separator(r: str) -> bool:
    if ord(r) <= 0x7F:
        return not (r.isascii() and (r.isalnum() or r == "_"))
    if r.isalpha() or r.isdigit():
        return False
    return r.isspace()


def _title(s: str) -> str:
    """strings.Title."""
    out = []
    prev = " "
    for c in s:
        out.append(c.upper() if _is_title_separator(prev) else c)
        prev = c
    return "".join(out)


def _trunc(c: int, s: str) -> str:
    """sprig's trunc counts bytes; a cut rune becomes U+FFFD."""
    b = s.encode()
    if c < 0 and len(b) + c > 0:
        return b[len(b) + c :].decode("utf-8", "replace")
    if c >= 0 and len(b) > c:
        return b[:c].decode("utf-8", "replace")
    return s


def _split(sep: str, orig: str) -> dict[str, Any]:
    parts = orig.split(sep) if sep else list(orig)
    return {f"_{i}": p for i, p in enumerate(parts)}


def _split_list(sep: str, orig: str) -> list[Any]:
    return orig.split(sep) if sep else list(orig)


def _strslice(v: Any) -> list[str]:
    if isinstance(v, list):
        return [_strval(e) for e in v if e is not None]
    if v is None or v is MISSING:
        return []
    return [_strval(v)]


def _join(sep: str, v: Any) -> str:
    return sep.join(_strslice(v))


def _quote(*strs: Any) -> str:
    return " ".join(go_quote(_strval(s)) for s in strs if s is not None and s is not MISSING)


def _squote(*strs: Any) -> str:
    return " ".join(f"'{_strval(s)}'" for s in strs if s is not None and s is not MISSING)


def _json_float(f: float) -> str:
    """encoding/json's float64: shortest digits, %e outside [1e-6, 1e21)."""
    if math.isnan(f) or math.isinf(f):
        raise GoError(f"json: unsupported value: {sprint_value(f)}")
    a = abs(f)
    sign = "-" if f < 0 else ""
    if a == 0:
        return sign + "0"
    ds, dp = shortest_digits(a)
    if a < 1e-6 or a >= 1e21:
        exp = dp - 1
        mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-")
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{ds}"
    if dp >= len(ds):
        return sign + ds + "0" * (dp - len(ds))
    return f"{sign}{ds[:dp]}.{ds[dp:]}"


def _json_str(s: str) -> str:
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\t":
            out.append("\\t")
        elif c in "<>&" or c < " " or c in "\u2028\u2029":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def _to_json_text(v: Any, indent: str, level: int) -> str:
    if v is None or v is MISSING:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return _json_float(v)
    if isinstance(v, str):
        return _json_str(v)
    if isinstance(v, GoTime):  # time.Time.MarshalJSON: RFC 3339 with nanoseconds
        return _json_str(format_time(v, "2006-01-02T15:04:05.999999999Z07:00"))
    nl = "\n" + indent * (level + 1) if indent else ""
    end = "\n" + indent * level if indent else ""
    if isinstance(v, list):
        if not v:
            return "[]"
        items = [_to_json_text(e, indent, level + 1) for e in v]
        return "[" + nl + ("," + nl).join(items) + end + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        sep = ": " if indent else ":"
        items = [
            _json_str(k) + sep + _to_json_text(v[k], indent, level + 1)
            for k in sorted(v, key=lambda s: s.encode())
        ]
        return "{" + nl + ("," + nl).join(items) + end + "}"
    raise GoError(f"json: unsupported type: {type(v).__name__}")


def _to_json(v: Any) -> str:
    try:
        return _to_json_text(v, "", 0)
    except GoError:
        return ""


def _to_pretty_json(v: Any) -> str:
    try:
        return _to_json_text(v, "  ", 0)
    except GoError:
        return ""


def _add(*vs: Any) -> int:
    return _wrap64(sum(_to_int64(v) for v in vs))


def _sub(a: Any, b: Any) -> int:
    return _wrap64(_to_int64(a) - _to_int64(b))


def _mul(a: Any, *vs: Any) -> int:
    r = _to_int64(a)
    for v in vs:
        r = _wrap64(r * _to_int64(v))
    return r


def _go_div(a: int, b: int) -> int:
    if b == 0:
        raise GoError("runtime error: integer divide by zero")
    q = abs(a) // abs(b)
    return _wrap64(q if (a >= 0) == (b >= 0) else -q)


def _div(a: Any, b: Any) -> int:
    return _go_div(_to_int64(a), _to_int64(b))


def _mod(a: Any, b: Any) -> int:
    x, y = _to_int64(a), _to_int64(b)
    if y == 0:
        raise GoError("runtime error: integer divide by zero")
    return x - y * _go_div(x, y)


def _add1(v: Any) -> int:
    return _wrap64(_to_int64(v) + 1)


def _max(a: Any, *vs: Any) -> int:
    return max([_to_int64(a), *(_to_int64(v) for v in vs)])


def _min(a: Any, *vs: Any) -> int:
    return min([_to_int64(a), *(_to_int64(v) for v in vs)])


def _list(*vs: Any) -> list[Any]:
    return list(vs)


def _dict(*vs: Any) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for i in range(0, len(vs), 2):
        k = _strval(vs[i])
        d[k] = vs[i + 1] if i + 1 < len(vs) else ""
    return d


def _get(d: dict[str, Any] | None, key: str) -> Any:
    if d is not None and key in d:
        return d[key]
    return ""


def _set(d: dict[str, Any] | None, key: str, value: Any) -> dict[str, Any]:
    if d is None:
        raise GoError("assignment to entry in nil map")
    d[key] = value
    return d


def _has_key(d: dict[str, Any] | None, key: str) -> bool:
    return d is not None and key in d


def _keys(*dicts: Any) -> list[Any]:
    out: list[Any] = []
    for d in dicts:
        if d is not None:
            out.extend(sorted(d, key=lambda s: s.encode()))  # Go's order is random: sort it
    return out


_NIL_DEREF = "runtime error: invalid memory address or nil pointer dereference"


def _first(v: Any) -> Any:
    if isinstance(v, list):
        return v[0] if v else None
    if v is None or v is MISSING:
        raise GoError(_NIL_DEREF)  # reflect.TypeOf(nil).Kind()
    raise GoError(f"Cannot find first on type {_kind(v)}")


def _last(v: Any) -> Any:
    if isinstance(v, list):
        return v[-1] if v else None
    if v is None or v is MISSING:
        raise GoError(_NIL_DEREF)
    raise GoError(f"Cannot find last on type {_kind(v)}")


def _kind(v: Any) -> str:
    """reflect.Kind's name, which sprig's list errors print."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, GoTime):
        return "struct"
    if isinstance(v, Uint8):
        return "uint8"
    if isinstance(v, GoInt):
        return "int"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "map"
    if isinstance(v, list):
        return "slice"
    return "func"


def _sprig_slice(lst: Any, *indices: Any) -> Any:
    """sprig's slice (it shadows Go's builtin): lists only, indexes converted with cast.ToInt."""
    if lst is None or lst is MISSING:
        raise GoError("runtime error: invalid memory address or nil pointer dereference")
    if not isinstance(lst, list):
        raise GoError(f"list should be type of slice or array but {_kind(lst)}")
    if not lst:
        return None
    start = _to_int64(indices[0]) if indices else 0
    end = _to_int64(indices[1]) if len(indices) >= 2 else len(lst)
    if start < 0 or end < start or end > len(lst):
        raise GoError("reflect.Value.Slice: slice index out of bounds")
    return lst[start:end]


def _b64enc(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def _b64dec(s: str) -> str:
    try:
        return base64.b64decode(s.encode(), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return "illegal base64 data at input byte " + str(_bad_b64_offset(s))


def _bad_b64_offset(s: str) -> int:
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, c in enumerate(s):
        if c not in alphabet and c != "=":
            return i
    return len(s) - len(s) % 4 if len(s) % 4 else len(s)


MAX_RESULT = 16 << 20  # no function builds a longer string (Go would try, and exhaust memory)


def _check_size(n: int) -> None:
    if n > MAX_RESULT:
        raise GoError(f"result exceeds {MAX_RESULT} bytes")


def _repeat(count: int, s: str) -> str:
    if count < 0:
        raise GoError("strings: negative Repeat count")
    _check_size(count * len(s))
    return s * count


def _replace(old: str, new: str, src: str) -> str:
    count = len(src) + 1 if old == "" else src.count(old)
    _check_size(len(src) + count * max(0, len(new) - len(old)))
    return src.replace(old, new)


def _indent(spaces: int, v: str) -> str:
    if spaces < 0:
        raise GoError("strings: negative Repeat count")
    _check_size(len(v) + spaces * (v.count("\n") + 1))
    pad = " " * spaces
    return pad + v.replace("\n", "\n" + pad)


def _nindent(spaces: int, v: str) -> str:
    return "\n" + _indent(spaces, v)


def _compile(regex: str) -> Any:
    try:
        return re2.compile(regex)
    except re2.error as e:
        detail = e.args[0] if e.args else ""
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        # The detail is RE2's wording (Go's regexp words some errors differently).
        raise GoError(f"regexp: Compile({go_quote(regex)}): error parsing regexp: {detail}") from e


def _regex_match(regex: str, s: str) -> bool:
    try:
        return _compile(regex).search(s) is not None
    except GoError:
        return False


_EXPAND = re.compile(r"\$(\$|\{[A-Za-z0-9_]+\}|[A-Za-z0-9_]+)")


def _go_expand(m: Any, template: str) -> str:
    def sub(em: re.Match[str]) -> str:
        name = em.group(1)
        if name == "$":
            return "$"
        name = name.strip("{}")
        try:
            g = m.group(int(name)) if name.isdigit() else m.group(name)
        except (IndexError, KeyError, ValueError):
            return ""
        return g or ""

    return _EXPAND.sub(sub, template)


def _go_replace_all(r: Any, s: str, repl: Any) -> str:
    """regexp.(*Regexp).replaceAll: an empty match right after a match is not replaced."""
    out: list[str] = []
    last_end = 0
    pos = 0
    while pos <= len(s):
        m = r.search(s, pos)
        if m is None:
            break
        a, b = m.span()
        out.append(s[last_end:a])
        if b > last_end or a == 0:
            out.append(repl(m))
        last_end = b
        pos = pos + 1 if pos + 1 > b else b  # always advance at least one character
    out.append(s[last_end:])
    return "".join(out)


def _regex_replace_all(regex: str, s: str, repl: str) -> str:
    return _go_replace_all(_compile(regex), s, lambda m: _go_expand(m, repl))


def _regex_replace_all_literal(regex: str, s: str, repl: str) -> str:
    return _go_replace_all(_compile(regex), s, lambda m: repl)


def _regex_find_all(regex: str, s: str, n: int) -> list[Any]:
    found = [m.group(0) for m in _compile(regex).finditer(s)]
    return found if n < 0 else found[:n]


def _to_int(v: Any) -> GoInt:
    return GoInt(_to_int64(v))


def _atoi(a: str) -> GoInt:
    try:
        t = a[1:] if a[:1] in "+-" else a
        if not t.isdigit() or not t.isascii():
            return GoInt(0)
        return GoInt(int(a))
    except ValueError:
        return GoInt(0)


def _to_string(v: Any) -> str:
    return _strval(v)


def _to_strings(v: Any) -> list[Any]:
    if isinstance(v, list):
        return [_strval(e) for e in v]
    return [_strval(v)]


def _contains(substr: str, s: str) -> bool:
    return substr in s


def _has_prefix(p: str, s: str) -> bool:
    return s.startswith(p)


def _has_suffix(p: str, s: str) -> bool:
    return s.endswith(p)


def _trim_prefix(p: str, s: str) -> str:
    return s[len(p) :] if p and s.startswith(p) else s


def _trim_suffix(p: str, s: str) -> str:
    return s[: -len(p)] if p and s.endswith(p) else s


_SPACES = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def _s(name: str, f: Any, *params: str, variadic: bool = False) -> tuple[str, Func]:
    return name, Func(f, params, variadic)


SPRIG: dict[str, Func] = dict(
    [
        _s("default", _default, "any", "any", variadic=True),
        _s("empty", _empty, "any"),
        _s("coalesce", _coalesce, "any", variadic=True),
        _s("ternary", _ternary, "any", "any", "bool"),
        _s("upper", lambda s: s.upper(), "string"),
        _s("lower", lambda s: s.lower(), "string"),
        _s("title", _title, "string"),
        _s("trim", lambda s: s.strip(_SPACES), "string"),
        _s("trimAll", lambda a, b: b.strip(a), "string", "string"),
        _s("trimPrefix", _trim_prefix, "string", "string"),
        _s("trimSuffix", _trim_suffix, "string", "string"),
        _s("trunc", _trunc, "int", "string"),
        _s("replace", _replace, "string", "string", "string"),
        _s("contains", _contains, "string", "string"),
        _s("hasPrefix", _has_prefix, "string", "string"),
        _s("hasSuffix", _has_suffix, "string", "string"),
        _s("split", _split, "string", "string"),
        _s("splitList", _split_list, "string", "string"),
        _s("join", _join, "string", "any"),
        _s("quote", _quote, "any", variadic=True),
        _s("squote", _squote, "any", variadic=True),
        _s("toJson", _to_json, "any"),
        _s("toPrettyJson", _to_pretty_json, "any"),
        _s("toString", _to_string, "any"),
        _s("toStrings", _to_strings, "any"),
        _s("add", _add, "any", variadic=True),
        _s("sub", _sub, "any", "any"),
        _s("mul", _mul, "any", "any", variadic=True),
        _s("div", _div, "any", "any"),
        _s("mod", _mod, "any", "any"),
        _s("add1", _add1, "any"),
        _s("max", _max, "any", "any", variadic=True),
        _s("biggest", _max, "any", "any", variadic=True),
        _s("min", _min, "any", "any", variadic=True),
        _s("list", _list, "any", variadic=True),
        _s("dict", _dict, "any", variadic=True),
        _s("get", _get, "map", "string"),
        _s("set", _set, "map", "string", "any"),
        _s("hasKey", _has_key, "map", "string"),
        _s("keys", _keys, "map", variadic=True),
        _s("first", _first, "any"),
        _s("last", _last, "any"),
        _s("slice", _sprig_slice, "any", "any", variadic=True),
        _s("b64enc", _b64enc, "string"),
        _s("b64dec", _b64dec, "string"),
        _s("repeat", _repeat, "int", "string"),
        _s("indent", _indent, "int", "string"),
        _s("nindent", _nindent, "int", "string"),
        _s("regexMatch", _regex_match, "string", "string"),
        _s("regexFindAll", _regex_find_all, "string", "string", "int"),
        _s("regexReplaceAll", _regex_replace_all, "string", "string", "string"),
        _s("regexReplaceAllLiteral", _regex_replace_all_literal, "string", "string", "string"),
        _s("int", _to_int, "any"),
        _s("int64", _to_int64, "any"),
        _s("float64", _to_float64, "any"),
        _s("atoi", _atoi, "string"),
    ]
)
SPRIG.update(SPRIG_DATE)

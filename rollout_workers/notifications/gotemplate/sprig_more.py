"""More of sprig's functions: lists, hashes, encodings, rounding, regexps, reflection, JSON.

Each follows sprig v3.3's source; the ``must*`` forms share the plain forms' code (a sprig
panic and a returned error read the same in a template error).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import zlib
from typing import Any

from rollout_workers.notifications.gotemplate.functions import Func, GoError
from rollout_workers.notifications.gotemplate.sprig import (
    _NIL_DEREF,
    _check_size,
    _compile,
    _empty,
    _first,
    _kind,
    _last,
    _sprig_slice,
    _strslice,
    _strval,
    _to_float64,
    _to_json,
    _to_json_text,
)
from rollout_workers.notifications.gotemplate.values import MISSING, GoInt, type_name


def _as_list(v: Any, what: str) -> list[Any]:
    if isinstance(v, list):
        return v
    if v is None or v is MISSING:
        raise GoError(_NIL_DEREF)  # reflect.TypeOf(nil).Kind()
    raise GoError(f"Cannot {what} on type {_kind(v)}")


def _append(lst: Any, v: Any) -> list[Any]:
    return [*_as_list(lst, "push"), v]


def _prepend(lst: Any, v: Any) -> list[Any]:
    return [v, *_as_list(lst, "prepend")]


def _concat(*lists: Any) -> Any:
    out: list[Any] = []
    for lst in lists:
        if lst is None or lst is MISSING:
            raise GoError(_NIL_DEREF)
        if not isinstance(lst, list):
            raise GoError(f"Cannot concat type {_kind(lst)} as list")
        out.extend(lst)
    return out


def _rest(lst: Any) -> Any:
    return _as_list(lst, "find rest")[1:]


def _initial(lst: Any) -> Any:
    return _as_list(lst, "find initial")[:-1]


def _reverse(lst: Any) -> list[Any]:
    return list(reversed(_as_list(lst, "find reverse")))


def _compact(lst: Any) -> list[Any]:
    return [x for x in _as_list(lst, "compact") if not _empty(x)]


def _deep_equal(a: Any, b: Any) -> bool:
    # reflect.DeepEqual on JSON-shaped values: same Go type and equal contents
    if type_name(a) != type_name(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _uniq(lst: Any) -> list[Any]:
    out: list[Any] = []
    for x in _as_list(lst, "find uniq"):
        if not any(_deep_equal(x, y) for y in out):
            out.append(x)
    return out


def _without(lst: Any, *omit: Any) -> list[Any]:
    return [x for x in _as_list(lst, "find without") if not any(_deep_equal(x, o) for o in omit)]


def _has(needle: Any, haystack: Any) -> bool:
    if haystack is None or haystack is MISSING:
        return False
    if not isinstance(haystack, list):
        raise GoError(f"Cannot find has on type {_kind(haystack)}")
    return any(_deep_equal(needle, x) for x in haystack)


def _sort_alpha(lst: Any) -> list[Any]:
    if isinstance(lst, list):
        return sorted(_strslice(lst), key=lambda s: s.encode())
    return [_strval(lst)]


def _until_step(start: int, stop: int, step: int) -> list[Any]:
    if (stop < start and step >= 0) or (stop >= start and step <= 0):
        return []
    _check_size(abs(stop - start) // abs(step) * 8)
    return [GoInt(i) for i in range(start, stop, step)]


def _until(count: int) -> list[Any]:
    return _until_step(0, count, -1 if count < 0 else 1)


def _substr(start: int, end: int, s: str) -> str:
    b = s.encode()
    try:
        if start < 0:
            if end < 0 or end > len(b):
                raise IndexError
            return b[:end].decode("utf-8", "replace")
        if end < 0 or end > len(b):
            if start > len(b):
                raise IndexError
            return b[start:].decode("utf-8", "replace")
        if start > end:
            raise IndexError
        return b[start:end].decode("utf-8", "replace")
    except IndexError:
        raise GoError(f"runtime error: slice bounds out of range [{start}:{end}]") from None


def _plural(one: str, many: str, count: int) -> str:
    return one if count == 1 else many


def _cat(*vs: Any) -> str:
    from rollout_workers.notifications.gotemplate.gofmt import sprint_value

    return " ".join(sprint_value(v) for v in vs if v is not None and v is not MISSING)


def _nospace(s: str) -> str:
    return "".join(c for c in s if not c.isspace())


def _b32dec(s: str) -> str:
    try:
        return base64.b32decode(s.encode()).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return "illegal base32 data at input byte 0"


def _floor(a: Any) -> float:
    return float(math.floor(_to_float64(a)))


def _ceil(a: Any) -> float:
    return float(math.ceil(_to_float64(a)))


def _round(a: Any, p: int, *opt: Any) -> float:
    round_on = float(opt[0]) if opt else 0.5
    val = _to_float64(a)
    pow_ = math.pow(10, p)
    digit = pow_ * val
    frac = math.modf(digit)[0]
    r = math.ceil(digit) if frac >= round_on else math.floor(digit)
    return r / pow_


def _regex_spans(r: Any, s: str, n: int) -> list[Any]:
    """regexp's allMatches: no empty match right after a match."""
    if n < 0:
        n = len(s) + 1
    out: list[Any] = []
    pos = 0
    prev_end = -1
    while len(out) < n and pos <= len(s):
        m = r.search(s, pos)
        if m is None:
            break
        a, b = m.span()
        accept = True
        if b == pos:
            if a == prev_end:
                accept = False
            pos += 1
        else:
            pos = b
        prev_end = b
        if accept:
            out.append(m)
    return out


def _regex_find_all(regex: str, s: str, n: int) -> Any:
    return [m.group(0) for m in _regex_spans(_compile(regex), s, n)]


def _regex_find(regex: str, s: str) -> str:
    m = _compile(regex).search(s)
    return m.group(0) if m else ""


def _regex_split(regex: str, s: str, n: int) -> Any:
    r = _compile(regex)
    if n == 0:
        return []
    if regex and not s:
        return [""]
    out: list[Any] = []
    beg = end = 0
    for m in _regex_spans(r, s, n):
        if n > 0 and len(out) == n - 1:
            break
        end = m.start()
        if m.end() != 0:
            out.append(s[beg:end])
        beg = m.end()
    if end != len(s):
        out.append(s[beg:])
    return out


def _regex_quote_meta(s: str) -> str:
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$" else c for c in s)


def _from_json(s: str) -> Any:
    try:
        return json.loads(s, parse_int=float, parse_constant=_bad_constant)
    except (ValueError, RecursionError) as e:
        raise GoError(str(e)) from None


def _bad_constant(name: str) -> Any:
    raise ValueError(f"invalid character '{name[0]}' looking for beginning of value")


def _from_json_lenient(s: str) -> Any:
    try:
        return _from_json(s)
    except GoError:
        return None  # sprig's fromJson ignores the error: nil


def _must_to_json(v: Any) -> str:
    return _to_json_text(v, "", 0)


def _must_to_pretty_json(v: Any) -> str:
    return _to_json_text(v, "  ", 0)


def _to_raw_json(v: Any) -> str:
    return _to_json(v).replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u0026", "&")


def _kind_of(v: Any) -> str:
    return "invalid" if v is None or v is MISSING else _kind(v)


def _type_of(v: Any) -> str:
    return "<nil>" if v is None or v is MISSING else type_name(v)


def _iface_conv(v: Any, want: str) -> GoError:
    got = "nil" if v is None or v is MISSING else type_name(v)
    return GoError(f"interface conversion: interface {{}} is {got}, not {want}")


def _dig(*ps: Any) -> Any:
    if len(ps) < 3:
        raise GoError("dig needs at least three arguments")
    d, default, keys = ps[-1], ps[-2], ps[:-2]
    for k in keys:
        if not isinstance(k, str):
            raise _iface_conv(k, "string")
    if not isinstance(d, dict):
        raise _iface_conv(d, "map[string]interface {}")
    for i, k in enumerate(keys):
        if k not in d:
            return default
        if i == len(keys) - 1:
            return d[k]
        d = d[k]
        if not isinstance(d, dict):
            raise _iface_conv(d, "map[string]interface {}")
    return default


def _pick(d: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    return {k: d[k] for k in keys if d is not None and k in d}


def _omit(d: dict[str, Any] | None, *keys: str) -> dict[str, Any]:
    return {k: v for k, v in (d or {}).items() if k not in keys}


def _unset(d: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if d is not None:
        d.pop(key, None)
    return d


def _pluck(key: str, *dicts: dict[str, Any] | None) -> list[Any]:
    return [d[key] for d in dicts if d is not None and key in d]


def _fail(msg: str) -> str:
    raise GoError(msg)


def _s(fn: Any, *params: str, variadic: bool = False) -> Func:
    return Func(fn, params, variadic)


MORE: dict[str, Func] = {
    "append": _s(_append, "any", "any"),
    "push": _s(_append, "any", "any"),
    "mustAppend": _s(_append, "any", "any"),
    "mustPush": _s(_append, "any", "any"),
    "prepend": _s(_prepend, "any", "any"),
    "mustPrepend": _s(_prepend, "any", "any"),
    "concat": _s(_concat, "any", variadic=True),
    "rest": _s(_rest, "any"),
    "mustRest": _s(_rest, "any"),
    "initial": _s(_initial, "any"),
    "mustInitial": _s(_initial, "any"),
    "reverse": _s(_reverse, "any"),
    "mustReverse": _s(_reverse, "any"),
    "compact": _s(_compact, "any"),
    "mustCompact": _s(_compact, "any"),
    "uniq": _s(_uniq, "any"),
    "mustUniq": _s(_uniq, "any"),
    "without": _s(_without, "any", "any", variadic=True),
    "mustWithout": _s(_without, "any", "any", variadic=True),
    "has": _s(_has, "any", "any"),
    "mustHas": _s(_has, "any", "any"),
    "sortAlpha": _s(_sort_alpha, "any"),
    "until": _s(_until, "int"),
    "untilStep": _s(_until_step, "int", "int", "int"),
    "substr": _s(_substr, "int", "int", "string"),
    "plural": _s(_plural, "string", "string", "int"),
    "cat": _s(_cat, "any", variadic=True),
    "nospace": _s(_nospace, "string"),
    "b32enc": _s(lambda s: base64.b32encode(s.encode()).decode(), "string"),
    "b32dec": _s(_b32dec, "string"),
    "sha1sum": _s(lambda s: hashlib.sha1(s.encode()).hexdigest(), "string"),
    "sha256sum": _s(lambda s: hashlib.sha256(s.encode()).hexdigest(), "string"),
    "sha512sum": _s(lambda s: hashlib.sha512(s.encode()).hexdigest(), "string"),
    "adler32sum": _s(lambda s: str(zlib.adler32(s.encode())), "string"),
    "floor": _s(_floor, "any"),
    "ceil": _s(_ceil, "any"),
    "round": _s(_round, "any", "int", "float64", variadic=True),
    "all": _s(lambda *vs: all(not _empty(v) for v in vs), "any", variadic=True),
    "any": _s(lambda *vs: any(not _empty(v) for v in vs), "any", variadic=True),
    "regexFind": _s(_regex_find, "string", "string"),
    "mustRegexFind": _s(_regex_find, "string", "string"),
    "regexFindAll": _s(_regex_find_all, "string", "string", "int"),
    "mustRegexFindAll": _s(_regex_find_all, "string", "string", "int"),
    "regexSplit": _s(_regex_split, "string", "string", "int"),
    "mustRegexSplit": _s(_regex_split, "string", "string", "int"),
    "regexQuoteMeta": _s(_regex_quote_meta, "string"),
    "fromJson": _s(_from_json_lenient, "string"),
    "mustToJson": _s(_must_to_json, "any"),
    "mustToPrettyJson": _s(_must_to_pretty_json, "any"),
    "toRawJson": _s(_to_raw_json, "any"),
    "kindOf": _s(_kind_of, "any"),
    "typeOf": _s(_type_of, "any"),
    "kindIs": _s(lambda target, v: target == _kind_of(v), "string", "any"),
    "typeIs": _s(lambda target, v: target == _type_of(v), "string", "any"),
    "deepEqual": _s(_deep_equal, "any", "any"),
    "fail": _s(_fail, "string"),
    "dig": _s(_dig, "any", variadic=True),
    "pick": _s(_pick, "map", "string", variadic=True),
    "omit": _s(_omit, "map", "string", variadic=True),
    "unset": _s(_unset, "map", "string"),
    "pluck": _s(_pluck, "string", "map", variadic=True),
    "mustFirst": _s(_first, "any"),
    "mustLast": _s(_last, "any"),
    "mustSlice": _s(_sprig_slice, "any", "any", variadic=True),
    "tuple": _s(lambda *vs: list(vs), "any", variadic=True),
    "trimall": _s(lambda a, b: b.strip(a), "string", "string"),
}

"""text/template's predefined functions (funcs.go).

``slice`` is missing on purpose: sprig defines its own, and a FuncMap entry shadows a builtin, so
notifications-engine's templates get sprig's ``slice`` (see sprig.py).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from rollout_workers.notifications.gotemplate.functions import Func, GoError
from rollout_workers.notifications.gotemplate.gofmt import sprint, sprintf, sprintln
from rollout_workers.notifications.gotemplate.gotime import GoTime
from rollout_workers.notifications.gotemplate.values import (
    MISSING,
    GoInt,
    Uint8,
    is_true,
    type_name,
)


def _indirect(v: Any) -> Any:
    """indirectInterface: a nil interface becomes an invalid value."""
    return MISSING if v is None else v


def _truth(v: Any) -> bool:
    return is_true(_indirect(v))


def _not(v: Any) -> bool:
    return not _truth(v)


def _len(v: Any) -> GoInt:
    if v is None:
        raise GoError("len of nil pointer")
    if v is MISSING:
        raise GoError("reflect: call of reflect.Value.Type on zero Value")
    if isinstance(v, str):
        return GoInt(len(v.encode()))
    if isinstance(v, (list, dict)):
        return GoInt(len(v))
    raise GoError(f"len of type {type_name(v)}")


def _index_arg(index: Any, cap: int) -> int:
    if isinstance(index, int) and not isinstance(index, bool):
        x = int(index)
    elif index is MISSING:
        raise GoError("cannot index slice/array with nil")
    else:
        raise GoError(f"cannot index slice/array with type {type_name(index)}")
    if x < 0 or x > cap:
        raise GoError(f"index out of range: {x}")
    return x


def _index(item: Any, *indexes: Any) -> Any:
    item = _indirect(item)
    if item is MISSING:
        raise GoError("index of untyped nil")
    for raw in indexes:
        index = _indirect(raw)
        if item is None:
            raise GoError("index of nil pointer")
        if isinstance(item, (list, str)):
            seq: Any = item.encode() if isinstance(item, str) else item
            x = _index_arg(index, len(seq))
            if x == len(seq):
                kind = "string" if isinstance(seq, bytes) else "slice"
                raise GoError(f"reflect: {kind} index out of range")
            item = seq[x]
            if isinstance(seq, bytes):
                item = Uint8(item)
        elif isinstance(item, dict):
            if index is MISSING:
                raise GoError("value is nil; should be of type string")
            if not isinstance(index, str):
                raise GoError(f"value has type {type_name(index)}; should be string")
            item = item.get(index)  # the zero value of interface{} is nil
        else:
            raise GoError(f"can't index item of type {type_name(item)}")
    return item


_BOOL, _INT, _FLOAT, _STRING = "bool", "int", "float", "string"


def _basic_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return _BOOL
    if isinstance(v, int):
        return _INT
    if isinstance(v, float):
        return _FLOAT
    if isinstance(v, str):
        return _STRING
    return None


def _eq(arg1: Any, *arg2: Any) -> bool:
    arg1 = _indirect(arg1)
    if not arg2:
        raise GoError("missing argument for comparison")
    k1 = _basic_kind(arg1)
    for raw in arg2:
        arg = _indirect(raw)
        k2 = _basic_kind(arg)
        truth = False
        if k1 != k2:
            if arg1 is not MISSING and arg is not MISSING:
                raise GoError(
                    f"incompatible types for comparison: {type_name(arg1)} and {type_name(arg)}"
                )
        elif k1 is not None or (isinstance(arg1, GoTime) and isinstance(arg, GoTime)):
            truth = arg1 == arg
        elif arg1 is MISSING or arg is MISSING:
            truth = arg1 is MISSING and arg is MISSING
        elif isinstance(arg1, type(arg)) or isinstance(arg, type(arg1)):
            raise GoError(f"non-comparable type {sprintf('%s', arg)}: {type_name(arg)}")
        else:
            raise GoError(
                f"non-comparable types {sprintf('%s', arg1)}: {type_name(arg1)}, "
                f"{type_name(arg)}: {sprint(arg)}"
            )
        if truth:
            return True
    return False


def _ne(a: Any, b: Any) -> bool:
    return not _eq(a, b)


def _lt(arg1: Any, arg2: Any) -> bool:
    arg1 = _indirect(arg1)
    k1 = _basic_kind(arg1)
    if k1 is None:
        raise GoError("invalid type for comparison")
    arg2 = _indirect(arg2)
    k2 = _basic_kind(arg2)
    if k2 is None:
        raise GoError("invalid type for comparison")
    if k1 != k2:
        raise GoError(f"incompatible types for comparison: {type_name(arg1)} and {type_name(arg2)}")
    if k1 == _BOOL:
        raise GoError("invalid type for comparison")
    if k1 == _STRING:
        return bool(arg1.encode() < arg2.encode())
    return bool(arg1 < arg2)


def _le(a: Any, b: Any) -> bool:
    return _lt(a, b) or _eq(a, b)


def _gt(a: Any, b: Any) -> bool:
    return not _le(a, b)


def _ge(a: Any, b: Any) -> bool:
    return not _lt(a, b)


def _eval_args(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(*("<no value>" if a is None or a is MISSING else a for a in args))


_HTML = {"\0": "\ufffd", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _html(*args: Any) -> str:
    return "".join(_HTML.get(c, c) for c in _eval_args(args))


_JS = {
    "\\": "\\\\",
    "'": "\\'",
    '"': '\\"',
    "<": "\\u003C",
    ">": "\\u003E",
    "&": "\\u0026",
    "=": "\\u003D",
}


def _js(*args: Any) -> str:
    out = []
    for c in _eval_args(args):
        if c in _JS:
            out.append(_JS[c])
        elif c < " ":
            out.append(f"\\u00{ord(c):02X}")
        elif ord(c) >= 0x80 and not c.isprintable():
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def _urlquery(*args: Any) -> str:
    return urllib.parse.quote_plus(_eval_args(args), safe="-_.~")


def _print(*args: Any) -> str:
    return sprint(*args)


def _printf(f: str, *args: Any) -> str:
    return sprintf(f, *args)


def _println(*args: Any) -> str:
    return sprintln(*args)


def _unreachable(*args: Any) -> Any:
    raise AssertionError("and/or/call are evaluated by the executor")


BUILTINS: dict[str, Func] = {
    "and": Func(_unreachable, ("value", "value"), variadic=True, builtin=True),
    "or": Func(_unreachable, ("value", "value"), variadic=True, builtin=True),
    "call": Func(_unreachable, ("value", "value"), variadic=True, builtin=True),
    "not": Func(_not, ("value",), builtin=True),
    "len": Func(_len, ("value",), builtin=True),
    "index": Func(_index, ("value", "value"), variadic=True, builtin=True),
    "eq": Func(_eq, ("value", "value"), variadic=True, builtin=True),
    "ne": Func(_ne, ("value", "value"), builtin=True),
    "lt": Func(_lt, ("value", "value"), builtin=True),
    "le": Func(_le, ("value", "value"), builtin=True),
    "gt": Func(_gt, ("value", "value"), builtin=True),
    "ge": Func(_ge, ("value", "value"), builtin=True),
    "html": Func(_html, ("any",), variadic=True, builtin=True),
    "js": Func(_js, ("any",), variadic=True, builtin=True),
    "urlquery": Func(_urlquery, ("any",), variadic=True, builtin=True),
    "print": Func(_print, ("any",), variadic=True, builtin=True),
    "printf": Func(_printf, ("string", "any"), variadic=True, builtin=True),
    "println": Func(_println, ("any",), variadic=True, builtin=True),
}

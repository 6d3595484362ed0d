"""Function tables: a signature per function, so arguments are checked as Go's reflection does.

Parameter kinds: ``any`` (interface{}), ``value`` (reflect.Value: passed as is, even invalid),
``string``, ``int``, ``int64``, ``float64``, ``bool``, ``list`` ([]interface{}), ``map``
(map[string]interface{}).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Func:
    fn: Callable[..., Any]
    params: tuple[str, ...]
    variadic: bool = False  # the last entry of params is the element kind of the ... slice
    builtin: bool = False
    go_type: str = "func"  # how Go names its type, for "can't print" errors


class GoError(Exception):
    """A function's error result (or a recovered panic): ``error calling NAME: <msg>``."""


GO_TYPE = {
    "any": "interface {}",
    "value": "reflect.Value",
    "string": "string",
    "int": "int",
    "int64": "int64",
    "float64": "float64",
    "bool": "bool",
    "list": "[]interface {}",
    "map": "map[string]interface {}",
    "time": "time.Time",
}


def fn(*params: str, variadic: bool = False) -> Callable[[Callable[..., Any]], Func]:
    def wrap(f: Callable[..., Any]) -> Func:
        return Func(f, params, variadic)

    return wrap

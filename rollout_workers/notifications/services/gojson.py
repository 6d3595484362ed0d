"""JSON as Go's ``encoding/json`` reads template fields and writes bodies.

The engine builds several bodies from a Go struct (fields in declaration order) holding Go maps
(keys sorted) decoded from the user's JSON. :func:`marshal` writes the same bytes for the
common cases: a :class:`Struct` keeps its key order, any other dict is sorted; output is compact
UTF-8 with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as Go escapes them; a float with an
integral value below 1e21 is written without a fraction, as Go's float64 is.
:func:`decode_list` reads a template field holding a JSON list, as ``json.Unmarshal`` into a
Go slice does.
"""

from __future__ import annotations

import json
from typing import Any

from rollout_workers.notifications.services import SendError

_GO_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


class Struct(dict[str, Any]):
    """A Go struct's fields, in declaration order (omitted fields left out by the caller)."""


def marshal(value: Any) -> bytes:
    text = json.dumps(_go(value), ensure_ascii=False, separators=(",", ":"))
    for char, escaped in _GO_ESCAPES.items():
        # These characters can only occur inside JSON strings, so replacing them is safe.
        text = text.replace(char, escaped)
    return text.encode()


def decode_list(text: Any, *, name: str, where: str) -> list[Any] | None:
    """The JSON list in template field ``name``; None for ``null`` (Go's nil slice). Not JSON,
    or not a list: a final SendError naming the service (``where``) and the field."""
    try:
        value = json.loads(str(text))
    except ValueError as e:
        raise SendError(f"{where}: {name} is not valid JSON: {e}", final=True) from None
    if value is not None and not isinstance(value, list):
        raise SendError(f"{where}: {name} must be a JSON list", final=True)
    return value


def _go(value: Any) -> Any:
    if isinstance(value, Struct):
        return {k: _go(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {k: _go(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_go(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    return value

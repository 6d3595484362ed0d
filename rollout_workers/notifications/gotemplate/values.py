"""How Go values are represented while a template runs.

Data is JSON-decoded the way Kubernetes decodes unstructured objects: integers are int64
(a plain Python ``int``), other numbers float64 (``float``), objects ``map[string]interface {}``
(``dict``), arrays ``[]interface {}`` (``list``), ``null`` a nil interface (``None``).
Go's ``int`` (integer literals, ``len``) is :class:`GoInt`; an invalid ``reflect.Value`` (a
missing map key) is :data:`MISSING`.
"""

from __future__ import annotations

from typing import Any


class GoInt(int):
    """A Go ``int`` (as opposed to the ``int64`` that decoded data holds)."""

    __slots__ = ()


class Uint8(int):
    """A byte, as ``index`` of a string gives it."""

    __slots__ = ()


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def type_name(v: Any) -> str:
    if v is None or v is MISSING:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    go_type = getattr(type(v), "GO_TYPE", None)  # time.Time, time.Duration
    if go_type is not None:
        return str(go_type)
    if isinstance(v, GoInt):
        return "int"
    if isinstance(v, Uint8):
        return "uint8"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "[]interface {}"
    if isinstance(v, dict):
        return "map[string]interface {}"
    if callable(v):
        return "func"
    return type(v).__name__


def is_true(v: Any) -> bool:
    if v is None or v is MISSING:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True

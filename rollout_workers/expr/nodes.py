"""The syntax tree of a condition: what the parser builds and the evaluator walks.

Plain data only: a node knows its position in the source (for error carets), its depth (the
parser's nesting limit) and its children, never how it is evaluated. The parser (`parser`) and
the evaluator (`evaluator`) both depend on these classes and not on each other, and the builtins
(`builtins`, `time`) see a call only as a `Call` node.
"""

from __future__ import annotations

from rollout_workers.expr.values import Value

__all__ = [
    "Array",
    "Binary",
    "Call",
    "Chain",
    "Conditional",
    "Const",
    "Ident",
    "Map",
    "Member",
    "Node",
    "Pointer",
    "Predicate",
    "Slice",
    "Unary",
]


class Node:
    __slots__ = ("depth", "pos")
    pos: int
    depth: int

    def __init__(self, pos: int, *children: Node | None) -> None:
        self.pos = pos
        self.depth = 1 + max((c.depth for c in children if c is not None), default=0)


class Const(Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: Value) -> None:
        super().__init__(pos)
        self.value = value


class Ident(Node):
    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class Pointer(Node):
    """`#`, `#index`, `#acc`, and the implicit `#` of `.field` inside a predicate."""

    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class Unary(Node):
    __slots__ = ("op", "operand")

    def __init__(self, pos: int, op: str, operand: Node) -> None:
        super().__init__(pos, operand)
        self.op = op
        self.operand = operand


class Binary(Node):
    __slots__ = ("left", "op", "right")

    def __init__(self, pos: int, op: str, left: Node, right: Node) -> None:
        super().__init__(pos, left, right)
        self.op = op
        self.left = left
        self.right = right


class Member(Node):
    __slots__ = ("obj", "optional", "prop")

    def __init__(self, pos: int, obj: Node, prop: Node, optional: bool) -> None:
        super().__init__(pos, obj, prop)
        self.obj = obj
        self.prop = prop
        self.optional = optional


class Chain(Node):
    """A member chain holding an optional member (`a?.b.c`): nil at `?.` makes it nil."""

    __slots__ = ("inner",)

    def __init__(self, pos: int, inner: Node) -> None:
        super().__init__(pos, inner)
        self.inner = inner


class Slice(Node):
    __slots__ = ("end", "obj", "start")

    def __init__(self, pos: int, obj: Node, start: Node | None, end: Node | None) -> None:
        super().__init__(pos, obj, start, end)
        self.obj = obj
        self.start = start
        self.end = end


class Conditional(Node):
    __slots__ = ("cond", "other", "then")

    def __init__(self, pos: int, cond: Node, then: Node, other: Node) -> None:
        super().__init__(pos, cond, then, other)
        self.cond = cond
        self.then = then
        self.other = other


class Array(Node):
    __slots__ = ("items",)

    def __init__(self, pos: int, items: list[Node]) -> None:
        super().__init__(pos, *items)
        self.items = tuple(items)


class Map(Node):
    __slots__ = ("pairs",)

    def __init__(self, pos: int, pairs: list[tuple[Node, Node]]) -> None:
        super().__init__(pos, *(node for pair in pairs for node in pair))
        self.pairs = tuple(pairs)


class Predicate(Node):
    """The predicate argument of `all`, `map`, `filter`, ...; evaluated only by its builtin."""

    __slots__ = ("body",)

    def __init__(self, pos: int, body: Node) -> None:
        super().__init__(pos, body)
        self.body = body


class Call(Node):
    __slots__ = ("args", "name")

    def __init__(self, pos: int, name: str, args: list[Node]) -> None:
        super().__init__(pos, *args)
        self.name = name
        self.args = tuple(args)

"""The parse tree (text/template/parse/node.go); ``str()`` of a node is Go's ``String()``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Node:
    pos: int


@dataclass(eq=False)
class TextNode(Node):
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(eq=False)
class CommentNode(Node):
    text: str

    def __str__(self) -> str:
        return "{{" + self.text + "}}"


@dataclass(eq=False)
class ListNode(Node):
    nodes: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return "".join(str(n) for n in self.nodes)


@dataclass(eq=False)
class IdentifierNode(Node):
    ident: str

    def __str__(self) -> str:
        return self.ident


@dataclass(eq=False)
class VariableNode(Node):
    ident: list[str]

    def __str__(self) -> str:
        return ".".join(self.ident)


@dataclass(eq=False)
class DotNode(Node):
    def __str__(self) -> str:
        return "."


@dataclass(eq=False)
class NilNode(Node):
    def __str__(self) -> str:
        return "nil"


@dataclass(eq=False)
class FieldNode(Node):
    ident: list[str]

    def __str__(self) -> str:
        return "".join("." + i for i in self.ident)


@dataclass(eq=False)
class BoolNode(Node):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(eq=False)
class NumberNode(Node):
    text: str
    is_int: bool = False
    is_float: bool = False
    is_complex: bool = False
    int_val: int = 0
    float_val: float = 0.0

    def __str__(self) -> str:
        return self.text


@dataclass(eq=False)
class StringNode(Node):
    quoted: str
    text: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(eq=False)
class PipeNode(Node):
    line: int
    is_assign: bool = False
    decl: list[VariableNode] = field(default_factory=list)
    cmds: list[CommandNode] = field(default_factory=list)

    def __str__(self) -> str:
        s = ""
        if self.decl:
            s = ", ".join(str(v) for v in self.decl) + (" = " if self.is_assign else " := ")
        return s + " | ".join(str(c) for c in self.cmds)


@dataclass(eq=False)
class CommandNode(Node):
    args: list[Node] = field(default_factory=list)

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, PipeNode) else str(a) for a in self.args)


@dataclass(eq=False)
class ChainNode(Node):
    node: Node
    fields: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        s = f"({self.node})" if isinstance(self.node, PipeNode) else str(self.node)
        return s + "".join("." + f for f in self.fields)


@dataclass(eq=False)
class ActionNode(Node):
    line: int
    pipe: PipeNode

    def __str__(self) -> str:
        return "{{" + str(self.pipe) + "}}"


@dataclass(eq=False)
class BranchNode(Node):
    line: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None
    keyword = ""

    def __str__(self) -> str:
        s = "{{" + self.keyword + " " + str(self.pipe) + "}}" + str(self.list)
        if self.else_list is not None:
            s += "{{else}}" + str(self.else_list)
        return s + "{{end}}"


class IfNode(BranchNode):
    keyword = "if"


class RangeNode(BranchNode):
    keyword = "range"


class WithNode(BranchNode):
    keyword = "with"


@dataclass(eq=False)
class BreakNode(Node):
    line: int

    def __str__(self) -> str:
        return "{{break}}"


@dataclass(eq=False)
class ContinueNode(Node):
    line: int

    def __str__(self) -> str:
        return "{{continue}}"


@dataclass(eq=False)
class TemplateNode(Node):
    line: int
    name: str
    pipe: PipeNode | None

    def __str__(self) -> str:
        from rollout_workers.notifications.gotemplate.gofmt import go_quote

        if self.pipe is None:
            return "{{template " + go_quote(self.name) + "}}"
        return "{{template " + go_quote(self.name) + " " + str(self.pipe) + "}}"


@dataclass(eq=False)
class EndNode(Node):
    def __str__(self) -> str:
        return "{{end}}"


@dataclass(eq=False)
class ElseNode(Node):
    line: int

    def __str__(self) -> str:
        return "{{else}}"

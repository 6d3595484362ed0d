"""Go text/template's executor (text/template/exec.go) over JSON-shaped Python data."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, NoReturn

from rollout_workers.notifications.gotemplate import nodes as n
from rollout_workers.notifications.gotemplate.errors import TemplateError
from rollout_workers.notifications.gotemplate.functions import GO_TYPE, Func, GoError
from rollout_workers.notifications.gotemplate.gofmt import go_quote, sprint_value
from rollout_workers.notifications.gotemplate.gotime import (
    DURATION_METHODS,
    TIME_METHODS,
    GoDuration,
    GoTime,
)
from rollout_workers.notifications.gotemplate.values import MISSING, GoInt, is_true, type_name

MAX_STRING = 16 << 20  # a function may not build a longer string (Go has no such limit)
MAX_EXEC_DEPTH = 100  # Go: 100000; a notification's {{template}} nesting is shallow.

_NOT_GIVEN: Any = object()  # Go's missingVal: no final (piped) argument


def _has_type(value: Any, typ: str) -> bool:
    if typ == "string":
        return isinstance(value, str)
    if typ == "bool":
        return isinstance(value, bool)
    if typ == "int":
        return isinstance(value, GoInt)
    if typ == "int64":
        return type(value) is int
    if typ == "float64":
        return isinstance(value, float)
    if typ == "list":
        return isinstance(value, list)
    if typ == "map":
        return isinstance(value, dict)
    if typ == "time":
        return isinstance(value, GoTime)
    return True


def methods_of(v: Any) -> dict[str, Func]:
    if isinstance(v, GoTime):
        return TIME_METHODS
    if isinstance(v, GoDuration):
        return DURATION_METHODS
    return {}


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


@dataclass
class Limits:
    max_steps: int = 1_000_000
    max_output: int = 1 << 20


@dataclass
class _Var:
    name: str
    value: Any
    iface: bool  # held as an interface{} value (a map or slice element), for error wording


class State:
    def __init__(
        self,
        name: str,
        text: str,
        trees: dict[str, n.ListNode],
        funcs: dict[str, Func],
        limits: Limits,
    ) -> None:
        self.name = name
        self.tmpl_name = name
        self.text = text
        self.trees = trees
        self.funcs = funcs
        self.limits = limits
        self.out: list[str] = []
        self.size = 0
        self.steps = 0
        self.node: n.Node | None = None
        self.vars: list[_Var] = []
        self.depth = 0

    # -- errors and bookkeeping
    def errorf(self, msg: str) -> NoReturn:
        if self.node is None:
            raise TemplateError(f"template: {self.tmpl_name}: {msg}")
        pos = self.node.pos
        before = self.text[:pos]
        nl = before.rfind("\n")
        col = len(before.encode()) if nl < 0 else len(before[nl + 1 :].encode())
        line = 1 + before.count("\n")
        raise TemplateError(
            f"template: {self.name}:{line}:{col}: executing "
            f"{go_quote(self.tmpl_name)} at <{self.node}>: {msg}"
        )

    def at(self, node: n.Node) -> None:
        self.node = node
        self.steps += 1
        if self.steps > self.limits.max_steps:
            self.errorf(f"exceeded the maximum of {self.limits.max_steps} execution steps")

    def write(self, s: str) -> None:
        self.size += len(s)
        if self.size > self.limits.max_output:
            self.errorf(f"output exceeds the maximum of {self.limits.max_output} bytes")
        self.out.append(s)

    def push(self, name: str, value: Any, iface: bool = False) -> None:
        self.vars.append(_Var(name, value, iface))

    def mark(self) -> int:
        return len(self.vars)

    def pop(self, mark: int) -> None:
        del self.vars[mark:]

    def set_var(self, name: str, value: Any, iface: bool = False) -> None:
        for v in reversed(self.vars):
            if v.name == name:
                v.value = value
                v.iface = iface
                return
        self.errorf(f"undefined variable: {name}")

    def set_top_var(self, k: int, value: Any, iface: bool = False) -> None:
        v = self.vars[len(self.vars) - k]
        v.value = value
        v.iface = iface

    def var_value(self, name: str) -> _Var:
        for v in reversed(self.vars):
            if v.name == name:
                return v
        self.errorf(f"undefined variable: {name}")
        raise AssertionError

    # -- walking
    def walk(self, dot: Any, node: n.Node, dot_iface: bool) -> None:
        self.at(node)
        if isinstance(node, n.ActionNode):
            val = self.eval_pipeline(dot, dot_iface, node.pipe)
            if not node.pipe.decl:
                self.print_value(node, val)
        elif isinstance(node, n.TextNode):
            self.write(node.text)
        elif isinstance(node, n.ListNode):
            for child in node.nodes:
                self.walk(dot, child, dot_iface)
        elif isinstance(node, (n.IfNode, n.WithNode)):
            self.walk_if_or_with(node, dot, dot_iface)
        elif isinstance(node, n.RangeNode):
            self.walk_range(dot, dot_iface, node)
        elif isinstance(node, n.TemplateNode):
            self.walk_template(dot, dot_iface, node)
        elif isinstance(node, n.BreakNode):
            raise _Break
        elif isinstance(node, n.ContinueNode):
            raise _Continue
        elif isinstance(node, n.CommentNode):
            pass
        else:
            self.errorf(f"unknown node: {node}")

    def walk_if_or_with(self, node: n.BranchNode, dot: Any, dot_iface: bool) -> None:
        mark = self.mark()
        try:
            val = self.eval_pipeline(dot, dot_iface, node.pipe)
            truth = True if callable(val) and not isinstance(val, (dict, list)) else is_true(val)
            if truth:
                if isinstance(node, n.WithNode):
                    self.walk(val, node.list, False)
                else:
                    self.walk(dot, node.list, dot_iface)
            elif node.else_list is not None:
                self.walk(dot, node.else_list, dot_iface)
        finally:
            self.pop(mark)

    def walk_range(self, dot: Any, dot_iface: bool, r: n.RangeNode) -> None:
        self.at(r)
        outer = self.mark()
        try:
            val = self.eval_pipeline(dot, dot_iface, r.pipe)
            mark = self.mark()
            decl = r.pipe.decl

            def one(index: Any, elem: Any, elem_iface: bool) -> None:
                if decl:
                    if r.pipe.is_assign:
                        if len(decl) > 1:
                            self.set_var(decl[0].ident[0], index)
                        else:
                            self.set_var(decl[0].ident[0], elem, elem_iface)
                    else:
                        self.set_top_var(1, elem, elem_iface)
                if len(decl) > 1:
                    if r.pipe.is_assign:
                        self.set_var(decl[1].ident[0], elem, elem_iface)
                    else:
                        self.set_top_var(2, index)
                try:
                    self.walk(elem, r.list, elem_iface)
                except _Continue:
                    pass
                finally:
                    self.pop(mark)

            ran = False
            try:
                if isinstance(val, bool) or val is None:
                    self.errorf(f"range can't iterate over {sprint_value(val)}")
                elif isinstance(val, int):
                    if len(decl) > 1:
                        self.errorf(f"can't use {val} to iterate over more than one variable")
                    for i in range(int(val)):
                        ran = True
                        one(MISSING, type(val)(i), False)
                elif isinstance(val, list):
                    for i, e in enumerate(val):
                        ran = True
                        one(GoInt(i), e, True)
                elif isinstance(val, dict):
                    for k in sorted(val, key=lambda s: s.encode()):
                        ran = True
                        one(k, val[k], True)
                elif val is MISSING:
                    pass
                else:
                    self.errorf(f"range can't iterate over {sprint_value(val)}")
            except _Break:
                return
            if not ran and r.else_list is not None:
                self.walk(dot, r.else_list, dot_iface)
        finally:
            self.pop(outer)

    def walk_template(self, dot: Any, dot_iface: bool, t: n.TemplateNode) -> None:
        self.at(t)
        tree = self.trees.get(t.name)
        if tree is None:
            self.errorf(f"template {go_quote(t.name)} not defined")
        if self.depth >= MAX_EXEC_DEPTH:
            self.errorf(f"exceeded maximum template depth ({MAX_EXEC_DEPTH})")
        new_dot = self.eval_pipeline(dot, dot_iface, t.pipe) if t.pipe else MISSING
        saved = (self.vars, self.tmpl_name)
        self.vars = [_Var("$", new_dot, False)]
        self.tmpl_name = t.name
        self.depth += 1
        try:
            self.walk(new_dot, tree, False)
        finally:
            self.depth -= 1
            self.vars, self.tmpl_name = saved

    # -- evaluation
    def eval_pipeline(self, dot: Any, dot_iface: bool, pipe: n.PipeNode) -> Any:
        self.at(pipe)
        value: Any = _NOT_GIVEN
        for cmd in pipe.cmds:
            value = self.eval_command(dot, dot_iface, cmd, value)
            if value is None:  # a nil interface{} unwraps to an invalid value
                value = MISSING
        for v in pipe.decl:
            if pipe.is_assign:
                self.set_var(v.ident[0], value)
            else:
                self.push(v.ident[0], value)
        return value

    def not_a_function(self, args: list[n.Node], final: Any) -> None:
        if len(args) > 1 or final is not _NOT_GIVEN:
            self.errorf(f"can't give argument to non-function {args[0]}")

    def eval_command(self, dot: Any, dot_iface: bool, cmd: n.CommandNode, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, n.FieldNode):
            self.at(first)
            return self.eval_field_chain(dot, dot_iface, first, first.ident, cmd.args, final)
        if isinstance(first, n.ChainNode):
            return self.eval_chain(dot, dot_iface, first, cmd.args, final)
        if isinstance(first, n.IdentifierNode):
            return self.eval_function(dot, dot_iface, first, cmd, cmd.args, final)
        if isinstance(first, n.PipeNode):
            self.not_a_function(cmd.args, final)
            return self.eval_pipeline(dot, dot_iface, first)
        if isinstance(first, n.VariableNode):
            return self.eval_variable(dot, dot_iface, first, cmd.args, final)
        self.at(first)
        self.not_a_function(cmd.args, final)
        if isinstance(first, n.BoolNode):
            return first.value
        if isinstance(first, n.DotNode):
            return dot
        if isinstance(first, n.NilNode):
            self.errorf("nil is not a command")
        if isinstance(first, n.NumberNode):
            return self.ideal_constant(first)
        if isinstance(first, n.StringNode):
            return first.text
        self.errorf(f"can't evaluate command {go_quote(str(first))}")
        raise AssertionError

    def ideal_constant(self, c: n.NumberNode) -> Any:
        self.at(c)
        t = c.text
        is_hex_int = len(t) > 2 and t[0] == "0" and t[1] in "xX" and not any(x in t for x in "pP")
        if c.is_float and not is_hex_int and t[0] != "'" and any(x in t for x in ".eEpP"):
            return c.float_val
        if c.is_int:
            return GoInt(c.int_val)
        self.errorf(f"{t} overflows int")
        raise AssertionError

    def eval_chain(
        self, dot: Any, dot_iface: bool, chain: n.ChainNode, args: list[n.Node], final: Any
    ) -> Any:
        self.at(chain)
        if isinstance(chain.node, n.NilNode):
            self.errorf(f"indirection through explicit nil in {chain}")
        recv = self.eval_arg(dot, dot_iface, None, chain.node)
        return self.eval_field_chain(dot, False, chain, chain.fields, args, final, recv)

    def eval_variable(
        self, dot: Any, dot_iface: bool, var: n.VariableNode, args: list[n.Node], final: Any
    ) -> Any:
        self.at(var)
        v = self.var_value(var.ident[0])
        if len(var.ident) == 1:
            self.not_a_function(args, final)
            return v.value
        return self.eval_field_chain(v.value, v.iface, var, var.ident[1:], args, final, v.value)

    def eval_field_chain(  # noqa: PLR0917
        self,
        dot: Any,
        iface: bool,
        node: n.Node,
        ident: list[str],
        args: list[n.Node] | None,
        final: Any,
        receiver: Any = _NOT_GIVEN,
    ) -> Any:
        if receiver is _NOT_GIVEN:
            receiver = dot
        for name in ident[:-1]:
            receiver = self.eval_field(name, None, _NOT_GIVEN, receiver, iface, dot, node)
            iface = True
        return self.eval_field(ident[-1], args, final, receiver, iface, dot, node)

    def eval_field(  # noqa: PLR0917
        self,
        name: str,
        args: list[n.Node] | None,
        final: Any,
        receiver: Any,
        iface: bool,
        dot: Any = None,
        node: n.Node | None = None,
    ) -> Any:
        if receiver is MISSING:
            return MISSING
        typ = "interface {}" if iface else type_name(receiver)
        if receiver is None:
            self.errorf(f"nil pointer evaluating {typ}.{name}")
        methods = methods_of(receiver)
        if name in methods:
            m = methods[name]
            bound = Func(functools.partial(m.fn, receiver), m.params[1:], m.variadic)
            call_node = node if node is not None else self.node
            assert call_node is not None
            return self.eval_call(dot, False, bound, call_node, name, args, final)
        has_args = (args is not None and len(args) > 1) or final is not _NOT_GIVEN
        if isinstance(receiver, dict):
            if has_args:
                self.errorf(f"{name} is not a method but has arguments")
            return receiver.get(name, MISSING)
        self.errorf(f"can't evaluate field {name} in type {typ}")
        raise AssertionError

    def eval_function(  # noqa: PLR0917
        self,
        dot: Any,
        dot_iface: bool,
        node: n.IdentifierNode,
        cmd: n.Node,
        args: list[n.Node] | None,
        final: Any,
    ) -> Any:
        self.at(node)
        f = self.funcs.get(node.ident)
        if f is None:
            self.errorf(f"{go_quote(node.ident)} is not a defined function")
            raise AssertionError
        return self.eval_call(dot, dot_iface, f, cmd, node.ident, args, final)

    def eval_call(  # noqa: PLR0917
        self,
        dot: Any,
        dot_iface: bool,
        f: Func,
        node: n.Node,
        name: str,
        args: list[n.Node] | None,
        final: Any,
    ) -> Any:
        argn = list(args[1:]) if args is not None else []
        num_in = len(argn) + (0 if final is _NOT_GIVEN else 1)
        nparams = len(f.params)
        if f.variadic:
            num_fixed = nparams - 1
            if num_in < num_fixed:
                self.errorf(
                    f"wrong number of args for {name}: want at least {num_fixed} got {len(argn)}"
                )
        else:
            num_fixed = nparams
            if num_in != nparams:
                self.errorf(f"wrong number of args for {name}: want {nparams} got {num_in}")
        if f.builtin and name in ("and", "or"):
            v: Any = MISSING
            for a in argn:
                v = self.eval_arg(dot, dot_iface, "value", a)
                if is_true(MISSING if v is None else v) == (name == "or"):
                    return v
            if final is not _NOT_GIVEN:
                v = final
            return v
        argv: list[Any] = []
        for i, a in enumerate(argn):
            typ = f.params[i] if i < num_fixed else f.params[-1]
            argv.append(self.eval_arg(dot, dot_iface, typ, a))
        if final is not _NOT_GIVEN:
            i = len(argn)
            typ = f.params[i] if i < num_fixed else f.params[-1]
            argv.append(self.validate_type(final, typ, False))
        if f.builtin and name == "call":
            return self.call(node, args[1] if args is not None and len(args) > 1 else None, argv)
        try:
            result = f.fn(*argv)
        except GoError as e:
            self.at(node)
            self.errorf(f"error calling {name}: {e}")
        except (ZeroDivisionError, OverflowError, RecursionError, ValueError) as e:
            self.at(node)
            self.errorf(f"error calling {name}: {e}")
        if isinstance(result, str) and len(result) > MAX_STRING:
            self.at(node)
            self.errorf(f"error calling {name}: result exceeds {MAX_STRING} bytes")
        return result

    def call(self, node: n.Node, callee: n.Node | None, argv: list[Any]) -> Any:
        """The builtin call. Its errors name the whole command (Go moves there to report)."""

        def fail(msg: str) -> NoReturn:
            self.at(node)
            self.errorf(f"error calling call: {msg}")

        fn = MISSING if argv[0] is None else argv[0]
        label = str(callee) if callee is not None else sprint_value(fn)
        args = argv[1:]
        if fn is MISSING:
            fail("call of nil")
        if isinstance(fn, Func):
            if len(args) != len(fn.params):
                fail(f"wrong number of args for {label}: got {len(args)} want {len(fn.params)}")
            for i, (arg, typ) in enumerate(zip(args, fn.params, strict=True)):
                a = MISSING if arg is None else arg
                if typ == "any":
                    continue
                if a is MISSING:
                    fail(f"arg {i}: value is nil; should be of type {GO_TYPE[typ]}")
                if not _has_type(a, typ):
                    fail(f"arg {i}: value has type {type_name(a)}; should be {GO_TYPE[typ]}")
            try:
                return fn.fn(*args)
            except GoError as e:
                fail(str(e))
        if not callable(fn) or isinstance(fn, (dict, list, str)):
            fail(f"non-function {label} of type {type_name(fn)}")
        try:
            return fn(*[MISSING if a is None else a for a in args])
        except GoError as e:
            fail(str(e))
        except TypeError as e:
            fail(f"wrong number of args for {label}: {e}")

    def validate_type(self, value: Any, typ: str | None, iface: bool) -> Any:
        if typ is None or typ == "value":
            return value
        if value is MISSING:
            if typ in ("any", "list", "map"):
                return None
            self.errorf(f"invalid value; expected {GO_TYPE[typ]}")
        if typ == "any":
            return value
        if not _has_type(value, typ):
            got = "interface {}" if value is None else type_name(value)
            self.errorf(f"wrong type for value; expected {GO_TYPE[typ]}; got {got}")
        return value

    def eval_arg(self, dot: Any, dot_iface: bool, typ: str | None, node: n.Node) -> Any:
        self.at(node)
        if isinstance(node, n.DotNode):
            return self.validate_type(dot, typ, dot_iface)
        if isinstance(node, n.NilNode):
            if typ in ("any", "list", "map"):
                return None
            if typ == "value":
                return MISSING
            self.errorf(f"cannot assign nil to {GO_TYPE[typ or 'any']}")
        if isinstance(node, n.FieldNode):
            v = self.eval_field_chain(dot, dot_iface, node, node.ident, [node], _NOT_GIVEN)
            return self.validate_type(v, typ, True)
        if isinstance(node, n.VariableNode):
            v = self.eval_variable(dot, dot_iface, node, [], _NOT_GIVEN)
            return self.validate_type(v, typ, True)
        if isinstance(node, n.PipeNode):
            return self.validate_type(self.eval_pipeline(dot, dot_iface, node), typ, False)
        if isinstance(node, n.IdentifierNode):
            v = self.eval_function(dot, dot_iface, node, node, None, _NOT_GIVEN)
            return self.validate_type(v, typ, False)
        if isinstance(node, n.ChainNode):
            v = self.eval_chain(dot, dot_iface, node, [], _NOT_GIVEN)
            return self.validate_type(v, typ, True)
        if typ in (None, "any", "value"):
            if isinstance(node, n.BoolNode):
                return node.value
            if isinstance(node, n.NumberNode):
                return self.ideal_constant(node)
            if isinstance(node, n.StringNode):
                return node.text
        elif typ == "bool":
            if isinstance(node, n.BoolNode):
                return node.value
            self.errorf(f"expected bool; found {node}")
        elif typ in ("int", "int64"):
            if isinstance(node, n.NumberNode) and node.is_int:
                return GoInt(node.int_val) if typ == "int" else node.int_val
            self.errorf(f"expected integer; found {node}")
        elif typ == "float64":
            if isinstance(node, n.NumberNode) and node.is_float:
                return node.float_val
            self.errorf(f"expected float; found {node}")
        elif typ == "string":
            if isinstance(node, n.StringNode):
                return node.text
            self.errorf(f"expected string; found {node}")
        self.errorf(f"can't handle {node} for arg of type {GO_TYPE[typ or 'any']}")
        raise AssertionError

    def print_value(self, node: n.Node, v: Any) -> None:
        self.at(node)
        if v is MISSING:
            self.write("<no value>")
            return
        if isinstance(v, Func):
            self.errorf(f"can't print {node} of type {v.go_type}")
        if callable(v) and not isinstance(v, (dict, list, str)):
            self.errorf(f"can't print {node} of type func")
        self.write(sprint_value(v))

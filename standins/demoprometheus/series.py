"""The series the demo Prometheus answers with, and the rules that make them up.

Two sources, merged on every query:

- Derived from the cluster. Each ReplicaSet with available replicas is one version of an app
  that serves traffic. It yields `demo_success_rate` (the share of requests answered without an
  error, 0 to 1) and `demo_error_rate` (1 - success rate), labelled with `namespace`,
  `replicaset`, `image` (its first container's) and the ReplicaSet's own labels, with names made
  valid for Prometheus as kube-state-metrics does (`rollouts-pod-template-hash` becomes
  `rollouts_pod_template_hash`). A ReplicaSet without available replicas serves nothing and has
  no series.
- Set by hand through the HTTP API (`PUT /metrics/<name>?<label>=<value>`). A hand-set value
  overrides every derived series of that name whose labels include the given ones (so
  `PUT /metrics/demo_success_rate?app=canary-fail` with `{"value": 0.99}` lets that app's next
  version pass); when none does, it is a series of its own. The most specific one wins.

The success rate is the first rule whose glob matches the image: the `--success-rate
GLOB=RATE` options in order, then the defaults, `*:flaky*=0.6` (a version that fails 40% of
its requests, e.g. `argoproj/rollouts-demo:flaky-yellow`) and `*=0.99`. Values do not drift or
jitter, so a given version always passes or always fails the same analysis.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from rollout_workers.objects import Obj

SUCCESS_RATE = "demo_success_rate"
ERROR_RATE = "demo_error_rate"

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


@dataclass(frozen=True)
class Series:
    """One time series: a metric name, its labels, and its current value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    @classmethod
    def of(cls, name: str, labels: Mapping[str, str], value: float) -> Series:
        return cls(name, tuple(sorted(labels.items())), value)

    @property
    def identity(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        return self.name, self.labels

    def label_map(self) -> dict[str, str]:
        """The labels with the name as `__name__`, as a selector sees them."""
        return {"__name__": self.name, **dict(self.labels)}


@dataclass(frozen=True)
class Rule:
    """Images matching `pattern` (a glob) serve `rate` of their requests without errors."""

    pattern: str
    rate: float


DEFAULT_RULES = (Rule("*:flaky*", 0.6), Rule("*", 0.99))


def parse_rule(text: str) -> Rule:
    """`GLOB=RATE`, as given to `--success-rate`; raises ValueError with a one-line reason."""
    pattern, sep, rate_text = text.rpartition("=")
    if not sep or not pattern:
        raise ValueError(f"expected GLOB=RATE (e.g. '*:flaky*=0.6'), got {text!r}")
    try:
        rate = float(rate_text)
    except ValueError:
        raise ValueError(f"the rate of {text!r} is not a number") from None
    if not 0 <= rate <= 1:
        raise ValueError(f"the rate of {text!r} is not between 0 and 1")
    return Rule(pattern, rate)


def success_rate(image: str, rules: Sequence[Rule]) -> float:
    """The first matching rule's rate (the defaults follow `rules`)."""
    for rule in (*rules, *DEFAULT_RULES):
        if fnmatch.fnmatchcase(image, rule.pattern):
            return rule.rate
    raise AssertionError("the last default rule matches every image")


def label_name(name: str) -> str:
    """A Kubernetes label key as a Prometheus label name (kube-state-metrics' sanitizing)."""
    cleaned = re.sub(r"[^a-zA-Z0-9_]", "_", name)
    return cleaned if not cleaned[:1].isdigit() else f"_{cleaned}"


def replicaset_series(replicasets: Iterable[Obj], rules: Sequence[Rule]) -> list[Series]:
    """The derived series of the ReplicaSets that have available replicas."""
    out: list[Series] = []
    for rs in replicasets:
        if int((rs.get("status") or {}).get("availableReplicas") or 0) <= 0:
            continue
        meta = rs.get("metadata") or {}
        containers = ((((rs.get("spec") or {}).get("template") or {}).get("spec")) or {}).get(
            "containers"
        ) or [{}]
        image = str(containers[0].get("image") or "")
        labels = {label_name(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        labels.update(
            namespace=str(meta.get("namespace") or ""),
            replicaset=str(meta.get("name") or ""),
            image=image,
        )
        rate = success_rate(image, rules)
        out.append(Series.of(SUCCESS_RATE, labels, rate))
        out.append(Series.of(ERROR_RATE, labels, round(1 - rate, 12)))
    return out


def merge(derived: Iterable[Series], manual: Iterable[Series]) -> list[Series]:
    """All series, sorted: the derived ones with hand-set values applied, then the hand-set
    ones that apply to none."""
    overrides = sorted(manual, key=lambda m: len(m.labels))  # the most specific applies last
    used: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
    for series in derived:
        labels, value = set(series.labels), series.value
        for override in overrides:
            if override.name == series.name and labels.issuperset(override.labels):
                value = override.value
                used.add(override.identity)
        out[series.identity] = Series(series.name, series.labels, value)
    for override in overrides:
        if override.identity not in used:
            out[override.identity] = override
    return sorted(out.values(), key=lambda s: s.identity)


def format_value(value: float) -> str:
    """A sample value as Prometheus writes it (Go's `FormatFloat(v, 'f', -1, 64)`)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def exposition(series: Iterable[Series]) -> str:
    """The series in Prometheus' text exposition format (what a scrape of `/metrics` returns)."""
    lines = []
    for s in series:
        labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels)
        selector = f"{s.name}{{{labels}}}" if labels else s.name
        lines.append(f"{selector} {format_value(s.value)}")
    return "".join(f"{line}\n" for line in lines)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

"""The `get rollout` and `get experiment` screens: the summary, then the NAME/KIND/STATUS/AGE/INFO
tree of revisions, ReplicaSets with their pods, experiments and analysis runs.

The layout, icons and colours are the plugin's. Pure: info.py's dataclasses in, text out; the
clock is a parameter.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rollout_workers.cli.fields import age, parse_time
from rollout_workers.cli.info import (
    ICON_BAD,
    ICON_OK,
    ICON_PROGRESSING,
    ICON_UNKNOWN,
    ICON_WAITING,
    ICON_WARNING,
    AnalysisRunInfo,
    ExperimentInfo,
    ReplicaSetInfo,
    RolloutInfo,
)
from rollout_workers.cli.table import align
from rollout_workers.timefmt import human_duration

ICON_ROLLOUT = "⟳"
ICON_REVISION = "#"
ICON_REPLICASET = "⧉"
ICON_POD = "□"
ICON_JOB = "⊞"
ICON_EXPERIMENT = "Σ"
ICON_ANALYSIS = "\u03b1"  # Greek alpha, as the plugin

TAG_CANARY = "canary"
TAG_STABLE = "stable"
TAG_ACTIVE = "active"
TAG_PREVIEW = "preview"
TAG_PING = "ping"
TAG_PONG = "pong"

_GREEN, _RED, _YELLOW, _HIBLUE = 32, 31, 33, 94
_COLORS: dict[str, int] = {
    ICON_WAITING: _YELLOW,
    ICON_PROGRESSING: _HIBLUE,
    ICON_WARNING: _RED,
    ICON_UNKNOWN: _YELLOW,
    ICON_OK: _GREEN,
    ICON_BAD: _RED,
    TAG_CANARY: _YELLOW,
    TAG_STABLE: _GREEN,
    TAG_ACTIVE: _GREEN,
    TAG_PREVIEW: _HIBLUE,
    TAG_PING: _HIBLUE,
    TAG_PONG: _HIBLUE,
    "Pending": _HIBLUE,
    "Running": _HIBLUE,
}


def _merge_image(found: dict[str, list[str]], image: str, tags: list[str]) -> None:
    if image in found:
        found[image] = sorted(set(found[image]) | set(tags))
    else:
        found[image] = tags


def _experiment_images(found: dict[str, list[str]], exp: ExperimentInfo) -> None:
    for rs in exp.replica_sets:
        if rs.replicas > 0:
            for image in rs.images:
                _merge_image(found, image, [f"Σ:{rs.template}"] if rs.template else [])


def images(info: RolloutInfo) -> list[tuple[str, list[str]]]:
    """The images of the ReplicaSets that have pods, with the stacks they run in, by name."""
    found: dict[str, list[str]] = {}
    for rs in info.replica_sets:
        if rs.replicas <= 0:
            continue
        flags = (
            (rs.canary, TAG_CANARY),
            (rs.stable, TAG_STABLE),
            (rs.active, TAG_ACTIVE),
            (rs.preview, TAG_PREVIEW),
            (rs.ping, TAG_PING),
            (rs.pong, TAG_PONG),
        )
        for image in rs.images:
            _merge_image(found, image, [tag for on, tag in flags if on])
    for exp in info.experiments:
        _experiment_images(found, exp)
    return sorted(found.items())


def experiment_images(info: ExperimentInfo) -> list[tuple[str, list[str]]]:
    """The images of an experiment's ReplicaSets that have pods, tagged `Σ:<template>`."""
    found: dict[str, list[str]] = {}
    _experiment_images(found, info)
    return sorted(found.items())


def revisions(info: RolloutInfo) -> list[int]:
    found = {rs.revision for rs in info.replica_sets}
    found |= {exp.revision for exp in info.experiments}
    found |= {run.revision for run in info.analysis_runs}
    return sorted(found, reverse=True)


class Painter:
    """ANSI colours for icons, tags and analysis phases; a no-op when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def paint(self, text: str, key: str | None = None) -> str:
        code = _COLORS.get(text if key is None else key)
        if not self.color or code is None:
            return text
        return f"\x1b[{code}m{text}\x1b[0m"


def _prefixes(is_last: bool, sub: str) -> tuple[str, str]:
    if is_last:
        return sub + "└──", sub + "   "
    return sub + "├──", sub + "│  "


def _delay(deadline: str, now: datetime) -> str:
    when = parse_time(deadline)
    if when is None:
        return ""
    if when < now:
        return "passed"
    return human_duration((when - now).total_seconds())


def _replica_set_rows(
    rs: ReplicaSetInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    tags: list[str] = []
    name = rs.name
    if rs.stable:
        tags.append(p.paint(TAG_STABLE))
        name = p.paint(name, TAG_STABLE)
    if rs.canary:
        tags.append(p.paint(TAG_CANARY))
        name = p.paint(name, TAG_CANARY)
    elif rs.active:
        tags.append(p.paint(TAG_ACTIVE))
        name = p.paint(name, TAG_ACTIVE)
    elif rs.preview:
        tags.append(p.paint(TAG_PREVIEW))
        name = p.paint(name, TAG_PREVIEW)
    if rs.ping:
        tags.append(p.paint(TAG_PING))
    if rs.pong:
        tags.append(p.paint(TAG_PONG))
    if rs.scale_down_deadline:
        tags.append(f"delay:{_delay(rs.scale_down_deadline, now)}")
    rows = [
        [
            f"{prefix}{ICON_REPLICASET} {name}",
            "ReplicaSet",
            f"{p.paint(rs.icon)} {rs.status}",
            age(rs.created, now),
            ",".join(tags),
        ]
    ]
    for i, pod in enumerate(rs.pods):
        pod_prefix, _ = _prefixes(i == len(rs.pods) - 1, sub)
        details = [f"ready:{pod.ready}"]
        if pod.restarts > 0:
            details.append(f"restarts:{pod.restarts}")
        rows.append(
            [
                f"{pod_prefix}{ICON_POD} {pod.name}",
                "Pod",
                f"{p.paint(pod.icon)} {pod.status}",
                age(pod.created, now),
                ",".join(details),
            ]
        )
    return rows


def _analysis_run_rows(
    run: AnalysisRunInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    counts = [
        (ICON_OK, run.successful),
        (ICON_BAD, run.failed),
        (ICON_UNKNOWN, run.inconclusive),
        (ICON_WARNING, run.error),
    ]
    details = ",".join(f"{p.paint(icon)} {n}" for icon, n in counts if n > 0)
    rows = [
        [
            f"{prefix}{ICON_ANALYSIS} {p.paint(run.name, run.status)}",
            "AnalysisRun",
            f"{p.paint(run.icon)} {run.status}",
            age(run.created, now),
            details,
        ]
    ]
    for i, job in enumerate(run.jobs):
        job_prefix, _ = _prefixes(i == len(run.jobs) - 1, sub)
        rows.append(
            [
                f"{job_prefix}{ICON_JOB} {p.paint(job.name, job.status)}",
                "Job",
                f"{p.paint(job.icon)} {job.status}",
                age(job.created, now),
                "",
            ]
        )
    return rows


def _experiment_rows(
    exp: ExperimentInfo, prefix: str, sub: str, now: datetime, p: Painter
) -> list[list[str]]:
    rows = [
        [
            f"{prefix}{ICON_EXPERIMENT} {p.paint(exp.name, exp.status)}",
            "Experiment",
            f"{p.paint(exp.icon)} {exp.status}",
            age(exp.created, now),
            "",
        ]
    ]
    total = len(exp.replica_sets) + len(exp.analysis_runs)
    for i, rs in enumerate(exp.replica_sets):
        child, child_sub = _prefixes(i == total - 1, sub)
        rows += _replica_set_rows(rs, child, child_sub, now, p)
    for j, run in enumerate(exp.analysis_runs, start=len(exp.replica_sets)):
        child, child_sub = _prefixes(j == total - 1, sub)
        rows += _analysis_run_rows(run, child, child_sub, now, p)
    return rows


def render_tree(info: RolloutInfo, *, now: datetime, color: bool = False) -> list[str]:
    """The NAME/KIND/STATUS/AGE/INFO tree: rollout, revisions, then per revision its
    ReplicaSets (with pods), experiments and analysis runs."""
    p = Painter(color)
    rows: list[list[str]] = [
        ["NAME", "KIND", "STATUS", "AGE", "INFO"],
        [
            f"{ICON_ROLLOUT} {info.name}",
            "Rollout",
            f"{p.paint(info.icon)} {info.status}",
            age(info.created, now),
            "",
        ],
    ]
    all_revisions = revisions(info)
    for n, rev in enumerate(all_revisions):
        prefix, sub = _prefixes(n == len(all_revisions) - 1, "")
        rows.append([f"{prefix}{ICON_REVISION} revision:{rev}", "", " ", "", ""])
        children: list[tuple[str, Any]] = [
            *(("rs", rs) for rs in info.replica_sets if rs.revision == rev),
            *(("exp", exp) for exp in info.experiments if exp.revision == rev),
            *(("run", run) for run in info.analysis_runs if run.revision == rev),
        ]
        for i, (kind, child) in enumerate(children):
            child_prefix, child_sub = _prefixes(i == len(children) - 1, sub)
            if kind == "rs":
                rows += _replica_set_rows(child, child_prefix, child_sub, now, p)
            elif kind == "exp":
                rows += _experiment_rows(child, child_prefix, child_sub, now, p)
            else:
                rows += _analysis_run_rows(child, child_prefix, child_sub, now, p)
    return align(rows)


def _field(label: str, value: object) -> str:
    return f"{label:<17}{value}".rstrip()


def render_rollout(info: RolloutInfo, *, now: datetime, color: bool = False) -> str:
    """The whole `get rollout` screen: the summary, a blank line, the tree."""
    p = Painter(color)
    lines = [
        _field("Name:", info.name),
        _field("Namespace:", info.namespace),
        _field("Status:", f"{p.paint(info.icon)} {info.status}"),
    ]
    if info.message:
        lines.append(_field("Message:", info.message))
    if info.workload_ref:
        lines.append(_field("WorkloadRef:", info.workload_ref))
    lines.append(_field("Strategy:", info.strategy))
    if info.strategy == "Canary":
        lines += [
            _field("  Step:", info.step),
            _field("  SetWeight:", info.set_weight),
            _field("  ActualWeight:", info.actual_weight),
        ]
    for n, (image, tags) in enumerate(images(info)):
        text = f"{image} ({', '.join(p.paint(t) for t in tags)})" if tags else image
        lines.append(_field("Images:" if n == 0 else "", text))
    lines += [
        "Replicas:",
        _field("  Desired:", info.desired),
        _field("  Current:", info.current),
        _field("  Updated:", info.updated),
        _field("  Ready:", info.ready),
        _field("  Available:", info.available),
        "",
        *render_tree(info, now=now, color=color),
    ]
    return "\n".join(lines) + "\n"


def render_experiment(info: ExperimentInfo, *, now: datetime, color: bool = False) -> str:
    """The whole `get experiment` screen: the summary, a blank line, the tree."""
    p = Painter(color)
    lines = [
        _field("Name:", info.name),
        _field("Namespace:", info.namespace),
        _field("Status:", f"{p.paint(info.icon)} {info.status}"),
    ]
    if info.message:
        lines.append(_field("Message:", info.message))
    for n, (image, tags) in enumerate(experiment_images(info)):
        text = f"{image} ({', '.join(p.paint(t) for t in tags)})" if tags else image
        lines.append(_field("Images:" if n == 0 else "", text))
    rows = [["NAME", "KIND", "STATUS", "AGE", "INFO"], *_experiment_rows(info, "", "", now, p)]
    lines += ["", *align(rows)]
    return "\n".join(lines) + "\n"

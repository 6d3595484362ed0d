"""`list rollouts` and `list experiments`: one row per object, in the plugin's columns."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import click

from rollout_workers.cli import cluster
from rollout_workers.cli.cluster import cluster_options
from rollout_workers.cli.common import AliasGroup, Fail, one_line
from rollout_workers.cli.fields import age, created_at, parse_time, to_int, value_at
from rollout_workers.cli.phase import (
    blue_green_of,
    calculate_rollout_phase,
    canary_of,
    current_set_weight,
    desired_replicas,
    step_text,
)
from rollout_workers.cli.table import align
from rollout_workers.kube.errors import KubeError
from rollout_workers.kube.resources import EXPERIMENTS, ROLLOUTS
from rollout_workers.objects import Obj
from rollout_workers.timefmt import duration_seconds, human_duration, utcnow

LIST_HEADER = (
    "NAME",
    "STRATEGY",
    "STATUS",
    "STEP",
    "SET-WEIGHT",
    "READY",
    "DESIRED",
    "UP-TO-DATE",
    "AVAILABLE",
)


def list_row(ro: Obj, *, with_namespace: bool = False) -> list[str]:
    """One `list rollouts` row (cells padded like the plugin's, for a similar look)."""
    status = value_at(ro, "status") or {}
    strategy, step, weight = "unknown", "-", "-"
    if canary_of(ro) is not None:
        strategy = "Canary"
        step = step_text(ro) or "-"
        weight = str(current_set_weight(ro))
    elif blue_green_of(ro) is not None:
        strategy = "BlueGreen"
    phase, _ = calculate_rollout_phase(ro)
    ready = f"{to_int(status.get('readyReplicas'))}/{to_int(status.get('replicas'))}"
    row = [
        f"{value_at(ro, 'metadata', 'name') or '':<10}",
        f"{strategy:<9}",
        f"{phase:<12}",
        f"{step:<4}",
        f"{weight:<10}",
        f"{ready:<5}",
        f"{desired_replicas(ro):<7}",
        f"{to_int(status.get('updatedReplicas')):<10}",
        f"{to_int(status.get('availableReplicas')):<9}",
    ]
    if with_namespace:
        row.insert(0, f"{value_at(ro, 'metadata', 'namespace') or '':<9}")
    return row


def render_list(rollouts: Sequence[Obj], *, all_namespaces: bool = False) -> str:
    header = ["NAMESPACE", *LIST_HEADER] if all_namespaces else list(LIST_HEADER)
    rows = [header] + [list_row(ro, with_namespace=all_namespaces) for ro in rollouts]
    return "\n".join(align(rows)) + "\n"


EXPERIMENT_LIST_HEADER = ("NAME", "STATUS", "DURATION", "REMAINING", "AGE")
COMPLETED_EXPERIMENT_PHASES = frozenset({"Successful", "Failed", "Error", "Inconclusive"})


def experiment_list_row(exp: Obj, *, now: datetime, with_namespace: bool = False) -> list[str]:
    """One `list experiments` row: the duration of a timed experiment, and while it runs
    after becoming available, the time it has left."""
    phase = str(value_at(exp, "status", "phase") or "")
    duration, remaining = "-", "-"
    spec_duration = value_at(exp, "spec", "duration")
    seconds = duration_seconds(str(spec_duration)) if spec_duration else None
    if seconds is not None:
        duration = human_duration(seconds)
        available_at = parse_time(value_at(exp, "status", "availableAt"))
        if phase not in COMPLETED_EXPERIMENT_PHASES and available_at is not None:
            left = (available_at - now).total_seconds() + seconds
            if left > 0:
                remaining = human_duration(left)
    row = [
        f"{value_at(exp, 'metadata', 'name') or '':<10}",
        f"{phase:<6}",
        f"{duration:<8}",
        f"{remaining:<9}",
        f"{age(created_at(exp), now):<3}",
    ]
    if with_namespace:
        row.insert(0, f"{value_at(exp, 'metadata', 'namespace') or '':<9}")
    return row


def render_experiment_list(
    experiments: Sequence[Obj], *, now: datetime, all_namespaces: bool = False
) -> str:
    header = list(EXPERIMENT_LIST_HEADER)
    if all_namespaces:
        header.insert(0, "NAMESPACE")
    rows = [header] + [
        experiment_list_row(exp, now=now, with_namespace=all_namespaces) for exp in experiments
    ]
    return "\n".join(align(rows)) + "\n"


@click.group(
    "list",
    cls=AliasGroup,
    aliases={
        "ro": "rollouts",
        "rollout": "rollouts",
        "exp": "experiments",
        "experiment": "experiments",
    },
)
def list_group() -> None:
    """List rollouts or experiments."""


@list_group.command("rollouts")
@cluster_options
@click.option("-A", "--all-namespaces", is_flag=True, help="Rollouts of every namespace.")
@click.option("--name", "only", default=None, help="Only the rollout with this name.")
def list_rollouts(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    all_namespaces: bool,
    only: str | None,
) -> None:
    """List rollouts with their strategy, status, step, weight and replicas."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    ns = None if all_namespaces else target.namespace
    try:
        items, _ = target.kube.list(ROLLOUTS, namespace=ns)
    except KubeError as err:
        raise Fail(f"API error: {one_line(err)}") from None
    if only:
        items = [ro for ro in items if (ro.get("metadata") or {}).get("name") == only]
    items.sort(key=lambda ro: ((ro.get("metadata") or {}).get("namespace", ""),
                               (ro.get("metadata") or {}).get("name", "")))  # fmt: skip
    if not items:
        click.echo("No resources found.", err=True)
        return
    click.echo(render_list(items, all_namespaces=all_namespaces), nl=False)


@list_group.command("experiments")
@cluster_options
@click.option("-A", "--all-namespaces", is_flag=True, help="Experiments of every namespace.")
def list_experiments(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    all_namespaces: bool,
) -> None:
    """List experiments with their status, duration, time remaining and age."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    ns = None if all_namespaces else target.namespace
    try:
        items, _ = target.kube.list(EXPERIMENTS, namespace=ns)
    except KubeError as err:
        raise Fail(f"API error: {one_line(err)}") from None
    if not items:
        click.echo("No resources found.", err=True)
        return
    items.sort(key=lambda exp: ((exp.get("metadata") or {}).get("namespace", ""),
                                (exp.get("metadata") or {}).get("name", "")))  # fmt: skip
    click.echo(render_experiment_list(items, now=utcnow(), all_namespaces=all_namespaces), nl=False)

"""`get rollout` and `get experiment`: read the object and what it owns in its namespace, and
draw the screen once, or with --watch again on each change and every second (`get rollout
--timeout` stops at Healthy or Degraded). The data is info.py's, the drawing tree.py's.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from rollout_workers.cli import cluster
from rollout_workers.cli.cluster import RolloutChanges, Target, api_errors, cluster_options
from rollout_workers.cli.common import ActionError, AliasGroup, Fail, parse_duration
from rollout_workers.cli.info import (
    ExperimentInfo,
    RolloutInfo,
    calculate_rollout_info,
    experiment_info,
)
from rollout_workers.cli.tree import render_experiment, render_rollout
from rollout_workers.kube.resources import ANALYSISRUNS, EXPERIMENTS, PODS, REPLICASETS, ROLLOUTS
from rollout_workers.timefmt import utcnow


@click.group(
    "get",
    cls=AliasGroup,
    aliases={
        "ro": "rollout",
        "rollouts": "rollout",
        "exp": "experiment",
        "experiments": "experiment",
    },
)
def get_group() -> None:
    """Show a rollout or an experiment and the objects it owns."""


def _use_color(no_color: bool) -> bool:
    return (
        not no_color
        and sys.stdout.isatty()
        and os.environ.get("TERM") != "dumb"
        and "NO_COLOR" not in os.environ
    )


def _parse_timeout(value: str | None, seconds: int | None) -> float | None:
    if seconds:
        return float(seconds)
    if not value:
        return None
    try:
        return parse_duration(value).total_seconds() or None
    except ActionError as err:
        raise click.BadParameter(str(err), param_hint="'--timeout'") from None


CLEAR_SCREEN = "\x1b[H\x1b[2J\x1b[0;0H"


def fetch_rollout_info(target: Target, name: str) -> RolloutInfo:
    ns = target.namespace
    with api_errors("rollout", name, ns):
        ro = target.kube.get(ROLLOUTS, ns, name)
        replica_sets, _ = target.kube.list(REPLICASETS, namespace=ns)
        pods, _ = target.kube.list(PODS, namespace=ns)
        runs, _ = target.kube.list(ANALYSISRUNS, namespace=ns)
        experiments, _ = target.kube.list(EXPERIMENTS, namespace=ns)
    return calculate_rollout_info(
        ro, replica_sets=replica_sets, pods=pods, analysis_runs=runs, experiments=experiments
    )


def watch_rollout(
    target: Target, name: str, *, timeout: float | None, color: bool, min_interval: float = 0.2
) -> None:
    """Redraw the screen on each change and every second; with a timeout, stop at Healthy
    (exit 0), Degraded or the timeout (exit 1). Only a terminal is cleared between frames."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with api_errors("rollout", name, target.namespace):
        first = target.kube.get(ROLLOUTS, target.namespace, name)
    version = str((first.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version).start()
    clear, first_frame = sys.stdout.isatty(), True
    try:
        while True:
            drawn_at = time.monotonic()
            info = fetch_rollout_info(target, name)
            screen = render_rollout(info, now=utcnow(), color=color)
            # On a terminal, redraw in place; piped, append each frame after a blank line.
            sys.stdout.write(CLEAR_SCREEN if clear else "" if first_frame else "\n")
            click.echo(screen, nl=False)
            sys.stdout.flush()
            first_frame = False
            if deadline is not None:
                if info.status == "Healthy":
                    return
                if info.status == "Degraded":
                    raise Fail(f'rollout "{name}" is Degraded: {info.message}'.rstrip(": "))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Fail(
                        f'timed out after {timeout:g}s waiting for rollout "{name}" '
                        f"(status: {info.status})"
                    )
            wait = 1.0 if deadline is None else min(1.0, max(0.0, deadline - time.monotonic()))
            changes.changed.wait(wait)
            changes.changed.clear()
            # Rate-limit redraws when changes come in bursts, so the terminal does not flicker.
            pause_left = min_interval - (time.monotonic() - drawn_at)
            if pause_left > 0:
                time.sleep(pause_left)
    finally:
        changes.stop()


@get_group.command("rollout")
@cluster_options
@click.option("-w", "--watch", is_flag=True, help="Redraw live until Ctrl-C.")
@click.option(
    "--timeout",
    default=None,
    help="With --watch (implied): stop at Healthy or Degraded, fail after this long (5m, 90s).",
)
@click.option("--timeout-seconds", type=click.IntRange(min=0), default=None, hidden=True)
@click.option("--no-color", is_flag=True, help="Do not colorize output.")
@click.argument("name")
def get_rollout(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    timeout: str | None,
    timeout_seconds: int | None,
    no_color: bool,
    name: str,
) -> None:
    """Show a rollout: status, weights, images, and its revisions as a tree."""
    limit = _parse_timeout(timeout, timeout_seconds)
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    color = _use_color(no_color)
    if not watch and limit is None:
        info = fetch_rollout_info(target, name)
        click.echo(render_rollout(info, now=utcnow(), color=color), nl=False)
        return
    try:
        watch_rollout(target, name, timeout=limit, color=color)
    except KeyboardInterrupt:
        click.echo("")


def fetch_experiment_info(target: Target, name: str) -> ExperimentInfo:
    ns = target.namespace
    with api_errors("experiment", name, ns):
        exp = target.kube.get(EXPERIMENTS, ns, name)
        replica_sets, _ = target.kube.list(REPLICASETS, namespace=ns)
        pods, _ = target.kube.list(PODS, namespace=ns)
        runs, _ = target.kube.list(ANALYSISRUNS, namespace=ns)
    return experiment_info(exp, replica_sets=replica_sets, pods=pods, analysis_runs=runs)


def watch_experiment(target: Target, name: str, *, color: bool) -> None:
    """Redraw the experiment on each change and every second, until Ctrl-C."""
    with api_errors("experiment", name, target.namespace):
        first = target.kube.get(EXPERIMENTS, target.namespace, name)
    version = str((first.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version, EXPERIMENTS).start()
    clear, first_frame = sys.stdout.isatty(), True
    try:
        while True:
            drawn_at = time.monotonic()
            screen = render_experiment(
                fetch_experiment_info(target, name), now=utcnow(), color=color
            )
            sys.stdout.write(CLEAR_SCREEN if clear else "" if first_frame else "\n")
            click.echo(screen, nl=False)
            sys.stdout.flush()
            first_frame = False
            changes.changed.wait(1.0)
            changes.changed.clear()
            pause_left = 0.2 - (time.monotonic() - drawn_at)
            if pause_left > 0:
                time.sleep(pause_left)
    finally:
        changes.stop()


@get_group.command("experiment")
@cluster_options
@click.option("-w", "--watch", is_flag=True, help="Redraw live until Ctrl-C.")
@click.option("--no-color", is_flag=True, help="Do not colorize output.")
@click.argument("name")
def get_experiment(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    no_color: bool,
    name: str,
) -> None:
    """Show an experiment: status, images, and its ReplicaSets, pods and analysis runs."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    color = _use_color(no_color)
    if not watch:
        info = fetch_experiment_info(target, name)
        click.echo(render_experiment(info, now=utcnow(), color=color), nl=False)
        return
    try:
        watch_experiment(target, name, color=color)
    except KeyboardInterrupt:
        click.echo("")

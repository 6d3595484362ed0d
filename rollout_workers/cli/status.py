"""`status`: a rollout's phase and message as the plugin prints them, once or watched until it
is Healthy or Degraded, with the plugin's exit codes. It only reads; cobra's `--watch=false`
works as in the plugin's command lines.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from rollout_workers.cli import cluster
from rollout_workers.cli.cluster import RolloutChanges, Target, api_errors, cluster_options
from rollout_workers.cli.common import ActionError, Fail, parse_duration
from rollout_workers.cli.phase import FINAL_PHASES, calculate_rollout_phase
from rollout_workers.kube.resources import ROLLOUTS
from rollout_workers.objects import Obj

DEGRADED_ERROR = "The rollout is in a degraded state with message: {}"
#: How often `status --watch` reads the rollout again when its watch reports nothing.
STATUS_POLL_SECONDS = 1.0
STATUS_TIMEOUT_ERROR = "Rollout status watch exceeded timeout"
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def status_line(phase: str, message: str) -> str:
    """What `status --watch=false` prints: the phase alone when final, else `phase - message`."""
    return phase if phase in FINAL_PHASES else f"{phase} - {message}"


def watch_status_line(phase: str, message: str) -> str:
    """A line of `status --watch`: `phase - message`, or the phase alone without a message."""
    return f"{phase} - {message}" if message else phase


def status_failure(phase: str, message: str, *, watched: bool) -> str | None:
    """Why `status` exits 1, or None: Degraded always; with --watch, anything but Healthy
    (the watch ended on its timeout or an interrupt)."""
    if phase == "Degraded":
        return DEGRADED_ERROR.format(message)
    if watched and phase != "Healthy":
        return STATUS_TIMEOUT_ERROR
    return None


GO_BOOL_FLAGS = {"-w": "watch", "--watch": "watch"}


def rewrite_go_bool_flag(arg: str) -> str:
    """cobra's `--watch=false` / `-w=true` as click's `--no-watch` / `--watch`; any other
    argument unchanged."""
    flag, eq, value = arg.partition("=")
    name = GO_BOOL_FLAGS.get(flag)
    if not eq or name is None:
        return arg
    if value in _GO_TRUE:
        return f"--{name}"
    if value in _GO_FALSE:
        return f"--no-{name}"
    raise click.BadParameter(f'invalid argument "{value}": expected true or false', param_hint=flag)


class GoBoolFlagCommand(click.Command):
    """Accepts cobra's `--watch=false` for boolean flags declared as `--watch/--no-watch`, so
    the plugin's command lines work unchanged."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        rewritten = [rewrite_go_bool_flag(arg) for arg in args[:end]] + args[end:]
        return super().parse_args(ctx, rewritten)


def _rollout_phase(target: Target, name: str) -> tuple[Obj, str, str]:
    with api_errors("rollout", name, target.namespace):
        ro = target.kube.get(ROLLOUTS, target.namespace, name)
    phase, message = calculate_rollout_phase(ro)
    return ro, phase, message


def watch_status(target: Target, name: str, *, timeout: float | None) -> tuple[str, str]:
    """Print each new `phase - message` until Healthy or Degraded, the timeout, or Ctrl-C;
    then the final phase and message (read again after a timeout, as the plugin does)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    ro, phase, message = _rollout_phase(target, name)
    version = str((ro.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version).start()
    previous = ""
    try:
        while True:
            line = watch_status_line(phase, message)
            if line != previous:
                click.echo(line)
                sys.stdout.flush()
                previous = line
            if phase in FINAL_PHASES:
                return phase, message
            if deadline is not None and time.monotonic() >= deadline:
                break
            wait = STATUS_POLL_SECONDS
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            changes.changed.wait(wait)
            changes.changed.clear()
            _, phase, message = _rollout_phase(target, name)
    except KeyboardInterrupt:
        pass
    finally:
        changes.stop()
    _, phase, message = _rollout_phase(target, name)
    return phase, message


@click.command(cls=GoBoolFlagCommand)
@cluster_options
@click.option(
    "-w",
    "--watch/--no-watch",
    default=True,
    help="Watch the status of the rollout until it's done (the default; --watch=false or "
    "--no-watch prints it once).",
)
@click.option(
    "-t",
    "--timeout",
    default="0",
    show_default=True,
    help="How long to watch before giving up (1s, 2m, 3h); 0 waits forever.",
)
@click.argument("name")
def status(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    timeout: str,
    name: str,
) -> None:
    """Watch a rollout until it is Healthy (exit 0) or Degraded (exit 1), or the timeout
    passes (exit 1); with --watch=false print its status once (exit 1 only when Degraded)."""
    try:
        limit = parse_duration(timeout).total_seconds() or None
    except ActionError as err:
        raise click.BadParameter(str(err), param_hint="'--timeout'") from None
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    if watch:
        phase, message = watch_status(target, name, timeout=limit)
    else:
        _, phase, message = _rollout_phase(target, name)
        click.echo(status_line(phase, message))
    failure = status_failure(phase, message, watched=watch)
    if failure is not None:
        raise Fail(failure)

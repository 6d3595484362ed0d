"""`rollouts devcluster` and `rollouts demo-prometheus`: the stand-ins in the foreground.

The stand-ins (the embedded API, `devcluster`; the demo's made-up Prometheus, `demoprometheus`)
are a distribution of their own that the controller's image does not carry, so each command
imports its stand-in only when it runs, and says in one line how to install it when it is
missing (`rollout_workers.local.standins`). Every other command starts without them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rollout_workers import logs
from rollout_workers.cli.common import Fail, load_settings, state_dir_option, wait_for_signal
from rollout_workers.local.standins import StandinsMissing, require


def require_standins(command: str, *packages: str) -> None:
    try:
        require(command, *packages)
    except StandinsMissing as err:
        raise Fail(str(err)) from None


@click.command(
    "devcluster",
    add_help_option=False,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def devcluster(*, args: tuple[str, ...]) -> None:
    """Run the embedded Kubernetes API server until interrupted (`rollouts devcluster --help`)."""
    require_standins("devcluster", "devcluster")
    from devcluster.cli import devcluster as command

    # Its options, help and ROLLOUTS_DEVCLUSTER_<OPTION> variables are the stand-in's own.
    command.main(
        list(args), prog_name="rollouts devcluster", auto_envvar_prefix="ROLLOUTS_DEVCLUSTER"
    )


@click.command("demo-prometheus")
@state_dir_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on; 0 picks a free one.")  # fmt: skip
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Cluster whose ReplicaSets the series are derived from "
    "(default: ROLLOUTS_KUBECONFIG, the embedded API, KUBECONFIG).",
)
@click.option(
    "--success-rate",
    "rules",
    multiple=True,
    metavar="GLOB=RATE",
    help="Versions whose image matches GLOB serve RATE (0-1) of requests without errors; "
    "first match wins, before the defaults '*:flaky*=0.6' and '*=0.99'. Repeatable.",
)
def demo_prometheus(
    *, state_dir: Path | None, host: str, port: int, kubeconfig: Path | None, rules: tuple[str, ...]
) -> None:
    """Serve the demo's made-up app metrics over Prometheus' and Datadog's query APIs and plain
    JSON until interrupted (a stand-in for the application's Prometheus, for analysis)."""
    require_standins("demo-prometheus", "demoprometheus")
    from demoprometheus import server as prometheus
    from demoprometheus.series import parse_rule
    from rollout_workers.kube.client import Kube
    from rollout_workers.kube.config import ClusterNotFound, api_client, find_kubeconfig

    settings = load_settings(state_dir=state_dir, kubeconfig=kubeconfig)
    logs.configure(settings.log)
    try:
        parsed = [parse_rule(rule) for rule in rules]
    except ValueError as err:
        raise Fail(f"--success-rate: {err}") from None
    existing = prometheus.recorded_url(settings.state_dir)
    if existing:
        raise Fail(f"a demo Prometheus already runs at {existing} ({settings.state_dir})")
    try:
        where = find_kubeconfig(settings)
        source = prometheus.cluster_source(
            Kube(api_client(settings), settings.kube), parsed, settings.kube.namespace or None
        )
        origin = f"ReplicaSets of {where or 'the in-cluster API'}"
    except ClusterNotFound as err:
        if settings.kubeconfig is not None:
            raise Fail(str(err)) from None
        source, origin = None, "no cluster found, so only series set with PUT"
    try:
        server = prometheus.DemoPrometheus(host, port, store=prometheus.Store(source))
    except OSError as err:
        raise Fail(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    server.start()
    record = prometheus.record(settings.state_dir, server.url)
    click.echo(f"demo Prometheus listening on {server.url}")
    click.echo(f"  series from {origin}")
    click.echo(f"  Prometheus API: {server.url}/api/v1/query; JSON: {server.url}/metrics/<name>")
    click.echo(f"  recorded in {record}")
    sys.stdout.flush()
    try:
        wait_for_signal(lambda: None)
    finally:
        server.shutdown()
        server.server_close()
        prometheus.unrecord(settings.state_dir)

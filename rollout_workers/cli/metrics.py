"""`rollouts metrics`: the controller's Prometheus metrics for the whole pool, printed once;
`rollouts metrics-server`: the made-up app metrics server in the foreground (`metricsserver`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rollout_workers import logs
from rollout_workers.cli.common import (
    Fail,
    friendly_errors,
    load_settings,
    redis_url,
    state_dir_option,
    wait_for_signal,
)


@click.command("metrics")
@state_dir_option
@friendly_errors
def metrics(*, state_dir: Path | None) -> None:
    """Print the pool-wide controller metrics (Prometheus text), as the leader watcher's
    /metrics serves them."""
    from rollout_workers import redisclient
    from rollout_workers.metrics.endpoint import pool_exposition

    settings = load_settings(state_dir=state_dir)
    client = redisclient.process_client(redis_url(settings), settings)
    try:
        sys.stdout.write(pool_exposition(client, prefix=settings.redis.key_prefix).decode())
    finally:
        client.close()


@click.command("metrics-server")
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
def metrics_server(
    *, state_dir: Path | None, host: str, port: int, kubeconfig: Path | None, rules: tuple[str, ...]
) -> None:
    """Serve made-up app metrics over Prometheus' and Datadog's query APIs and plain JSON until
    interrupted."""
    from rollout_workers.kube.client import Kube
    from rollout_workers.kube.config import ClusterNotFound, api_client, find_kubeconfig
    from rollout_workers.metricsserver import server as ms
    from rollout_workers.metricsserver.series import parse_rule

    settings = load_settings(state_dir=state_dir, kubeconfig=kubeconfig)
    logs.configure(settings.log)
    try:
        parsed = [parse_rule(rule) for rule in rules]
    except ValueError as err:
        raise Fail(f"--success-rate: {err}") from None
    existing = ms.recorded_url(settings.state_dir)
    if existing:
        raise Fail(f"a metrics server already runs at {existing} ({settings.state_dir})")
    try:
        where = find_kubeconfig(settings)
        source = ms.cluster_source(
            Kube(api_client(settings), settings.kube), parsed, settings.kube.namespace or None
        )
        origin = f"ReplicaSets of {where or 'the in-cluster API'}"
    except ClusterNotFound as err:
        if settings.kubeconfig is not None:
            raise Fail(str(err)) from None
        source, origin = None, "no cluster found, so only series set with PUT"
    try:
        server = ms.MetricsServer(host, port, store=ms.Store(source))
    except OSError as err:
        raise Fail(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    server.start()
    record = ms.record(settings.state_dir, server.url)
    click.echo(f"metrics server listening on {server.url}")
    click.echo(f"  series from {origin}")
    click.echo(f"  Prometheus API: {server.url}/api/v1/query; JSON: {server.url}/metrics/<name>")
    click.echo(f"  recorded in {record}")
    sys.stdout.flush()
    try:
        wait_for_signal(lambda: None)
    finally:
        server.shutdown()
        server.server_close()
        ms.unrecord(settings.state_dir)

"""`rollouts metrics`: the controller's Prometheus metrics for the whole pool, printed once (the
demo's made-up app metrics are `rollouts demo-prometheus`, in cli/standins.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rollout_workers.cli.common import friendly_errors, load_settings, redis_url, state_dir_option


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

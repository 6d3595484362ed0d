"""The ``devcluster`` command: run the embedded API server in the foreground.

It writes ``<state-dir>/devcluster.kubeconfig`` (and ``--kubeconfig-out`` when given) and
``<state-dir>/devcluster.json`` ({url, pid, kubeconfig}) so other processes of the demo can find
it, and removes the JSON file on exit. ``rollouts devcluster`` runs this command, imported only
when it is run (rollout_workers/cli/standins.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from devcluster.history import DEFAULT_HISTORY_SIZE
from rollout_workers import staterecords

if TYPE_CHECKING:
    from devcluster.server import DevCluster

STATE_DIR_ENV = "ROLLOUTS_STATE_DIR"
KUBECONFIG_NAME = "devcluster.kubeconfig"
INFO_NAME = "devcluster.json"


@click.command(name="devcluster")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to bind; 0 picks a free port.",
)
@click.option(
    "--kubeconfig-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the kubeconfig here.",
)
@click.option(
    "--ready-delay",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Seconds until a new pod becomes Ready (and a Job finishes).",
)
@click.option(
    "--bad-image-pattern",
    default="*:bad*",
    show_default=True,
    help="Glob: pods with a matching image never become Ready.",
)
@click.option(
    "--history-size",
    type=click.IntRange(min=1),
    default=DEFAULT_HISTORY_SIZE,
    show_default=True,
    help="Watch events kept per resource type; older resourceVersions get 410 Gone.",
)
@click.option(
    "--no-crds",
    is_flag=True,
    default=False,
    help="Start without the argoproj.io CRDs (install them yourself, e.g. kubectl apply -k "
    "deploy/crds).",
)
@click.option(
    "--bookmark-interval",
    type=click.FloatRange(min=0.1),
    default=60.0,
    show_default=True,
    help="Seconds between BOOKMARK events on watches that allow them.",
)
@click.option(
    "--state",
    "state_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON snapshot: loaded on start, written on exit.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Where to write the kubeconfig and {INFO_NAME} "
    f"(default: ${STATE_DIR_ENV}, else ./.rollouts).",
)
def devcluster(
    *,
    host: str,
    port: int,
    kubeconfig_out: Path | None,
    ready_delay: float,
    bad_image_pattern: str,
    history_size: int,
    bookmark_interval: float,
    state_file: Path | None,
    state_dir: Path | None,
    no_crds: bool,
) -> None:
    """Run the embedded Kubernetes API server until interrupted."""
    from devcluster.server import serve  # aiohttp only when serving

    directory = state_dir or Path(os.environ.get(STATE_DIR_ENV) or ".rollouts")
    kubeconfig = directory / KUBECONFIG_NAME
    info = directory / INFO_NAME
    if state_file is not None and state_file.exists():
        try:
            json.loads(state_file.read_text())
        except (OSError, ValueError) as exc:
            raise click.BadParameter(
                f"cannot read {state_file}: {exc}", param_hint="--state"
            ) from None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot create {directory}: {exc}", param_hint="--state-dir"
        ) from None

    def ready(cluster: DevCluster) -> None:
        cluster.write_kubeconfig(kubeconfig)
        if kubeconfig_out is not None:
            cluster.write_kubeconfig(kubeconfig_out)
        staterecords.write(
            directory, INFO_NAME, url=cluster.url, kubeconfig=str(kubeconfig.resolve())
        )
        click.echo(f"devcluster listening on {cluster.url} (kubeconfig: {kubeconfig})")

    def cleanup(_cluster: DevCluster) -> None:
        info.unlink(missing_ok=True)

    try:
        serve(
            on_ready=ready,
            on_exit=cleanup,
            host=host,
            port=port,
            ready_delay=ready_delay,
            bad_image_pattern=bad_image_pattern,
            history_size=history_size,
            bookmark_interval=bookmark_interval,
            state_file=state_file,
            install_crds=not no_crds,
        )
    except OSError as exc:
        raise click.ClickException(f"cannot run the devcluster on {host}:{port}: {exc}") from None


def main() -> None:
    devcluster()


if __name__ == "__main__":
    main()

"""The `rollouts` command.

Every option can also be set from the environment: click reads `ROLLOUTS_<COMMAND>_<OPTION>`,
and the settings tree reads `ROLLOUTS_<SECTION>_<FIELD>`. A mistake prints one line and exits
non-zero; no traceback reaches the user.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import yaml

from rollout_workers import logs
from rollout_workers.cli.common import (
    F,
    Fail,
    friendly_errors,
    load_settings,
    redis_url,
    state_dir_option,
    wait_for_signal,
)
from rollout_workers.local import redis_server
from rollout_workers.settings import CONTROLLERS, KINDS, Settings


class _Commands(click.Group):
    """The process and queue commands are defined here; the plugin-style commands (the
    kubernetes client, the stand-ins' commands, the linter) load on first use, so a queue
    command such as `enqueue` starts without importing them."""

    _attached = False

    def _attach(self) -> None:
        if not self._attached:
            self._attached = True
            _attach_commands()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None:
            self._attach()
            command = super().get_command(ctx, cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._attach()
        return super().list_commands(ctx)


@click.group(
    cls=_Commands,
    context_settings={"auto_envvar_prefix": "ROLLOUTS", "help_option_names": ["-h", "--help"]},
)
def cli() -> None:
    """rollout-workers: Argo Rollouts-compatible progressive delivery on a Celery worker pool."""


@cli.command()
@state_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
def config(state_dir: Path | None, as_json: bool) -> None:
    """Print the effective settings (secrets masked)."""
    settings = load_settings(state_dir=state_dir)
    data = settings.masked()
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False).rstrip())


@cli.command("redis")
@state_dir_option
@click.option("--port", type=int, default=0, help="Port on 127.0.0.1 (default: a free one).")
def redis_command(state_dir: Path | None, port: int) -> None:
    """Run an embedded Redis on 127.0.0.1 until interrupted; other commands find it."""
    settings = load_settings(state_dir=state_dir)
    logs.configure(settings.log)
    existing = redis_server.recorded_url(settings.state_dir)
    if existing:
        raise Fail(f"an embedded Redis already runs at {existing} ({settings.state_dir})")
    try:
        server = redis_server.EmbeddedRedis(settings.state_dir / "redis", port=port).start()
    except redis_server.RedisNotFound as err:
        raise Fail(str(err)) from None
    record = server.record(settings.state_dir)
    click.echo(f"redis listening on {server.url}")
    click.echo(f"  pid {server.process.pid if server.process else '?'}, log {server.log_file}")
    click.echo(f"  recorded in {record}; or export ROLLOUTS_REDIS_URL={server.url}")
    sys.stdout.flush()

    def check() -> None:
        if server.process is None or server.process.poll() is not None:
            raise Fail("the embedded Redis exited unexpectedly")

    wait_for_signal(check)
    server.stop()
    server.unrecord(settings.state_dir)


def health_port_option(fn: F) -> F:
    return click.option(
        "--health-port",
        type=click.IntRange(0, 65535),
        default=None,
        help="Port of /healthz and /readyz (default 8080, ROLLOUTS_HEALTH_PORT); 0 turns it off.",
    )(fn)


def supervise(stack: Any) -> Callable[[], None]:
    """A tick that restarts the stack's dead children and says so."""

    def tick() -> None:
        for note in stack.supervise_once():
            click.echo(note)

    return tick


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@state_dir_option
@click.option(
    "-P",
    "--pool",
    type=click.Choice(["threads", "prefork", "solo"]),
    default=None,
    help="How reconciles run: threads of one process (default), child processes, or one at a time.",
)
@click.option(
    "-c",
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Reconciles at once: threads (default 10) or child processes (default one per CPU).",
)
@click.option("-Q", "--queues", default=None, help="Comma-separated queues to consume.")
@click.option("-n", "--hostname", default=None, help="Worker node name (celery -n).")
@health_port_option
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
def worker(
    *,
    state_dir: Path | None,
    pool: str | None,
    concurrency: int | None,
    queues: str | None,
    hostname: str | None,
    health_port: int | None,
    celery_args: tuple[str, ...],
) -> None:
    """Run a Celery worker host; extra arguments pass through to `celery worker`.

    SIGTERM: stop taking work, finish the reconciles in hand, hand back every key reserved but
    not started, and exit; after `ROLLOUTS_WORKER_SHUTDOWN_GRACE` the keys still in hand are
    handed back too (their reconciles abandoned, fenced) and the host exits.
    """
    settings = load_settings(
        state_dir=state_dir,
        **{
            "worker.pool": pool,
            "worker.concurrency": concurrency,
            "worker.queues": queues.split(",") if queues else None,
            "health.port": health_port,
        },
    )
    url = redis_url(settings)
    logs.configure(settings.log)
    from rollout_workers.celeryapp.app import create_app
    from rollout_workers.celeryapp.host import install

    app = create_app(settings, url)
    install(app, settings, url)
    argv = [
        "worker",
        *settings.worker.celery_pool_args,
        f"--queues={','.join(settings.worker.queues)}",
        f"--loglevel={settings.log.level}",
        "--without-mingle",
        "--without-gossip",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    sys.exit(app.worker_main(argv=[*argv, *celery_args]) or 0)


@cli.command()
@state_dir_option
@health_port_option
def beat(state_dir: Path | None, health_port: int | None) -> None:
    """Run the beat process (timer tick and periodic resync); standbys wait on its lock."""
    settings = load_settings(state_dir=state_dir, **{"health.port": health_port})
    url = redis_url(settings)
    logs.configure(settings.log)
    from beat.process import run

    run(settings, url)


@cli.command()
@state_dir_option
@click.option("--address", default=None, help="Listen address (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Listen port (default 5555).")
@click.option("--basic-auth", default=None, help="user:password; required off loopback.")
def flower(
    state_dir: Path | None, address: str | None, port: int | None, basic_auth: str | None
) -> None:
    """Run the stock Flower UI and API on the same broker."""
    import os

    settings = load_settings(
        state_dir=state_dir,
        **{"flower.address": address, "flower.port": port, "flower.basic_auth": basic_auth},
    )
    url = redis_url(settings)
    logs.configure(settings.log)
    fl = settings.flower
    # The task list shows each reconcile's key (its argument) and outcome (its result).
    argv = [
        "flower",
        f"--address={fl.address}",
        f"--port={fl.port}",
        f"--tasks_columns={TASK_COLUMNS}",
    ]
    if fl.basic_auth is not None:
        argv.append(f"--basic-auth={fl.basic_auth.get_secret_value()}")
    elif fl.address in ("127.0.0.1", "localhost", "::1"):
        # Loopback only: the API may be used without credentials.
        os.environ["FLOWER_UNAUTHENTICATED_API"] = "true"
    else:
        raise Fail(f"Flower on {fl.address} needs --basic-auth (or ROLLOUTS_FLOWER_BASIC_AUTH)")
    from rollout_workers.celeryapp.app import create_app

    sys.exit(create_app(settings, url).start(argv=argv) or 0)


#: Flower's task list columns: its defaults, with the key and the outcome.
TASK_COLUMNS = "name,uuid,state,args,result,received,runtime,worker"


def _controllers(value: str | None) -> list[str] | None:
    if value is None:
        return None
    names = [part.strip() for part in value.split(",") if part.strip()]
    unknown = sorted(set(names) - set(CONTROLLERS))
    if unknown or not names:
        raise click.BadParameter(f"unknown {unknown}; choose from {', '.join(CONTROLLERS)}")
    return names


@cli.command()
@state_dir_option
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Kubeconfig of the cluster (default: ROLLOUTS_KUBECONFIG, the embedded API, KUBECONFIG).",
)
@click.option("--instance-id", default=None, help="controller-instance-id to own.")
@click.option(
    "--namespace",
    default=None,
    help="Watch only this namespace (cluster-scoped ClusterAnalysisTemplates are not watched).",
)
@click.option(
    "--controllers",
    default=None,
    callback=lambda _ctx, _param, value: _controllers(value),
    help=f"Comma-separated controllers to serve, of {','.join(CONTROLLERS)} (default: all).",
)
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Port of /metrics, served by the leader (default 8090; 0 = off).")  # fmt: skip
@health_port_option
def watcher(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    instance_id: str | None,
    namespace: str | None,
    controllers: list[str] | None,
    metrics_port: int | None,
    health_port: int | None,
) -> None:
    """List+watch the cluster into the Redis cache and queue the affected keys (leader-elected)."""
    settings = load_settings(
        state_dir=state_dir,
        kubeconfig=kubeconfig,
        **{
            "kube.instance_id": instance_id,
            "kube.namespace": namespace,
            "watcher.controllers": controllers,
            "metrics.port": metrics_port,
            "health.port": health_port,
        },
    )
    url = redis_url(settings)
    logs.configure(settings.log)
    from rollout_workers.kube.config import ClusterNotFound, find_kubeconfig
    from rollout_workers.watcher.process import run

    try:
        find_kubeconfig(settings)
    except ClusterNotFound as err:
        raise Fail(str(err)) from None
    sys.exit(run(settings, url))


@cli.command()
@state_dir_option
@click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Use this cluster instead of starting the embedded API.",
)
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="Worker hosts to start.")  # fmt: skip
@click.option("--flower/--no-flower", default=False, help="Also start Flower.")
@click.option("--flower-port", type=int, default=5555, show_default=True)
@click.option("--ready-delay", type=float, default=2.0, show_default=True,
              help="Seconds the embedded API's pods take to become ready.")  # fmt: skip
@click.option("--demo-prometheus-port", type=click.IntRange(0, 65535), default=0,
              show_default=True,
              help="Port of the demo Prometheus; 0 picks a free one.")  # fmt: skip
def up(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    workers: int,
    flower: bool,
    flower_port: int,
    ready_delay: float,
    demo_prometheus_port: int,
) -> None:
    """Start the whole system locally (Redis, API, demo Prometheus, watcher, workers, beat)
    until Ctrl-C, printing every endpoint first (the watcher's /metrics: ROLLOUTS_METRICS_PORT)."""
    settings = load_settings(state_dir=state_dir, kubeconfig=kubeconfig)
    logs.configure(settings.log)
    stack = start_stack(
        settings,
        workers=workers,
        flower=flower,
        flower_port=flower_port,
        ready_delay=ready_delay,
        demo_prometheus_port=demo_prometheus_port,
    )
    try:
        for line in stack.describe():
            click.echo(line)
        click.echo("press Ctrl-C to stop")
        sys.stdout.flush()
        wait_for_signal(supervise(stack))
    finally:
        stack.stop()


@cli.command()
@state_dir_option
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--flower/--no-flower", default=False, help="Also start Flower.")
@click.option("--flower-port", type=int, default=5555, show_default=True)
@click.option("--exit-when-done", is_flag=True, help="Stop everything and exit at the end.")
def demo(
    *,
    state_dir: Path | None,
    workers: int,
    flower: bool,
    flower_port: int,
    exit_when_done: bool,
) -> None:
    """Run the demo on the embedded defaults (its own Redis and API in <state dir>/demo)."""
    base = load_settings(state_dir=state_dir)
    # Always the embedded defaults, in their own state dir, whatever the environment points at.
    settings = base.model_copy(
        update={
            "state_dir": base.state_dir / "demo",
            "kubeconfig": None,
            "redis": base.redis.model_copy(update={"url": None}),
        }
    )
    logs.configure(settings.log)
    from rollout_workers.local.demo import Demo, DemoFailed

    stack = start_stack(
        settings,
        workers=workers,
        flower=flower,
        flower_port=flower_port,
        ready_delay=1.0,
        command="demo",
    )
    try:
        for line in stack.describe():
            click.echo(line)
        try:
            summary = Demo(settings=settings, stack=stack).run()
        except DemoFailed as err:
            raise Fail(f"demo failed: {err} (logs in {stack.logs})") from None
        click.echo("summary: " + ", ".join(f"{k} {v}" for k, v in summary.items()))
        if exit_when_done:
            return
        click.echo("the system stays up for exploring; press Ctrl-C to stop")
        wait_for_signal(supervise(stack))
    finally:
        stack.stop()


def start_stack(settings: Settings, **options: Any) -> Any:
    from rollout_workers.kube.config import ClusterNotFound
    from rollout_workers.local.stack import Stack, StartupFailed
    from rollout_workers.local.standins import StandinsMissing

    if settings.kubeconfig is not None and not settings.kubeconfig.is_file():
        raise Fail(str(ClusterNotFound(f"kubeconfig {settings.kubeconfig} does not exist")))
    stack = Stack(settings=settings, **options)
    try:
        stack.start()
    except (StartupFailed, StandinsMissing, redis_server.RedisNotFound) as err:
        stack.stop()
        raise Fail(str(err)) from None
    stack.record()
    return stack


def kind_option(fn: F) -> F:
    return click.option(
        "--kind",
        type=click.Choice(sorted(KINDS)),
        default="rollouts",
        show_default=True,
        help="Task kind.",
    )(fn)


@cli.command()
@state_dir_option
@kind_option
@click.option("--all", "all_keys", is_flag=True, help="Every known key of the kind.")
@click.option("-n", "--namespace", default=None, help="With --all: only this namespace.")
@click.argument("keys", nargs=-1)
@friendly_errors
def enqueue(
    state_dir: Path | None, kind: str, all_keys: bool, namespace: str | None, keys: tuple[str, ...]
) -> None:
    """Queue a resync of NAMESPACE/NAME keys (or --all)."""
    if all_keys == bool(keys):
        raise click.UsageError("give NAMESPACE/NAME keys or --all, not both or neither")
    if namespace and not all_keys:
        raise click.UsageError("-n/--namespace goes with --all")
    settings = load_settings(state_dir=state_dir)
    runtime = build_runtime(settings)
    queue = runtime.queue(kind)
    result = queue.resync(namespace) if all_keys else queue.add(keys)
    for key in result.queued:
        click.echo(f"queued     {kind} {key}")
    for key in result.coalesced:
        click.echo(f"coalesced  {kind} {key} (already queued)")
    for key in result.dirty:
        click.echo(f"coalesced  {kind} {key} (being reconciled; runs again after)")
    click.echo(
        f"{len(result.queued)} queued, {len(result.coalesced) + len(result.dirty)} coalesced"
    )


def build_runtime(settings: Settings) -> Any:
    from rollout_workers.celeryapp.app import create_app
    from rollout_workers.celeryapp.tasks import build_runtime as build

    url = redis_url(settings)
    return build(create_app(settings, url), settings, url, batch_counts=False)


@cli.group()
def queue() -> None:
    """Inspect the work queues."""


@queue.command()
@state_dir_option
@click.option("--kind", type=click.Choice(sorted(KINDS)), default=None, help="Only this kind.")
@click.option(
    "--top", type=int, default=10, show_default=True, help="Failing keys and tenants to list."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@friendly_errors
def stats(state_dir: Path | None, kind: str | None, top: int, as_json: bool) -> None:
    """Queued, active and dirty counts, timers, the deepest tenants and the keys failing most."""
    settings = load_settings(state_dir=state_dir)
    runtime = build_runtime(settings)
    kinds = [kind] if kind else list(KINDS)
    all_stats = [runtime.queue(k).stats(top=top) for k in kinds]
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in all_stats], indent=2))
        return
    click.echo(
        f"{'KIND':<14}{'QUEUED':>8}{'ACTIVE':>8}{'DIRTY':>8}{'TIMERS':>8}{'DUE':>6}"
        f"{'KNOWN':>8}{'RECONCILES':>12}{'ERRORS':>8}"
    )
    for s in all_stats:
        click.echo(
            f"{s.kind:<14}{s.queued:>8}{s.active:>8}{s.dirty:>8}{s.timers:>8}{s.timers_due:>6}"
            f"{s.known:>8}{s.counters.get('reconciles', 0):>12}{s.counters.get('error', 0):>8}"
        )
    click.echo(f"\nlast timer tick: {tick_age(runtime)}")
    for s in all_stats:
        if s.tenants:
            click.echo(f"\nqueued {s.kind} by tenant ({s.fairness}, top {top}):")
            click.echo(f"  {'TENANT':<40}{'QUEUED':>8}{'EVENTS':>8}{'RESYNC':>8}")
            for t in s.tenants:
                click.echo(f"  {t.tenant:<40}{t.queued:>8}{t.events:>8}{t.resyncs:>8}")
    for s in all_stats:
        if s.failing:
            click.echo(f"\nfailing {s.kind} keys:")
            for key, count in s.failing:
                click.echo(f"  {count:>5}  {key}")


def tick_age(runtime: Any) -> str:
    from rollout_workers.celeryapp.tasks import ticks_key

    info = runtime.redis.hgetall(ticks_key(runtime.settings))
    if not info:
        return "never (is `rollouts beat` running?)"
    now_s, now_us = runtime.redis.time()
    age = now_s + now_us / 1e6 - float(info[b"last"])
    return f"{age:.1f}s ago ({int(info[b'count'])} ticks)"


def _attach_commands() -> None:
    """Commands defined in their own modules."""
    from rollout_workers.cli.lint import lint
    from rollout_workers.cli.metrics import metrics
    from rollout_workers.cli.notifications import notifications
    from rollout_workers.cli.plugin import register
    from rollout_workers.cli.standins import demo_prometheus, devcluster
    from rollout_workers.cli.version import version

    cli.add_command(devcluster)
    cli.add_command(demo_prometheus)
    cli.add_command(metrics)
    cli.add_command(lint)
    cli.add_command(version)
    cli.add_command(notifications)
    register(cli)


def main() -> None:
    cli.main(prog_name="rollouts")


if __name__ == "__main__":  # pragma: no cover
    main()

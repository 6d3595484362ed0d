"""Helpers every `rollouts` subcommand module shares: settings from the environment and
options, one-line failures, finding Redis, durations as Argo writes them, and a group whose
subcommands answer to short names."""

from __future__ import annotations

import functools
import signal
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import click
import pydantic
import redis

from rollout_workers.keys import InvalidKey
from rollout_workers.local import redis_server
from rollout_workers.settings import Settings
from rollout_workers.timefmt import TimeError, parse_duration_string

F = TypeVar("F", bound=Callable[..., Any])


class Fail(click.ClickException):
    """An error shown as one line, exit code 1."""

    def show(self, file: Any = None) -> None:
        click.echo(f"rollouts: {self.format_message()}", err=True)


def load_settings(**overrides: Any) -> Settings:
    try:
        settings = Settings()
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        where = "_".join(str(p) for p in first["loc"]).upper()
        raise Fail(f"invalid setting ROLLOUTS_{where}: {first['msg']}") from None
    return apply(settings, overrides)


def apply(settings: Settings, overrides: dict[str, Any]) -> Settings:
    """Apply CLI options given as dotted paths ('worker.concurrency') over the settings."""
    data = settings.model_dump()
    for path, value in overrides.items():
        if value is None:
            continue
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            node = node[part]
        node[leaf] = value
    try:
        return Settings.model_validate(data)
    except pydantic.ValidationError as err:
        first = err.errors()[0]
        raise Fail(f"invalid option {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def redis_url(settings: Settings) -> str:
    try:
        return redis_server.resolve_url(settings)
    except redis_server.RedisNotFound as err:
        raise Fail(str(err)) from None


def wait_for_signal(tick: Callable[[], None]) -> None:
    """Block until SIGINT/SIGTERM, calling `tick()` every half second meanwhile."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5):
        tick()


def friendly_errors(fn: F) -> F:
    """Turn expected failures (bad keys, Redis unreachable) into one-line errors."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InvalidKey as err:
            raise Fail(str(err)) from None
        except redis.RedisError as err:
            raise Fail(f"Redis error: {err}") from None

    return wrapper  # type: ignore[return-value]


state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Local state directory (default ./.rollouts, or ROLLOUTS_STATE_DIR).",
)


class ActionError(ValueError):
    """A request that cannot be made (unknown container, missing revision...): one line."""


def parse_duration(text: str) -> timedelta:
    """A duration as Argo writes them: a Go duration (`30s`, `5m`, `1h30m`) or whole seconds."""
    try:
        nanos = parse_duration_string(text.strip())
    except TimeError:
        raise ActionError(f"invalid duration {text!r} (expected e.g. 30s, 5m, 1h30m)") from None
    return timedelta(microseconds=nanos // 1000)


def one_line(text: object) -> str:
    """An error's text on one line, whitespace folded (API errors come as multi-line JSON)."""
    return " ".join(str(text).split())


class AliasGroup(click.Group):
    """A group whose subcommands also answer to short names (`ro` for `rollout`)."""

    def __init__(self, *args: Any, aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = aliases or {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

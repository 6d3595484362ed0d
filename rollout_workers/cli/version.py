"""`rollouts version`: this package's version, laid out as the plugin's `version` command."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import click

DISTRIBUTION = "rollout-workers"
#: Go's GOARCH names for the machines Python reports, as the plugin's `Platform` shows them.
GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0.0.0+unknown"


def version_lines(
    *, version: str, python: str, implementation: str, system: str, machine: str, short: bool
) -> list[str]:
    """`rollouts: v<version>`, then (unless short) the build details, indented by two."""
    lines = [f"rollouts: v{version}"]
    if short:
        return lines
    arch = GOARCH.get(machine.lower(), machine.lower())
    return [
        *lines,
        f"  Package: {DISTRIBUTION} {version}",
        f"  PythonVersion: {python}",
        f"  Compiler: {implementation}",
        f"  Platform: {system.lower()}/{arch}",
    ]


@click.command()
@click.option("--short", is_flag=True, help="Print just the version number.")
def version(short: bool) -> None:
    """Print the version of rollout-workers."""
    for line in version_lines(
        version=package_version(),
        python=platform.python_version(),
        implementation=sys.implementation.name.capitalize().replace("Cpython", "CPython"),
        system=platform.system(),
        machine=platform.machine(),
        short=short,
    ):
        click.echo(line)

"""The image carries the controller only: the stand-ins (standins/: the embedded API and the
demo's made-up Prometheus) are neither copied by the Dockerfile nor packaged with the controller,
and what only they need (aiohttp) is not a dependency of it."""

from __future__ import annotations

import re
import tomllib
from typing import Any

from tests.unit.deploy.render import ROOT


def project(path: str) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads((ROOT / path).read_text())
    return data


def requirement_names(data: dict[str, Any]) -> set[str]:
    requirements = data["project"]["dependencies"]
    return {re.split(r"[\[=<>~ ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_dockerfile_copies_the_controller_only() -> None:
    copied = set()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            *sources, _destination = line.split()[1:]
            copied.update(sources)
    assert copied == {"pyproject.toml", "README.md", "rollout_workers", "beat"}


def test_each_distribution_packages_its_own() -> None:
    controller, standins = project("pyproject.toml"), project("standins/pyproject.toml")
    assert controller["tool"]["setuptools"]["packages"]["find"]["include"] == [
        "rollout_workers*",
        "beat*",
    ]
    assert standins["tool"]["setuptools"]["packages"]["find"]["include"] == [
        "devcluster*",
        "demoprometheus*",
    ]
    assert "aiohttp" not in requirement_names(controller)
    assert {"rollout-workers", "aiohttp"} <= requirement_names(standins)

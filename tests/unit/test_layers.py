"""The tree is the dependency graph: every top-level package and module of the controller sits at
exactly one layer of `.importlinter`'s layers contract, and the graph between them (each one's
descendants taken together) has no cycle.

lint-imports checks the layers it is given; this checks that it is given all of them, so a new
package cannot land outside the layering, and it runs with the unit tests rather than only in
`make lint`.
"""

from __future__ import annotations

import configparser
import graphlib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("rollout_workers", "beat")
#: Top-level modules outside the layers: the `python -m` entry point.
UNLAYERED = {"rollout_workers.__main__"}


def layers() -> list[list[str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = config["importlinter:contract:layers"]["layers"].strip().splitlines()
    return [[name.strip() for name in line.replace(":", "|").split("|")] for line in lines]


def top_level(graph: grimp.ImportGraph) -> set[str]:
    """`beat` and the children of `rollout_workers`: the units the layers are made of."""
    return {"beat"} | graph.find_children("rollout_workers")


def owner(module: str, units: set[str]) -> str:
    """The unit a module belongs to (`rollout_workers` itself for the package's __init__)."""
    two = ".".join(module.split(".")[:2])
    return two if two in units else module.split(".", maxsplit=1)[0]


def test_every_top_level_package_and_module_sits_at_exactly_one_layer() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    listed = [name for line in layers() for name in line]
    assert sorted(name for name in set(listed) if listed.count(name) > 1) == []
    units = top_level(graph)
    assert sorted(units - UNLAYERED - set(listed)) == []
    # Only the controller's names: the layers may name other root packages (.importlinter's
    # root_packages), which this graph does not hold.
    stale = {name for name in listed if name.startswith("rollout_workers.")} - units
    assert sorted(stale) == []


def test_no_cycle_between_top_level_packages() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    units = top_level(graph)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for module in graph.modules:
        unit = owner(module, units)
        for imported in graph.find_modules_directly_imported_by(module):
            if (other := owner(imported, units)) != unit:
                sorter.add(unit, other)
    try:
        sorter.prepare()
    except graphlib.CycleError as err:
        cycle = " imports ".join(reversed(err.args[1]))
        raise AssertionError(f"import cycle between packages: {cycle}") from err


def test_no_cycle_between_modules() -> None:
    """No module imports, even indirectly, one that imports it: type-only imports count, as
    they do for lint-imports."""
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    sorter: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for module in graph.modules:
        sorter.add(module, *graph.find_modules_directly_imported_by(module))
    try:
        sorter.prepare()
    except graphlib.CycleError as err:
        cycle = " imports ".join(reversed(err.args[1]))
        raise AssertionError(f"import cycle between modules: {cycle}") from err

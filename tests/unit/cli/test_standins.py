"""The stand-ins' commands from the controller's CLI: `rollouts devcluster` is the stand-in's own
command (its options and help), and every command that needs a stand-in which is not installed
(as in the controller's image) stops with one line saying how to install it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rollout_workers import logs
from rollout_workers.cli.main import cli
from rollout_workers.local import standins


def test_devcluster_is_the_stand_ins_own_command() -> None:
    result = CliRunner().invoke(cli, ["devcluster", "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: rollouts devcluster [OPTIONS]")
    for option in ("--ready-delay", "--bad-image-pattern", "--no-crds", "--state-dir"):
        assert option in result.output


@pytest.mark.parametrize(
    ("args", "missing"),
    [
        (["devcluster", "--port", "0"], "devcluster"),
        (["demo-prometheus"], "demoprometheus"),
        (["up"], "demoprometheus or devcluster"),
        (["up", "--kubeconfig", "{config}"], "demoprometheus"),  # a cluster: no embedded API
        (["demo"], "demoprometheus or devcluster"),
    ],
)
def test_a_command_without_its_stand_ins_says_how_to_install_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], missing: str
) -> None:
    monkeypatch.setattr(standins, "find_spec", lambda name: None)
    monkeypatch.setattr(logs, "configure", lambda settings: None)  # pytest keeps its handlers
    config = tmp_path / "config"
    config.write_text("{}")
    env = {"ROLLOUTS_STATE_DIR": str(tmp_path / "state"), "ROLLOUTS_METRICS_PORT": "0"}
    result = CliRunner().invoke(cli, [a.format(config=config) for a in args], env=env)
    assert result.exit_code == 1, result.output
    assert result.output == (
        f"rollouts: `rollouts {args[0]}` needs the stand-ins, which are not installed here "
        f"(no {missing}): pip install -e ./standins\n"
    )
    assert not (tmp_path / "state").exists()

"""`promote`, `abort`, `retry`, `pause` and `terminate`: the commands that move a rollout on,
stop it or take it up again, and end an AnalysisRun or Experiment. Each sends the plugin's
patches:

- promote: merge patches `{"spec":{"paused":false}}` (when spec.paused) and, on the status
  subresource, `{"status":{"pauseConditions":null}}` (when paused by the controller), or for a
  canary paused on an Inconclusive step analysis `{"status":{"pauseConditions":null,
  "controllerPause":false,"currentStepIndex":N+1}}`, or for a canary with steps that is not
  paused `{"status":{"pauseConditions":null,"currentStepIndex":N+1}}`; `--full` sends
  `{"status":{"promoteFull":true}}` unless the rollout is already fully promoted (the plugin
  v1.8+; see `calculate_promote_patches`).
- abort / retry: `{"status":{"abort":true|false}}` on the status subresource.
- pause: `{"spec":{"paused":true}}`.
- terminate analysisrun|experiment: `{"spec":{"terminate":true}}` on the object.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from rollout_workers.cli import cluster
from rollout_workers.cli.cluster import api_errors, cluster_options
from rollout_workers.cli.common import ActionError, AliasGroup, Fail
from rollout_workers.cli.phase import current_canary_step
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import NotFound
from rollout_workers.kube.resources import ANALYSISRUNS, EXPERIMENTS, ROLLOUTS, Resource
from rollout_workers.objects import Obj

ABORT_PATCH: Obj = {"status": {"abort": True}}
RETRY_PATCH: Obj = {"status": {"abort": False}}
RETRY_EXPERIMENT_PATCH: Obj = {"status": None}
PAUSE_PATCH: Obj = {"spec": {"paused": True}}
UNPAUSE_PATCH: Obj = {"spec": {"paused": False}}
CLEAR_PAUSE_CONDITIONS_PATCH: Obj = {"status": {"pauseConditions": None}}
PROMOTE_FULL_PATCH: Obj = {"status": {"promoteFull": True}}
TERMINATE_PATCH: Obj = {"spec": {"terminate": True}}


@dataclass(frozen=True)
class PromotePatches:
    """What `promote` sends: `status` first (to the status subresource); if that subresource
    does not exist, `unified` replaces `spec` as the one main-resource patch."""

    spec: Obj | None
    status: Obj | None
    unified: Obj | None


BOTH_SKIP_FLAGS_ERROR = "Cannot use skip-current-step and skip-all-steps flags at the same time"
SKIP_BLUE_GREEN_ERROR = "Cannot skip steps of a bluegreen rollout. Run without a flags"
SKIP_WITHOUT_STEPS_ERROR = "Cannot skip steps of a rollout without steps"
SKIP_CURRENT_HINT = "use without the flag instead ex: promote ROLLOUT_NAME"
INCONCLUSIVE = "Inconclusive"


def _strategy(ro: Obj, kind: str) -> Obj | None:
    value = ((ro.get("spec") or {}).get("strategy") or {}).get(kind)
    return value if isinstance(value, dict) else None


def _promoted_step_index(ro: Obj) -> int | None:
    """The step after the current one (the current one past the last step); None for a
    rollout without canary steps (the plugin's GetCurrentCanaryStep, then `index++` while
    below the step count)."""
    steps = (_strategy(ro, "canary") or {}).get("steps") or []
    _, index = current_canary_step(ro)
    if index is None:
        return None
    return index + 1 if index < len(steps) else index


def is_inconclusive(ro: Obj) -> bool:
    """A canary whose current step analysis run is Inconclusive (the plugin's isInconclusive;
    the background run does not count)."""
    canary_status = (ro.get("status") or {}).get("canary") or {}
    step_run = canary_status.get("currentStepAnalysisRunStatus") or {}
    return _strategy(ro, "canary") is not None and step_run.get("status") == INCONCLUSIVE


def calculate_promote_patches(
    ro: Obj, *, full: bool = False, skip_current_step: bool = False, skip_all_steps: bool = False
) -> PromotePatches:
    """The plugin's (v1.8+) getPatches, case by case (the first that applies):

    - `--skip-current-step` (deprecated): `{"status":{"currentStepIndex":N+1}}`, also unified.
    - `--skip-all-steps` (deprecated): `{"status":{"currentStepIndex":<step count>}}`, also
      unified.
    - `--full`: `{"status":{"promoteFull":true}}` unless currentPodHash == stableRS (then
      nothing); no unified patch, so without a status subresource nothing is sent.
    - otherwise: `{"spec":{"paused":false}}` when spec.paused; the unified patch is
      `{"spec":{"paused":false},"status":{"pauseConditions":null}}`; and on the status:
      - a canary paused by the controller for an Inconclusive step analysis:
        `{"status":{"pauseConditions":null,"controllerPause":false,"currentStepIndex":N+1}}`,
        so the rollout moves past the step instead of analysing again;
      - any other pause condition: `{"status":{"pauseConditions":null}}`;
      - a canary with steps that is not paused (mid analysis or experiment step):
        `{"status":{"pauseConditions":null,"currentStepIndex":N+1}}` (unified with the
        same status and spec.paused false).
    """
    spec = ro.get("spec") or {}
    status = ro.get("status") or {}
    canary = _strategy(ro, "canary")
    steps = (canary or {}).get("steps") or []
    if skip_current_step and skip_all_steps:
        raise ActionError(BOTH_SKIP_FLAGS_ERROR)
    if skip_current_step or skip_all_steps:
        if _strategy(ro, "blueGreen") is not None:
            raise ActionError(SKIP_BLUE_GREEN_ERROR)
        if canary is not None and not steps:
            raise ActionError(SKIP_WITHOUT_STEPS_ERROR)
    if skip_current_step:
        index = _promoted_step_index(ro)
        if index is None:
            return PromotePatches(None, None, None)
        patch = {"status": {"currentStepIndex": index}}
        return PromotePatches(None, patch, patch)
    if skip_all_steps:
        patch = {"status": {"currentStepIndex": len(steps)}}
        return PromotePatches(None, patch, patch)
    if full:
        if status.get("currentPodHash") != status.get("stableRS"):
            return PromotePatches(None, PROMOTE_FULL_PATCH, None)
        return PromotePatches(None, None, None)

    spec_patch = UNPAUSE_PATCH if spec.get("paused") else None
    unified: Obj = {"spec": {"paused": False}, "status": {"pauseConditions": None}}
    paused_by_conditions = bool(status.get("pauseConditions"))
    if is_inconclusive(ro) and paused_by_conditions and status.get("controllerPause"):
        # Clearing only the conditions would make the controller analyse the step again;
        # the current plugin steps past it and resets controllerPause, so a pause step that
        # follows is taken afresh. (Without steps the plugin sends no status patch at all.)
        index = _promoted_step_index(ro)
        if index is None:
            return PromotePatches(spec_patch, None, unified)
        step_patch = {
            "status": {"pauseConditions": None, "controllerPause": False, "currentStepIndex": index}
        }
        return PromotePatches(spec_patch, step_patch, unified)
    if paused_by_conditions:
        return PromotePatches(spec_patch, CLEAR_PAUSE_CONDITIONS_PATCH, unified)
    if canary is not None:
        # Not paused by the controller but mid-update (an analysis or experiment step): move
        # to the next step. Clearing pause conditions and stepping are never combined.
        index = _promoted_step_index(ro)
        if index is not None:
            return PromotePatches(
                spec_patch,
                {"status": {"pauseConditions": None, "currentStepIndex": index}},
                {
                    "spec": {"paused": False},
                    "status": {"pauseConditions": None, "currentStepIndex": index},
                },
            )
    return PromotePatches(spec_patch, None, unified)


def patch_status_or_object(
    kube: Kube, resource: Resource, namespace: str, name: str, body: Obj
) -> Obj:
    """Merge patch the status subresource; where it does not exist (404 while the object
    does), the object itself, as the plugin does for CRDs without a status subresource."""
    try:
        return kube.patch(resource, namespace, name, body, subresource="status")
    except NotFound:
        return kube.patch(resource, namespace, name, body)


@click.command()
@cluster_options
@click.option("--full", is_flag=True, help="Skip the remaining steps, pauses and analysis.")
@click.option("-c", "--skip-current-step", is_flag=True, hidden=True, help="Deprecated.")
@click.option("-a", "--skip-all-steps", is_flag=True, hidden=True, help="Deprecated: --full.")
@click.argument("name")
def promote(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    full: bool,
    skip_current_step: bool,
    skip_all_steps: bool,
    name: str,
) -> None:
    """Promote a rollout paused at a canary step or before a blue-green switch (--full: all
    the way)."""
    if skip_current_step and skip_all_steps:
        raise Fail(BOTH_SKIP_FLAGS_ERROR)  # before any request, as the plugin
    if skip_current_step:
        click.echo(f"Flag --skip-current-step has been deprecated, {SKIP_CURRENT_HINT}", err=True)
    if skip_all_steps:
        click.echo("Flag --skip-all-steps has been deprecated, use --full instead", err=True)
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    kube, ns = target.kube, target.namespace
    with api_errors("rollout", name, ns):
        ro = kube.get(ROLLOUTS, ns, name)
        patches = calculate_promote_patches(
            ro, full=full, skip_current_step=skip_current_step, skip_all_steps=skip_all_steps
        )
        spec_patch = patches.spec
        if patches.status is not None:
            try:
                kube.patch(ROLLOUTS, ns, name, patches.status, subresource="status")
            except NotFound:
                spec_patch = patches.unified
        if spec_patch is not None:
            kube.patch(ROLLOUTS, ns, name, spec_patch)
    click.echo(f"rollout '{name}' {'fully promoted' if full else 'promoted'}")


@click.command()
@cluster_options
@click.argument("names", nargs=-1, required=True)
def abort(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Abort a rollout: scale the update back and send all traffic to the stable version."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("rollout", name, target.namespace):
            patch_status_or_object(target.kube, ROLLOUTS, target.namespace, name, ABORT_PATCH)
        click.echo(f"rollout '{name}' aborted")


class RetryGroup(AliasGroup):
    """`retry rollout NAME`, `retry experiment NAME`, and the short `retry NAME` (a rollout)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:
            return "rollout", self.get_command(ctx, "rollout"), args
        return super().resolve_command(ctx, args)


@click.group(
    cls=RetryGroup,
    aliases={
        "ro": "rollout",
        "rollouts": "rollout",
        "exp": "experiment",
        "experiments": "experiment",
    },
    context_settings={"ignore_unknown_options": True},
)
def retry() -> None:
    """Retry an aborted rollout or a failed experiment (`retry NAME` retries a rollout)."""


@retry.command("rollout")
@cluster_options
@click.argument("names", nargs=-1, required=True)
def retry_rollout(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Retry an aborted rollout (clears status.abort)."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("rollout", name, target.namespace):
            patch_status_or_object(target.kube, ROLLOUTS, target.namespace, name, RETRY_PATCH)
        click.echo(f"rollout '{name}' retried")


@retry.command("experiment")
@cluster_options
@click.argument("names", nargs=-1, required=True)
def retry_experiment(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Retry a failed experiment (clears its status)."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("experiment", name, target.namespace):
            target.kube.patch(EXPERIMENTS, target.namespace, name, RETRY_EXPERIMENT_PATCH)
        click.echo(f"experiment '{name}' retried")


@click.command()
@cluster_options
@click.argument("names", nargs=-1, required=True)
def pause(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Pause a rollout (spec.paused: true) until it is promoted."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("rollout", name, target.namespace):
            target.kube.patch(ROLLOUTS, target.namespace, name, PAUSE_PATCH)
        click.echo(f"rollout '{name}' paused")


@click.group(
    "terminate",
    cls=AliasGroup,
    aliases={
        "ar": "analysisrun",
        "analysisruns": "analysisrun",
        "exp": "experiment",
        "experiments": "experiment",
    },
)
def terminate_group() -> None:
    """Terminate an AnalysisRun or Experiment that is in progress."""


@terminate_group.command("analysisrun")
@cluster_options
@click.argument("names", nargs=-1, required=True)
def terminate_analysis_run(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Terminate AnalysisRuns (spec.terminate: true)."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("analysisrun", name, target.namespace):
            target.kube.patch(ANALYSISRUNS, target.namespace, name, TERMINATE_PATCH)
        click.echo(f"analysisRun '{name}' terminated")


@terminate_group.command("experiment")
@cluster_options
@click.argument("names", nargs=-1, required=True)
def terminate_experiment(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Terminate experiments (spec.terminate: true)."""
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("experiment", name, target.namespace):
            target.kube.patch(EXPERIMENTS, target.namespace, name, TERMINATE_PATCH)
        # The plugin prints "retried" here (a copy-paste slip); the patch is the same.
        click.echo(f"experiment '{name}' terminated")

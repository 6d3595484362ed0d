"""The user actions of the Argo Rollouts kubectl plugin, as `rollouts` subcommands.

A user may run `kubectl argo rollouts promote` one day and `rollouts promote` the next against
the same controller, so each action writes exactly what the plugin writes, with the same patch
type and to the same (sub)resource:

- promote: merge patches `{"spec":{"paused":false}}` (when spec.paused) and, on the status
  subresource, `{"status":{"pauseConditions":null}}` (when paused by the controller), or for a
  canary paused on an Inconclusive step analysis `{"status":{"pauseConditions":null,
  "controllerPause":false,"currentStepIndex":N+1}}`, or for a canary with steps that is not
  paused `{"status":{"pauseConditions":null,"currentStepIndex":N+1}}`; `--full` sends
  `{"status":{"promoteFull":true}}` unless the rollout is already fully promoted (the plugin
  v1.8+; see `calculate_promote_patches`).
- abort / retry: `{"status":{"abort":true|false}}` on the status subresource.
- pause: `{"spec":{"paused":true}}`; restart: `{"spec":{"restartAt":"<RFC 3339>"}}`.
- set image: a full update (PUT) of the rollout with the images replaced, retried on conflict.
- undo [--to-revision N]: a JSON patch replacing `/spec/template` with the template of the
  owned ReplicaSet whose revision annotation is N (default: the second newest).
- terminate analysisrun|experiment: `{"spec":{"terminate":true}}` on the object.
- status (reads only): the phase and message the plugin prints, and its exit codes.

Where the plugin falls back from the status subresource to the main resource on 404 (clusters
whose CRD has no status subresource), so does this module. The patch bodies are computed by pure
functions; the commands only read, send, and print one line.
"""

from __future__ import annotations

import copy
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from rollout_workers.cli import view
from rollout_workers.cli.common import Fail, load_settings, state_dir_option
from rollout_workers.kube.client import Kube
from rollout_workers.kube.errors import Conflict, KubeError, NotFound
from rollout_workers.kube.resources import (
    ANALYSISRUNS,
    EXPERIMENTS,
    POD_TEMPLATE_HASH_LABEL,
    PODS,
    REPLICASETS,
    ROLLOUTS,
    Resource,
)
from rollout_workers.objects import Obj
from rollout_workers.rollout.annotations import REVISION
from rollout_workers.timefmt import TimeError, parse_duration_string

F = TypeVar("F", bound=Callable[..., Any])

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

ABORT_PATCH: Obj = {"status": {"abort": True}}
RETRY_PATCH: Obj = {"status": {"abort": False}}
RETRY_EXPERIMENT_PATCH: Obj = {"status": None}
PAUSE_PATCH: Obj = {"spec": {"paused": True}}
UNPAUSE_PATCH: Obj = {"spec": {"paused": False}}
CLEAR_PAUSE_CONDITIONS_PATCH: Obj = {"status": {"pauseConditions": None}}
PROMOTE_FULL_PATCH: Obj = {"status": {"promoteFull": True}}
TERMINATE_PATCH: Obj = {"spec": {"terminate": True}}

#: Attempts of `set image` when the rollout changes between the read and the update.
SET_IMAGE_ATTEMPTS = 5
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class ActionError(ValueError):
    """A request that cannot be made (unknown container, missing revision...): one line."""


# -- pure: the patches -------------------------------------------------------------------------


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
    _, index = view.current_canary_step(ro)
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


def parse_duration(text: str) -> timedelta:
    """A duration as Argo writes them: a Go duration (`30s`, `5m`, `1h30m`) or whole seconds."""
    try:
        nanos = parse_duration_string(text.strip())
    except TimeError:
        raise ActionError(f"invalid duration {text!r} (expected e.g. 30s, 5m, 1h30m)") from None
    return timedelta(microseconds=nanos // 1000)


def format_time(at: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, as Kubernetes serializes metav1.Time."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def restart_patch(at: datetime) -> Obj:
    return {"spec": {"restartAt": format_time(at)}}


def parse_image_assignments(values: tuple[str, ...]) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        parts = value.split("=")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise click.UsageError(f"expected CONTAINER=IMAGE, got {value!r}")
        pairs.append((parts[0], parts[1]))
    return pairs


def calculate_set_image(ro: Obj, assignments: list[tuple[str, str]]) -> Obj:
    """A copy of the rollout with the images set; `*` names every container (init, regular,
    ephemeral)."""
    new = copy.deepcopy(ro)
    pod_spec = ((new.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container, image in assignments:
        found = False
        for key in CONTAINER_LISTS:
            for ctr in pod_spec.get(key) or []:
                if container in ("*", ctr.get("name")):
                    ctr["image"] = image
                    found = True
        if not found:
            raise ActionError(f'unable to find container named "{container}"')
    return new


def label_selector(selector: Obj | None) -> str | None:
    """A LabelSelector as a query string; None for a missing selector (selects nothing)."""
    if selector is None:
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator", "")
        values = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            raise ActionError(f"invalid selector operator {op!r}")
    return ",".join(parts)


def controlled_by(obj: Obj, uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == uid for ref in refs)


def _revision_of(rs: Obj) -> int | None:
    """The revision annotation: 0 when absent, None when not a number (then skipped)."""
    value = ((rs.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def select_revision(name: str, replica_sets: list[Obj], to_revision: int) -> Obj:
    """The ReplicaSet of `to_revision`, or with 0 the second newest revision."""
    latest: Obj | None = None
    previous: Obj | None = None
    latest_rev = previous_rev = -1
    for rs in replica_sets:
        rev = _revision_of(rs)
        if rev is None:
            continue
        if to_revision == 0:
            if latest_rev < rev:
                previous, previous_rev = latest, latest_rev
                latest, latest_rev = rs, rev
            elif previous_rev < rev:
                previous, previous_rev = rs, rev
        elif rev == to_revision:
            return rs
    if to_revision > 0:
        raise ActionError(f"unable to find specified revision {to_revision} in history")
    if previous is None:
        raise ActionError(f'no revision found for rollout "{name}"')
    return previous


def is_derivative(a: Any, b: Any) -> bool:
    """Whether `b` has every field set in `a` with the same value (fields unset in `a` are
    ignored): how the plugin compares the rollout's template with a ReplicaSet's, whose
    template the API server has filled with defaults."""
    if a is None or a in ("", {}, []):
        return True
    if isinstance(a, dict):
        if not isinstance(b, dict):
            return False
        return all(is_derivative(v, b.get(k)) for k, v in a.items())
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) > len(b):
            return False
        return all(is_derivative(x, y) for x, y in zip(a, b, strict=False))
    if b is None and a in (0, False):
        return True
    return bool(a == b)


def _without_hash(template: Obj) -> Obj:
    result = copy.deepcopy(template)
    labels = (result.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return result


def template_matches(current: Obj, candidate: Obj) -> bool:
    return is_derivative(_without_hash(current), _without_hash(candidate))


def undo_patch(rs: Obj) -> list[Obj]:
    template = _without_hash((rs.get("spec") or {}).get("template") or {})
    return [{"op": "replace", "path": "/spec/template", "value": template}]


# -- the cluster -------------------------------------------------------------------------------


@dataclass
class Target:
    kube: Kube
    namespace: str


def default_namespace(kubeconfig: Path | None, context: str | None) -> str:
    """The namespace of the kubeconfig's (current or chosen) context, else `default`."""
    if kubeconfig is None:
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    from kubernetes import config as k8s_config

    contexts, current = k8s_config.list_kube_config_contexts(config_file=str(kubeconfig))
    chosen = current
    if context:
        chosen = next((c for c in contexts or [] if c.get("name") == context), None)
        if chosen is None:
            raise Fail(f"context {context!r} not found in {kubeconfig}")
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace or "default")


def connect(*, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None) -> Target:
    from kubernetes.config.config_exception import ConfigException

    from rollout_workers.kube.config import ClusterNotFound, api_client, find_kubeconfig

    settings = load_settings(state_dir=state_dir, kubeconfig=kubeconfig)
    try:
        path = find_kubeconfig(settings)
        ns = namespace or default_namespace(path, settings.kube.context)
        client = api_client(settings)
    except ClusterNotFound as err:
        raise Fail(str(err)) from None
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as err:
        raise Fail(f"cannot load kubeconfig: {_one_line(str(err))}") from None
    return Target(Kube(client, settings.kube), ns)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@contextmanager
def api_errors(kind: str, name: str, namespace: str) -> Iterator[None]:
    """NotFound of the named object, and any other API error, as one-line failures."""
    try:
        yield
    except NotFound:
        raise Fail(f'{kind} "{name}" not found in namespace "{namespace}"') from None
    except KubeError as err:
        raise Fail(f"API error: {_one_line(str(err))}") from None
    except ActionError as err:
        raise Fail(str(err)) from None


def patch_status_or_object(
    kube: Kube, resource: Resource, namespace: str, name: str, body: Obj
) -> Obj:
    """Merge patch the status subresource; where it does not exist (404 while the object
    does), the object itself, as the plugin does for CRDs without a status subresource."""
    try:
        return kube.patch(resource, namespace, name, body, subresource="status")
    except NotFound:
        return kube.patch(resource, namespace, name, body)


def fetch_rollout_info(target: Target, name: str) -> view.RolloutInfo:
    ns = target.namespace
    with api_errors("rollout", name, ns):
        ro = target.kube.get(ROLLOUTS, ns, name)
        replica_sets, _ = target.kube.list(REPLICASETS, namespace=ns)
        pods, _ = target.kube.list(PODS, namespace=ns)
        runs, _ = target.kube.list(ANALYSISRUNS, namespace=ns)
        experiments, _ = target.kube.list(EXPERIMENTS, namespace=ns)
    return view.calculate_rollout_info(
        ro, replica_sets=replica_sets, pods=pods, analysis_runs=runs, experiments=experiments
    )


# -- commands ----------------------------------------------------------------------------------


def cluster_options(fn: F) -> F:
    fn = click.option(
        "-n", "--namespace", default=None, help="Namespace (default: the kubeconfig context's)."
    )(fn)
    fn = click.option(
        "--kubeconfig",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Kubeconfig of the cluster (default: ROLLOUTS_KUBECONFIG, the embedded API, "
        "KUBECONFIG).",
    )(fn)
    return state_dir_option(fn)


class AliasGroup(click.Group):
    """A group whose subcommands also answer to short names (`ro` for `rollout`)."""

    def __init__(self, *args: Any, aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.aliases = aliases or {}

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))


class RetryGroup(AliasGroup):
    """`retry rollout NAME`, `retry experiment NAME`, and the short `retry NAME` (a rollout)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and self.get_command(ctx, args[0]) is None:
            return "rollout", self.get_command(ctx, "rollout"), args
        return super().resolve_command(ctx, args)


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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("rollout", name, target.namespace):
            patch_status_or_object(target.kube, ROLLOUTS, target.namespace, name, ABORT_PATCH)
        click.echo(f"rollout '{name}' aborted")


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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("experiment", name, target.namespace):
            target.kube.patch(EXPERIMENTS, target.namespace, name, RETRY_EXPERIMENT_PATCH)
        click.echo(f"experiment '{name}' retried")


def _now() -> datetime:
    return datetime.now(UTC)


@click.command()
@cluster_options
@click.option("-i", "--in", "delay", default=None, help="Restart after this long (30s, 5m, 1h).")
@click.argument("name")
def restart(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    delay: str | None,
    name: str,
) -> None:
    """Restart the pods of a rollout (now, or --in a while), one batch at a time."""
    try:
        wait = parse_duration(delay) if delay else timedelta(0)
    except ActionError as err:
        raise click.BadParameter(str(err), param_hint="'--in'") from None
    if wait < timedelta(0):
        raise click.BadParameter("must not be negative", param_hint="'--in'")
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    with api_errors("rollout", name, target.namespace):
        target.kube.get(ROLLOUTS, target.namespace, name)
        target.kube.patch(ROLLOUTS, target.namespace, name, restart_patch(_now() + wait))
    click.echo(f"rollout '{name}' restarts in {delay or '0s'}")


@click.command()
@cluster_options
@click.argument("names", nargs=-1, required=True)
def pause(
    *, state_dir: Path | None, kubeconfig: Path | None, namespace: str | None, names: tuple[str]
) -> None:
    """Pause a rollout (spec.paused: true) until it is promoted."""
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("rollout", name, target.namespace):
            target.kube.patch(ROLLOUTS, target.namespace, name, PAUSE_PATCH)
        click.echo(f"rollout '{name}' paused")


@click.group("set")
def set_group() -> None:
    """Change a rollout's spec."""


@set_group.command("image")
@cluster_options
@click.argument("name")
@click.argument("assignments", nargs=-1, required=True, metavar="CONTAINER=IMAGE...")
def set_image(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    name: str,
    assignments: tuple[str, ...],
) -> None:
    """Set container images of a rollout (`*=IMAGE` for every container)."""
    pairs = parse_image_assignments(assignments)
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    kube, ns = target.kube, target.namespace
    with api_errors("rollout", name, ns):
        for attempt in range(1, SET_IMAGE_ATTEMPTS + 1):
            ro = kube.get(ROLLOUTS, ns, name)
            try:
                # A full update, as the plugin: it fails with 409 if the rollout changed since
                # the read (its resourceVersion is in the body); then read again.
                kube.json("PUT", ROLLOUTS.path(ns, name), body=calculate_set_image(ro, pairs))
            except Conflict:
                if attempt == SET_IMAGE_ATTEMPTS:
                    raise
                continue
            break
    click.echo(f'rollout "{name}" image updated')


@click.command()
@cluster_options
@click.option(
    "--to-revision",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Revision to roll back to; 0 is the previous one.",
)
@click.argument("name")
def undo(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    to_revision: int,
    name: str,
) -> None:
    """Roll a rollout back to the pod template of an earlier revision."""
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    kube, ns = target.kube, target.namespace
    with api_errors("rollout", name, ns):
        ro = kube.get(ROLLOUTS, ns, name)
        selector = label_selector((ro.get("spec") or {}).get("selector"))
        uid = str((ro.get("metadata") or {}).get("uid") or "")
        owned: list[Obj] = []
        if selector is not None:
            listed, _ = kube.list(REPLICASETS, namespace=ns, label_selector=selector or None)
            owned = [rs for rs in listed if controlled_by(rs, uid)]
        rs = select_revision(name, owned, to_revision)
        current = (ro.get("spec") or {}).get("template") or {}
        if template_matches(current, (rs.get("spec") or {}).get("template") or {}):
            # The plugin names the revision asked for (0 for the previous one), not the match.
            click.echo(
                f"skipped rollback (current template already matches revision {to_revision})"
            )
            return
        try:
            kube.patch(ROLLOUTS, ns, name, undo_patch(rs), patch_type=JSON_PATCH)
        except KubeError as err:
            raise Fail(f"failed restoring revision {to_revision}: {_one_line(str(err))}") from None
    click.echo(f"rollout '{name}' undo")


@click.group(
    "get",
    cls=AliasGroup,
    aliases={
        "ro": "rollout",
        "rollouts": "rollout",
        "exp": "experiment",
        "experiments": "experiment",
    },
)
def get_group() -> None:
    """Show a rollout or an experiment and the objects it owns."""


def _use_color(no_color: bool) -> bool:
    return (
        not no_color
        and sys.stdout.isatty()
        and os.environ.get("TERM") != "dumb"
        and "NO_COLOR" not in os.environ
    )


def _parse_timeout(value: str | None, seconds: int | None) -> float | None:
    if seconds:
        return float(seconds)
    if not value:
        return None
    try:
        return parse_duration(value).total_seconds() or None
    except ActionError as err:
        raise click.BadParameter(str(err), param_hint="'--timeout'") from None


CLEAR_SCREEN = "\x1b[H\x1b[2J\x1b[0;0H"


class RolloutChanges:
    """Signals when the named rollout (or object of `resource`) changes, from a watch in a
    daemon thread; the screen is also redrawn every second without it (ages move), so a broken
    watch only costs latency."""

    def __init__(
        self, target: Target, name: str, resource_version: str, resource: Resource = ROLLOUTS
    ) -> None:
        self.target, self.name, self.resource = target, name, resource
        self.resource_version = resource_version
        self.changed = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rollout-watch", daemon=True)

    def start(self) -> RolloutChanges:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for event in self.target.kube.watch(
                    self.resource,
                    namespace=self.target.namespace,
                    resource_version=self.resource_version,
                    timeout_seconds=60,
                ):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if event.get("type") == "ERROR":
                        break
                    if version:
                        self.resource_version = str(version)
                    if (obj.get("metadata") or {}).get("name") == self.name:
                        self.changed.set()
            except Exception:
                # Best effort: the screen is redrawn every second anyway, and a CLI must not
                # print a thread's traceback over it.
                pass
            self._stop.wait(1.0)


def watch_rollout(
    target: Target, name: str, *, timeout: float | None, color: bool, min_interval: float = 0.2
) -> None:
    """Redraw the screen on each change and every second; with a timeout, stop at Healthy
    (exit 0), Degraded or the timeout (exit 1). Only a terminal is cleared between frames."""
    deadline = None if timeout is None else time.monotonic() + timeout
    with api_errors("rollout", name, target.namespace):
        first = target.kube.get(ROLLOUTS, target.namespace, name)
    version = str((first.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version).start()
    clear, first_frame = sys.stdout.isatty(), True
    try:
        while True:
            drawn_at = time.monotonic()
            info = fetch_rollout_info(target, name)
            screen = view.render_rollout(info, now=_now(), color=color)
            # On a terminal, redraw in place; piped, append each frame after a blank line.
            sys.stdout.write(CLEAR_SCREEN if clear else "" if first_frame else "\n")
            click.echo(screen, nl=False)
            sys.stdout.flush()
            first_frame = False
            if deadline is not None:
                if info.status == "Healthy":
                    return
                if info.status == "Degraded":
                    raise Fail(f'rollout "{name}" is Degraded: {info.message}'.rstrip(": "))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Fail(
                        f'timed out after {timeout:g}s waiting for rollout "{name}" '
                        f"(status: {info.status})"
                    )
            wait = 1.0 if deadline is None else min(1.0, max(0.0, deadline - time.monotonic()))
            changes.changed.wait(wait)
            changes.changed.clear()
            # Rate-limit redraws when changes come in bursts, so the terminal does not flicker.
            pause_left = min_interval - (time.monotonic() - drawn_at)
            if pause_left > 0:
                time.sleep(pause_left)
    finally:
        changes.stop()


@get_group.command("rollout")
@cluster_options
@click.option("-w", "--watch", is_flag=True, help="Redraw live until Ctrl-C.")
@click.option(
    "--timeout",
    default=None,
    help="With --watch (implied): stop at Healthy or Degraded, fail after this long (5m, 90s).",
)
@click.option("--timeout-seconds", type=click.IntRange(min=0), default=None, hidden=True)
@click.option("--no-color", is_flag=True, help="Do not colorize output.")
@click.argument("name")
def get_rollout(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    timeout: str | None,
    timeout_seconds: int | None,
    no_color: bool,
    name: str,
) -> None:
    """Show a rollout: status, weights, images, and its revisions as a tree."""
    limit = _parse_timeout(timeout, timeout_seconds)
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    color = _use_color(no_color)
    if not watch and limit is None:
        info = fetch_rollout_info(target, name)
        click.echo(view.render_rollout(info, now=_now(), color=color), nl=False)
        return
    try:
        watch_rollout(target, name, timeout=limit, color=color)
    except KeyboardInterrupt:
        click.echo("")


@click.group(
    "list",
    cls=AliasGroup,
    aliases={
        "ro": "rollouts",
        "rollout": "rollouts",
        "exp": "experiments",
        "experiment": "experiments",
    },
)
def list_group() -> None:
    """List rollouts or experiments."""


@list_group.command("rollouts")
@cluster_options
@click.option("-A", "--all-namespaces", is_flag=True, help="Rollouts of every namespace.")
@click.option("--name", "only", default=None, help="Only the rollout with this name.")
def list_rollouts(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    all_namespaces: bool,
    only: str | None,
) -> None:
    """List rollouts with their strategy, status, step, weight and replicas."""
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    ns = None if all_namespaces else target.namespace
    try:
        items, _ = target.kube.list(ROLLOUTS, namespace=ns)
    except KubeError as err:
        raise Fail(f"API error: {_one_line(str(err))}") from None
    if only:
        items = [ro for ro in items if (ro.get("metadata") or {}).get("name") == only]
    items.sort(key=lambda ro: ((ro.get("metadata") or {}).get("namespace", ""),
                               (ro.get("metadata") or {}).get("name", "")))  # fmt: skip
    if not items:
        click.echo("No resources found.", err=True)
        return
    click.echo(view.render_list(items, all_namespaces=all_namespaces), nl=False)


def fetch_experiment_info(target: Target, name: str) -> view.ExperimentInfo:
    ns = target.namespace
    with api_errors("experiment", name, ns):
        exp = target.kube.get(EXPERIMENTS, ns, name)
        replica_sets, _ = target.kube.list(REPLICASETS, namespace=ns)
        pods, _ = target.kube.list(PODS, namespace=ns)
        runs, _ = target.kube.list(ANALYSISRUNS, namespace=ns)
    return view.experiment_info(exp, replica_sets=replica_sets, pods=pods, analysis_runs=runs)


def watch_experiment(target: Target, name: str, *, color: bool) -> None:
    """Redraw the experiment on each change and every second, until Ctrl-C."""
    with api_errors("experiment", name, target.namespace):
        first = target.kube.get(EXPERIMENTS, target.namespace, name)
    version = str((first.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version, EXPERIMENTS).start()
    clear, first_frame = sys.stdout.isatty(), True
    try:
        while True:
            drawn_at = time.monotonic()
            screen = view.render_experiment(
                fetch_experiment_info(target, name), now=_now(), color=color
            )
            sys.stdout.write(CLEAR_SCREEN if clear else "" if first_frame else "\n")
            click.echo(screen, nl=False)
            sys.stdout.flush()
            first_frame = False
            changes.changed.wait(1.0)
            changes.changed.clear()
            pause_left = 0.2 - (time.monotonic() - drawn_at)
            if pause_left > 0:
                time.sleep(pause_left)
    finally:
        changes.stop()


@get_group.command("experiment")
@cluster_options
@click.option("-w", "--watch", is_flag=True, help="Redraw live until Ctrl-C.")
@click.option("--no-color", is_flag=True, help="Do not colorize output.")
@click.argument("name")
def get_experiment(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    no_color: bool,
    name: str,
) -> None:
    """Show an experiment: status, images, and its ReplicaSets, pods and analysis runs."""
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    color = _use_color(no_color)
    if not watch:
        info = fetch_experiment_info(target, name)
        click.echo(view.render_experiment(info, now=_now(), color=color), nl=False)
        return
    try:
        watch_experiment(target, name, color=color)
    except KeyboardInterrupt:
        click.echo("")


@list_group.command("experiments")
@cluster_options
@click.option("-A", "--all-namespaces", is_flag=True, help="Experiments of every namespace.")
def list_experiments(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    all_namespaces: bool,
) -> None:
    """List experiments with their status, duration, time remaining and age."""
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    ns = None if all_namespaces else target.namespace
    try:
        items, _ = target.kube.list(EXPERIMENTS, namespace=ns)
    except KubeError as err:
        raise Fail(f"API error: {_one_line(str(err))}") from None
    if not items:
        click.echo("No resources found.", err=True)
        return
    items.sort(key=lambda exp: ((exp.get("metadata") or {}).get("namespace", ""),
                                (exp.get("metadata") or {}).get("name", "")))  # fmt: skip
    click.echo(
        view.render_experiment_list(items, now=_now(), all_namespaces=all_namespaces), nl=False
    )


# -- status ------------------------------------------------------------------------------------

DEGRADED_ERROR = "The rollout is in a degraded state with message: {}"
#: How often `status --watch` reads the rollout again when its watch reports nothing.
STATUS_POLL_SECONDS = 1.0
STATUS_TIMEOUT_ERROR = "Rollout status watch exceeded timeout"
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def status_line(phase: str, message: str) -> str:
    """What `status --watch=false` prints: the phase alone when final, else `phase - message`."""
    return phase if phase in view.FINAL_PHASES else f"{phase} - {message}"


def watch_status_line(phase: str, message: str) -> str:
    """A line of `status --watch`: `phase - message`, or the phase alone without a message."""
    return f"{phase} - {message}" if message else phase


def status_failure(phase: str, message: str, *, watched: bool) -> str | None:
    """Why `status` exits 1, or None: Degraded always; with --watch, anything but Healthy
    (the watch ended on its timeout or an interrupt)."""
    if phase == "Degraded":
        return DEGRADED_ERROR.format(message)
    if watched and phase != "Healthy":
        return STATUS_TIMEOUT_ERROR
    return None


GO_BOOL_FLAGS = {"-w": "watch", "--watch": "watch"}


def rewrite_go_bool_flag(arg: str) -> str:
    """cobra's `--watch=false` / `-w=true` as click's `--no-watch` / `--watch`; any other
    argument unchanged."""
    flag, eq, value = arg.partition("=")
    name = GO_BOOL_FLAGS.get(flag)
    if not eq or name is None:
        return arg
    if value in _GO_TRUE:
        return f"--{name}"
    if value in _GO_FALSE:
        return f"--no-{name}"
    raise click.BadParameter(f'invalid argument "{value}": expected true or false', param_hint=flag)


class GoBoolFlagCommand(click.Command):
    """Accepts cobra's `--watch=false` for boolean flags declared as `--watch/--no-watch`, so
    the plugin's command lines work unchanged."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        rewritten = [rewrite_go_bool_flag(arg) for arg in args[:end]] + args[end:]
        return super().parse_args(ctx, rewritten)


def _rollout_phase(target: Target, name: str) -> tuple[Obj, str, str]:
    with api_errors("rollout", name, target.namespace):
        ro = target.kube.get(ROLLOUTS, target.namespace, name)
    phase, message = view.calculate_rollout_phase(ro)
    return ro, phase, message


def watch_status(target: Target, name: str, *, timeout: float | None) -> tuple[str, str]:
    """Print each new `phase - message` until Healthy or Degraded, the timeout, or Ctrl-C;
    then the final phase and message (read again after a timeout, as the plugin does)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    ro, phase, message = _rollout_phase(target, name)
    version = str((ro.get("metadata") or {}).get("resourceVersion") or "0")
    changes = RolloutChanges(target, name, version).start()
    previous = ""
    try:
        while True:
            line = watch_status_line(phase, message)
            if line != previous:
                click.echo(line)
                sys.stdout.flush()
                previous = line
            if phase in view.FINAL_PHASES:
                return phase, message
            if deadline is not None and time.monotonic() >= deadline:
                break
            wait = STATUS_POLL_SECONDS
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            changes.changed.wait(wait)
            changes.changed.clear()
            _, phase, message = _rollout_phase(target, name)
    except KeyboardInterrupt:
        pass
    finally:
        changes.stop()
    _, phase, message = _rollout_phase(target, name)
    return phase, message


@click.command(cls=GoBoolFlagCommand)
@cluster_options
@click.option(
    "-w",
    "--watch/--no-watch",
    default=True,
    help="Watch the status of the rollout until it's done (the default; --watch=false or "
    "--no-watch prints it once).",
)
@click.option(
    "-t",
    "--timeout",
    default="0",
    show_default=True,
    help="How long to watch before giving up (1s, 2m, 3h); 0 waits forever.",
)
@click.argument("name")
def status(
    *,
    state_dir: Path | None,
    kubeconfig: Path | None,
    namespace: str | None,
    watch: bool,
    timeout: str,
    name: str,
) -> None:
    """Watch a rollout until it is Healthy (exit 0) or Degraded (exit 1), or the timeout
    passes (exit 1); with --watch=false print its status once (exit 1 only when Degraded)."""
    try:
        limit = parse_duration(timeout).total_seconds() or None
    except ActionError as err:
        raise click.BadParameter(str(err), param_hint="'--timeout'") from None
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    if watch:
        phase, message = watch_status(target, name, timeout=limit)
    else:
        _, phase, message = _rollout_phase(target, name)
        click.echo(status_line(phase, message))
    failure = status_failure(phase, message, watched=watch)
    if failure is not None:
        raise Fail(failure)


# -- terminate ---------------------------------------------------------------------------------


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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
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
    target = connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    for name in names:
        with api_errors("experiment", name, target.namespace):
            target.kube.patch(EXPERIMENTS, target.namespace, name, TERMINATE_PATCH)
        # The plugin prints "retried" here (a copy-paste slip); the patch is the same.
        click.echo(f"experiment '{name}' terminated")


COMMANDS: tuple[click.Command, ...] = (promote, abort, retry, restart, pause, undo, status)
GROUPS: tuple[click.Group, ...] = (set_group, get_group, list_group, terminate_group)


def register(cli: click.Group) -> None:
    """Add the plugin's actions to the `rollouts` group; subcommands of `set`, `get` and
    `list` join an existing group of that name."""
    for command in COMMANDS:
        cli.add_command(command)
    for group in GROUPS:
        existing = cli.commands.get(group.name or "")
        if isinstance(existing, click.Group) and existing is not group:
            for sub_name, sub in group.commands.items():
                existing.add_command(sub, sub_name)
        else:
            cli.add_command(group)

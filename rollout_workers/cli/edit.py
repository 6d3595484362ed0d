"""`set image`, `undo` and `restart`: the commands that change a rollout's spec, each as the
plugin does:

- set image: a full update (PUT) of the rollout with the images replaced, retried on conflict.
- undo [--to-revision N]: a JSON patch replacing `/spec/template` with the template of the
  owned ReplicaSet whose revision annotation is N (default: the second newest).
- restart: `{"spec":{"restartAt":"<RFC 3339>"}}`.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import click

from rollout_workers.cli import cluster
from rollout_workers.cli.cluster import api_errors, cluster_options
from rollout_workers.cli.common import ActionError, Fail, one_line, parse_duration
from rollout_workers.kube.errors import Conflict, KubeError
from rollout_workers.kube.resources import POD_TEMPLATE_HASH_LABEL, REPLICASETS, ROLLOUTS
from rollout_workers.objects import Obj
from rollout_workers.rollout.annotations import REVISION
from rollout_workers.timefmt import format_time, utcnow

JSON_PATCH = "application/json-patch+json"
#: Attempts of `set image` when the rollout changes between the read and the update.
SET_IMAGE_ATTEMPTS = 5
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


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
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
    with api_errors("rollout", name, target.namespace):
        target.kube.get(ROLLOUTS, target.namespace, name)
        target.kube.patch(ROLLOUTS, target.namespace, name, restart_patch(utcnow() + wait))
    click.echo(f"rollout '{name}' restarts in {delay or '0s'}")


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
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
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
    target = cluster.connect(state_dir=state_dir, kubeconfig=kubeconfig, namespace=namespace)
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
            raise Fail(f"failed restoring revision {to_revision}: {one_line(err)}") from None
    click.echo(f"rollout '{name}' undo")

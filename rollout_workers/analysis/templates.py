"""Building the AnalysisRun a rollout asks for: templates merged, arguments resolved.

Mirrors argo-rollouts' utils/analysis (NewAnalysisRunFromTemplates,
BuildArgumentsForRolloutAnalysisRun): the referenced AnalysisTemplates and
ClusterAnalysisTemplates (and the templates they nest) contribute their metrics, arguments,
dry-run and retention settings; the rollout's arguments override the templates' defaults and
may come from a ReplicaSet's pod-template hash or a field of the rollout. Pure: the caller
supplies the templates it found in the cache.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import pydantic

from rollout_workers.analysis.fieldpath import (
    FieldPathError,
    is_metadata_path,
    metadata_field,
    rollout_value,
)
from rollout_workers.api.analysis import (
    AnalysisTemplate,
    AnalysisTemplateSpec,
    ClusterAnalysisTemplate,
)
from rollout_workers.kube.resources import INSTANCE_ID_LABEL
from rollout_workers.objects import Obj

#: Finds a template's spec by (name, cluster-scoped); None when it does not exist.
TemplateLookup = Callable[[str, bool], AnalysisTemplateSpec | None]

ROLLOUT_TYPE_LABEL = "rollout-type"
STEP_INDEX_LABEL = "step-index"
STEP, BACKGROUND, PRE_PROMOTION, POST_PROMOTION = (
    "Step",
    "Background",
    "PrePromotion",
    "PostPromotion",
)


class ObjectSource(Protocol):
    """Where templates are read from (the cache's Lister): an object by key, or None."""

    def get(self, key: str) -> Obj | None: ...


def spec_lookup(
    templates: ObjectSource | None, cluster_templates: ObjectSource | None, namespace: str
) -> TemplateLookup:
    """A TemplateLookup over the templates of `namespace` and the cluster-scoped ones; a
    template that is absent or does not parse counts as absent."""

    def lookup(name: str, cluster: bool) -> AnalysisTemplateSpec | None:
        source = cluster_templates if cluster else templates
        raw = source.get(name if cluster else f"{namespace}/{name}") if source else None
        if raw is None:
            return None
        try:
            model = ClusterAnalysisTemplate if cluster else AnalysisTemplate
            return model.from_dict(raw).spec
        except pydantic.ValidationError:
            return None

    return lookup


class TemplateError(ValueError):
    """A template is missing, nested too deep, or the merged spec is inconsistent."""


@dataclass(frozen=True)
class Merged:
    metrics: list[Obj]
    args: list[Obj]
    dry_run: list[Obj]
    measurement_retention: list[Obj]


def merge_templates(refs: list[Obj], lookup: TemplateLookup, *, depth: int = 0) -> Merged:
    """Metrics, args, dryRun and retention of the referenced templates (nested ones too)."""
    if depth > 10:
        raise TemplateError("analysis templates are nested more than 10 deep")
    metrics: list[Obj] = []
    args: dict[str, Obj] = {}
    dry_run: list[Obj] = []
    retention: list[Obj] = []
    for ref in refs:
        name = str(ref.get("templateName") or "")
        cluster = bool(ref.get("clusterScope"))
        spec = lookup(name, cluster)
        if spec is None:
            kind = "ClusterAnalysisTemplate" if cluster else "AnalysisTemplate"
            raise TemplateError(f'{kind} "{name}" not found')
        data = spec.to_dict()
        if data.get("templates"):
            nested = merge_templates(list(data["templates"]), lookup, depth=depth + 1)
            metrics += nested.metrics
            for arg in nested.args:
                args.setdefault(arg["name"], arg)
            dry_run += nested.dry_run
            retention += nested.measurement_retention
        metrics += list(data.get("metrics") or [])
        for arg in data.get("args") or []:
            existing = args.get(arg["name"])
            if (
                existing is not None
                and existing.get("value") not in (None, arg.get("value"))
                and (arg.get("value") is not None)
            ):
                raise TemplateError(
                    f"Argument `{arg['name']}` specified multiple times with different values"
                )
            if existing is None or existing.get("value") is None:
                args[arg["name"]] = arg
        dry_run += list(data.get("dryRun") or [])
        retention += list(data.get("measurementRetention") or [])
    names = [m["name"] for m in metrics]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise TemplateError(f"two metrics have the same name '{duplicates[0]}'")
    return Merged(metrics, list(args.values()), dry_run, retention)


def resolve_rollout_args(
    rollout_args: list[Obj], *, rollout: Obj, stable_hash: str | None, latest_hash: str | None
) -> list[Obj]:
    """The rollout's analysis args with valueFrom resolved (Argo's
    BuildArgumentsForRolloutAnalysisRun); raises TemplateError with Argo's message when a
    fieldRef names no field of the rollout.

    As in Argo, a `metadata...` path that Kubernetes' fieldpath rejects fails at once, while any
    other path that does not resolve gives "" and the error is raised after every argument is
    built: the error of the last such path, which a later path that does resolve clears
    (Argo keeps one error variable and overwrites it with every fieldRef's outcome)."""
    out: list[Obj] = []
    error = ""
    for arg in rollout_args:
        value_from = arg.get("valueFrom") or {}
        value = arg.get("value")
        path = str((value_from.get("fieldRef") or {}).get("fieldPath") or "")
        if value_from.get("podTemplateHashValue") == "Stable":
            value = stable_hash
        elif value_from.get("podTemplateHashValue") == "Latest":
            value = latest_hash
        elif value_from.get("fieldRef") is not None:
            try:
                if is_metadata_path(path):
                    value, error = metadata_field(rollout, path), ""
                else:
                    value, error = rollout_value(rollout, path), ""
            except FieldPathError as err:
                if is_metadata_path(path):
                    raise TemplateError(str(err)) from None
                value, error = "", str(err)
        out.append({"name": arg["name"], "value": value})
    if error:
        raise TemplateError(error)
    return out


def final_args(template_args: list[Obj], rollout_args: list[Obj]) -> list[Obj]:
    """Template defaults overridden by the rollout's values; every arg must end with a value
    (or a secret reference, resolved by the AnalysisRun controller)."""
    given = {a["name"]: a for a in rollout_args}
    out = []
    for arg in template_args:
        if arg["name"] in given and given[arg["name"]].get("value") is not None:
            out.append({"name": arg["name"], "value": given[arg["name"]]["value"]})
        elif arg.get("value") is not None or arg.get("valueFrom"):
            out.append(arg)
        else:
            raise TemplateError(f"args.{arg['name']} was not resolved")
    return out


def owner_reference(owner: Obj) -> Obj:
    """The controller reference to `owner` (a Rollout or an Experiment) that its runs carry."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion") or "argoproj.io/v1alpha1",
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def run_body(
    *,
    owner: Obj,
    name: str,
    templates: list[Obj],
    args: list[Obj],
    lookup: TemplateLookup,
    labels: dict[str, str],
    annotations: dict[str, str],
    dry_run: list[Obj],
    retention: list[Obj],
) -> Obj:
    """An AnalysisRun of the merged `templates`, owned by `owner` (Argo's
    NewAnalysisRunFromTemplates). `args` override the templates' defaults; the owner's
    controller-instance-id label is carried over so that the run stays this instance's."""
    merged = merge_templates(templates, lookup)
    spec: Obj = {"metrics": merged.metrics, "args": final_args(merged.args, args)}
    if merged.dry_run + dry_run:
        spec["dryRun"] = merged.dry_run + dry_run
    if merged.measurement_retention + retention:
        spec["measurementRetention"] = merged.measurement_retention + retention
    meta = owner["metadata"]
    instance_id = (meta.get("labels") or {}).get(INSTANCE_ID_LABEL)
    run_labels = {INSTANCE_ID_LABEL: instance_id} if instance_id else {}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": name,
            "namespace": meta.get("namespace"),
            "labels": {**run_labels, **labels},
            "annotations": annotations,
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": spec,
    }


def analysis_run_body(
    *,
    rollout: Obj,
    analysis: Obj,
    lookup: TemplateLookup,
    pod_hash: str,
    stable_hash: str | None,
    revision: int,
    infix: str,
    rollout_type: str,
    step_index: int | None = None,
) -> Obj:
    """A rollout's AnalysisRun (named `<rollout>-<hash>-<revision>[-<infix>]`)."""
    meta = rollout["metadata"]
    labels = {"rollouts-pod-template-hash": pod_hash, ROLLOUT_TYPE_LABEL: rollout_type}
    if step_index is not None:
        labels[STEP_INDEX_LABEL] = str(step_index)
    run_meta = analysis.get("analysisRunMetadata") or {}
    labels.update(run_meta.get("labels") or {})
    return run_body(
        owner={"kind": "Rollout", **rollout},
        name=f"{meta['name']}-{pod_hash}-{revision}" + (f"-{infix}" if infix else ""),
        templates=list(analysis.get("templates") or []),
        args=resolve_rollout_args(
            list(analysis.get("args") or []),
            rollout=rollout,
            stable_hash=stable_hash,
            latest_hash=pod_hash,
        ),
        lookup=lookup,
        labels=labels,
        annotations={
            "rollout.argoproj.io/revision": str(revision),
            **(run_meta.get("annotations") or {}),
        },
        dry_run=list(analysis.get("dryRun") or []),
        retention=list(analysis.get("measurementRetention") or []),
    )

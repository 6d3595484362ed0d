"""Template resolution from `spec.workloadRef`, after Argo's `rollout/templateref_test.go`."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.kube import resources as r
from rollout_workers.rollout import templateref as t

Obj = dict[str, Any]
POD_TEMPLATE: Obj = {"metadata": {"labels": {"test-label": "test-label-val"}}}
SELECTOR: Obj = {"matchLabels": {"app": "my-app"}}


def rollout(ref: Obj | None, **spec: Any) -> Obj:
    body: Obj = dict(spec)
    if ref is not None:
        body["workloadRef"] = ref
    return {"metadata": {"name": "my-rollout", "namespace": "default"}, "spec": body}


def ref(kind: str, name: str, api_version: str = "apps/v1") -> Obj:
    return {"apiVersion": api_version, "kind": kind, "name": name}


DEPLOYMENT: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "my-deployment", "namespace": "default", "generation": 1},
    "spec": {"selector": SELECTOR, "template": POD_TEMPLATE},
}
REPLICASET: Obj = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "my-rs", "namespace": "default", "generation": 3},
    "spec": {"template": POD_TEMPLATE},
}
PODTEMPLATE: Obj = {
    "apiVersion": "v1",
    "kind": "PodTemplate",
    "metadata": {"name": "my-pod-template", "namespace": "default"},
    "template": POD_TEMPLATE,
}
CACHE: dict[tuple[str, str], Obj] = {
    (r.DEPLOYMENTS.cache_name, "default/my-deployment"): DEPLOYMENT,
    (r.UNHASHED_REPLICASETS.cache_name, "default/my-rs"): REPLICASET,
    (r.PODTEMPLATES.cache_name, "default/my-pod-template"): PODTEMPLATE,
}


def get(resource: r.Resource, key: str) -> Obj | None:
    return CACHE.get((resource.cache_name, key))


def resolve(obj: Obj, listed: bool = True) -> t.Resolved | None:
    return t.resolve(obj, get, listed=lambda _: listed)


ERRORS = [
    # (name, rollout, message) — Argo's TestResolve_* error cases
    (
        "not supported group (TestResolve_NotSupportedGroup)",
        rollout(ref("argoproj", "my-rs", "Workflow/v1")),
        "workload of type Workflow/argoproj is not supported",
    ),
    (
        "not supported kind",
        rollout(ref("StatefulSet", "db")),
        "workload of type apps/StatefulSet is not supported",
    ),
    (
        "reference does not exist (TestResolve_RefDoesNotExists)",
        rollout(ref("Deployment", "missing")),
        'deployments.apps "default/missing" not found',
    ),
    (
        "pod template does not exist",
        rollout(ref("PodTemplate", "missing", "v1")),
        'podtemplates "default/missing" not found',
    ),
    (
        "workload with template (TestResolve_WorkloadWithTemplate)",
        rollout(
            ref("Deployment", "my-deployment"),
            template={"metadata": {"labels": {"app": "deploy"}}},
        ),
        "template must be empty for workload reference rollout",
    ),
]


@pytest.mark.parametrize(("obj", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_resolve_errors(obj: Obj, message: str) -> None:
    with pytest.raises(t.ResolveError) as err:
        resolve(obj)
    assert str(err.value) == message


RESOLVED = [
    # (name, rollout, template, selector, generation) — Argo's successful cases
    (
        "deployment (TestResolve_DeploymentRef)",
        rollout(ref("Deployment", "my-deployment")),
        POD_TEMPLATE,
        SELECTOR,
        "1",
    ),
    (
        "replicaset (TestResolve_ReplicaSetRef)",
        rollout(ref("ReplicaSet", "my-rs")),
        POD_TEMPLATE,
        None,
        "3",
    ),
    (
        "pod template (TestResolveRefDeployment_PodTemplate)",
        rollout(ref("PodTemplate", "my-pod-template", "v1")),
        POD_TEMPLATE,
        None,
        "0",
    ),
    (
        "the rollout's own selector wins",
        rollout(ref("Deployment", "my-deployment"), selector={"matchLabels": {"test": "app"}}),
        POD_TEMPLATE,
        {"matchLabels": {"test": "app"}},
        "1",
    ),
    (
        "an empty template (no labels, no annotations) is allowed",
        rollout(ref("Deployment", "my-deployment"), template={"spec": {}}),
        POD_TEMPLATE,
        SELECTOR,
        "1",
    ),
]


@pytest.mark.parametrize(
    ("obj", "template", "selector", "generation"),
    [c[1:] for c in RESOLVED],
    ids=[c[0] for c in RESOLVED],
)
def test_resolve(obj: Obj, template: Obj, selector: Obj | None, generation: str) -> None:
    before = repr(obj)
    resolved = resolve(obj)
    assert resolved is not None
    assert resolved.obj["spec"]["template"] == template
    assert resolved.obj["spec"].get("selector") == selector
    # TestRequeueReferencedRollouts: the workload-generation annotation follows the workload
    assert resolved.obj["metadata"]["annotations"] == {t.WORKLOAD_GENERATION: generation}
    assert resolved.generation == generation and resolved.stored_generation is None
    assert repr(obj) == before  # the cached object is never modified


def test_no_reference_resolves_nothing() -> None:
    """TestResolveNotRef."""
    assert resolve(rollout(None)) is None


def test_a_referenced_replicaset_with_the_hash_label_is_read_from_the_hashed_cache() -> None:
    hashed = {**REPLICASET, "metadata": {**REPLICASET["metadata"], "name": "hashed"}}

    def from_hashed(resource: r.Resource, key: str) -> Obj | None:
        return hashed if resource is r.REPLICASETS and key == "default/hashed" else None

    resolved = t.resolve(rollout(ref("ReplicaSet", "hashed")), from_hashed, listed=lambda _: True)
    assert resolved is not None and resolved.resource is r.REPLICASETS


def test_a_type_not_listed_yet_is_not_an_error() -> None:
    with pytest.raises(t.NotListed):
        resolve(rollout(ref("Deployment", "my-deployment")), listed=False)


def test_stored_generation_and_validation_view() -> None:
    obj = rollout(ref("Deployment", "my-deployment"))
    obj["metadata"]["annotations"] = {t.WORKLOAD_GENERATION: "0"}
    resolved = resolve(obj)
    assert resolved is not None and resolved.stored_generation == "0"
    checked = t.unresolved_for_validation(resolved.obj)
    assert "workloadRef" not in checked["spec"] and checked["spec"]["template"] == POD_TEMPLATE

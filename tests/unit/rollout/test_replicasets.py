"""Finding a rollout's new, old and stable ReplicaSets."""

from __future__ import annotations

from typing import Any

from rollout_workers.rollout import replicasets as r
from rollout_workers.rollout.hashing import pod_template_hash

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "web:1"}]},
}


def rollout(template: dict[str, Any] = TEMPLATE) -> dict[str, Any]:
    return {"metadata": {"name": "web"}, "spec": {"template": template}, "status": {}}


def rs(name: str, template: dict[str, Any], created: str, hash_: str = "h") -> dict[str, Any]:
    labels = {**template["metadata"]["labels"], "rollouts-pod-template-hash": hash_}
    return {
        "metadata": {"name": name, "creationTimestamp": created, "labels": labels},
        "spec": {"template": {**template, "metadata": {"labels": labels}}},
    }


def test_new_found_by_name() -> None:
    h = pod_template_hash(TEMPLATE, None)
    other = {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "web:0"}]}}
    rss = [rs("web-old", other, "2020"), rs(f"web-{h}", TEMPLATE, "2021", h)]
    new = r.find_new(rollout(), rss)
    assert new is not None and r.name(new) == f"web-{h}"
    assert [r.name(x) for x in r.find_old(rss, new)] == ["web-old"]


def test_new_adopted_by_template_despite_server_defaults() -> None:
    defaulted = {
        "metadata": {"labels": {"app": "web"}, "creationTimestamp": None},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "web:1",
                    "imagePullPolicy": "IfNotPresent",
                    "terminationMessagePath": "/dev/termination-log",
                    "resources": {},
                }
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
        },
    }
    argo_made = rs("web-6d4f9c8b7", defaulted, "2021", "6d4f9c8b7")
    assert r.find_new(rollout(), [argo_made]) is argo_made


def test_real_differences_are_not_adopted() -> None:
    changed = {**TEMPLATE, "spec": {"containers": [{"name": "c", "image": "web:2"}]}}
    assert r.find_new(rollout(), [rs("web-x", changed, "2021")]) is None
    extra_env = {
        **TEMPLATE,
        "spec": {"containers": [{"name": "c", "image": "web:1", "env": [{"name": "A"}]}]},
    }
    assert r.find_new(rollout(), [rs("web-y", extra_env, "2021")]) is None


def test_deleted_replicasets_are_never_new() -> None:
    h = pod_template_hash(TEMPLATE, None)
    dying = rs(f"web-{h}", TEMPLATE, "2021", h)
    dying["metadata"]["deletionTimestamp"] = "2022"
    assert r.find_new(rollout(), [dying]) is None


def test_stable_and_counts() -> None:
    a, b = rs("a", TEMPLATE, "1", "ha"), rs("b", TEMPLATE, "2", "hb")
    a["status"] = {"replicas": 2, "availableReplicas": 1}
    b["status"] = {"replicas": 3, "availableReplicas": 3}
    b["spec"]["replicas"] = 3
    assert r.find_stable("ha", b, [a]) is a
    assert r.find_stable("hb", b, [a]) is b
    assert r.find_stable(None, b, [a]) is None
    assert r.total([a, b, None], "availableReplicas") == 4
    assert r.total_spec_replicas([a, b]) == 4  # a has no spec.replicas: 1 by default
    a["metadata"]["annotations"] = {"rollout.argoproj.io/revision": "4"}
    assert r.max_revision([a, b]) == 4

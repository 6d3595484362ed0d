"""Anti-affinity between revisions: `canary.antiAffinity` / `blueGreen.antiAffinity`.

Pure functions over the rollout and pod templates as dicts (Argo's GenerateReplicaSetAffinity
and its helpers in utils/replicaset/replicaset.go):

- While an update is in progress (a stable exists and differs from the current template), the
  new ReplicaSet's pod template gets a podAntiAffinity term against the stable pods' hash on
  `kubernetes.io/hostname`: weighted when `preferredDuringSchedulingIgnoredDuringExecution` is
  set, else required. The user's own affinity rules are kept; the term is appended.
- The injected term is recognised by its `rollouts-pod-template-hash` expression. When the
  stable moves on during an update, the term is rewritten to the new stable's hash.
- Once the ReplicaSet is the stable one, its term stays as it is: as in Argo, no write removes
  it (that would change the template of running pods' ReplicaSet for nothing).
- To compare a ReplicaSet's template with the rollout's, the injected term is taken out.
"""

from __future__ import annotations

import copy

from rollout_workers.kube.resources import POD_TEMPLATE_HASH_LABEL
from rollout_workers.objects import Obj

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"


def anti_affinity_of(rollout: Obj) -> Obj | None:
    """The strategy's antiAffinity when it names a rule (Argo's GetRolloutAffinity)."""
    strategy = (rollout.get("spec") or {}).get("strategy") or {}
    found: Obj | None = None
    for name in ("blueGreen", "canary"):
        value = (strategy.get(name) or {}).get("antiAffinity")
        if isinstance(value, dict):
            found = value
    if found is None or (found.get(PREFERRED) is None and found.get(REQUIRED) is None):
        return None
    return found


def injected_term(*, stable_hash: str, namespace: str) -> Obj:
    """The pod affinity term against the stable pods."""
    return {
        "labelSelector": {
            "matchExpressions": [
                {"key": POD_TEMPLATE_HASH_LABEL, "operator": "In", "values": [stable_hash]}
            ]
        },
        "namespaces": [namespace],
        "topologyKey": HOSTNAME_TOPOLOGY,
    }


def calculate_affinity(
    *,
    affinity: Obj | None,
    anti_affinity: Obj | None,
    stable_hash: str | None,
    current_hash: str,
    namespace: str,
) -> Obj | None:
    """The pod template affinity of the current revision's ReplicaSet: the template's own,
    plus the injected term while updating away from a stable."""
    result = copy.deepcopy(affinity)
    if anti_affinity is None or not stable_hash or stable_hash == current_hash:
        return result
    term = injected_term(stable_hash=stable_hash, namespace=namespace)
    result = result or {}
    pod_anti = result.setdefault("podAntiAffinity", {}) or {}
    result["podAntiAffinity"] = pod_anti
    preferred = anti_affinity.get(PREFERRED)
    if preferred is not None:
        weighted = {"weight": int((preferred or {}).get("weight") or 0), "podAffinityTerm": term}
        pod_anti[PREFERRED] = [*(pod_anti.get(PREFERRED) or []), weighted]
    else:
        pod_anti[REQUIRED] = [*(pod_anti.get(REQUIRED) or []), term]
    return result


def _is_injected(term: Obj) -> bool:
    selector = (term or {}).get("labelSelector") or {}
    return any(
        expr.get("key") == POD_TEMPLATE_HASH_LABEL
        for expr in selector.get("matchExpressions") or []
    )


def _terms(affinity: Obj | None, anti_affinity: Obj) -> tuple[str, list[Obj]]:
    kind = PREFERRED if anti_affinity.get(PREFERRED) is not None else REQUIRED
    pod_anti = (affinity or {}).get("podAntiAffinity") or {}
    return kind, list(pod_anti.get(kind) or [])


def find_injected(affinity: Obj | None, anti_affinity: Obj | None) -> tuple[int, Obj] | None:
    """(index, term) of the injected term among the rules of the strategy's kind (Argo's
    HasInjectedAntiAffinityRule)."""
    if anti_affinity is None:
        return None
    kind, terms = _terms(affinity, anti_affinity)
    for index, entry in enumerate(terms):
        term = (entry or {}).get("podAffinityTerm") if kind == PREFERRED else entry
        if _is_injected(term or {}):
            return index, term or {}
    return None


def needs_update(
    affinity: Obj | None, anti_affinity: Obj | None, *, stable_hash: str | None, current_hash: str
) -> bool:
    """An injected term names a stable that is no longer the stable, during an update."""
    found = find_injected(affinity, anti_affinity)
    if found is None or stable_hash == current_hash:
        return False
    for expr in (found[1].get("labelSelector") or {}).get("matchExpressions") or []:
        values = expr.get("values") or []
        if expr.get("key") == POD_TEMPLATE_HASH_LABEL and values and values[0] != stable_hash:
            return True
    return False


def remove_injected(affinity: Obj | None, anti_affinity: Obj | None) -> Obj | None:
    """The affinity without the injected term, with the parents it leaves empty dropped
    (Argo's RemoveInjectedAntiAffinityRule)."""
    found = find_injected(affinity, anti_affinity)
    if found is None or anti_affinity is None:
        return copy.deepcopy(affinity)
    result = copy.deepcopy(affinity) or {}
    kind, terms = _terms(result, anti_affinity)
    del terms[found[0]]
    pod_anti = result["podAntiAffinity"]
    pod_anti[kind] = terms
    if not pod_anti.get(REQUIRED):
        pod_anti.pop(REQUIRED, None)
    if not pod_anti.get(PREFERRED) and PREFERRED in pod_anti and kind == PREFERRED:
        pod_anti.pop(PREFERRED, None)
    if not pod_anti:
        result.pop("podAntiAffinity")
    return result or None


def comparable_template(template: Obj, anti_affinity: Obj | None) -> Obj:
    """A ReplicaSet's pod template without the injected term (to compare with the rollout's)."""
    spec = template.get("spec") or {}
    if find_injected(spec.get("affinity"), anti_affinity) is None:
        return template
    stripped = remove_injected(spec.get("affinity"), anti_affinity)
    new_spec = {k: v for k, v in spec.items() if k != "affinity"}
    if stripped is not None:
        new_spec["affinity"] = stripped
    return {**template, "spec": new_spec}

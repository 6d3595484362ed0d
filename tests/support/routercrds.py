"""The traffic routers' CRDs (SMI, Istio, Gateway API, Traefik, APISIX, Ambassador, App Mesh),
as a cluster that runs those routers has them: the groups, kinds and versions the real projects
publish, with open schemas (the embedded API does not validate values), installed through the
API as `kubectl apply` would."""

from __future__ import annotations

import time
from typing import Any

from rollout_workers.kube import resources as r
from rollout_workers.kube.client import Kube

Obj = dict[str, Any]

CRDS = r.Resource(
    "customresourcedefinitions", "apiextensions.k8s.io", "v1", "CustomResourceDefinition", False
)
_OPEN = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}


def router_crd(versions: tuple[r.Resource, ...], *, storage: str | None = None) -> Obj:
    """The CRD serving the router kind at each of `versions` of the first one's group (stored at
    `storage`, by default the newest)."""
    first = versions[0]
    versions = tuple(res for res in versions if res.group == first.group)
    storage = storage or first.version
    # Gateway API's group is under k8s.io: its published CRDs carry the API-review approval.
    annotations = (
        {"api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/2466"}
        if first.group.endswith(".k8s.io")
        else {}
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{first.plural}.{first.group}", "annotations": annotations},
        "spec": {
            "group": first.group,
            "scope": "Namespaced",
            "names": {
                "plural": first.plural,
                "singular": first.kind.lower(),
                "kind": first.kind,
                "listKind": f"{first.kind}List",
            },
            "versions": [
                {
                    "name": res.version,
                    "served": True,
                    "storage": res.version == storage,
                    "schema": _OPEN,
                    "subresources": {"status": {}},
                }
                for res in versions
            ],
        },
    }


#: Each router kind's CRD, by router kind (in its newest group: Traefik's traefik.io, the older
#: traefik.containo.us being `router_crd(r.TRAEFIKSERVICES[1:])`; Ambassador's getambassador.io,
#: the previews' x.getambassador.io AmbassadorMapping being `router_crd(r.MAPPINGS[2:])`).
ROUTER_CRDS: dict[str, Obj] = {
    kind: router_crd(versions) for kind, versions in r.ROUTER_OBJECTS.items()
}


def install_router_crds(kube: Kube, *crds: Obj, timeout: float = 10.0) -> None:
    """Create these CRDs (default: every router's) and wait until discovery serves each."""
    crds = crds or tuple(ROUTER_CRDS.values())
    for crd in crds:
        kube.create(CRDS, None, crd)
    deadline = time.monotonic() + timeout
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            path = f"/apis/{spec['group']}/{version['name']}"
            while True:
                try:
                    served = {res["name"] for res in kube.json("GET", path)["resources"]}
                except Exception:
                    served = set()
                if spec["names"]["plural"] in served:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{spec['names']['plural']} not served at {path}")
                time.sleep(0.05)

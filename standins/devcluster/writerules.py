"""The write rules that depend only on the written object and its type, not on the store's state.

Separate from the store so that its create/update paths read as the order of the steps, and each
rule as what the real API server checks or changes: the body's kind and apiVersion, object
names (RFC 1123) and generateName suffixes, the metadata only the server sets, the per-type
validation (selectors of ReplicaSets, Deployments and Jobs; CRDs through crds.py), the
resourceVersion and uid preconditions (409 Conflict, the fence the controller relies on), what
bumps ``metadata.generation``, a Secret's ``stringData``, and what makes a write a no-op.
"""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

from devcluster import crds, errors
from devcluster.errors import ApiError, JSONDict
from devcluster.resources import CRD_KEY, ResourceType
from devcluster.selectors import selector_from_label_selector_object
from devcluster.stored import Stored

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# The alphabet of generateName suffixes (utilrand.String: no vowels, no confusable digits).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# Fields of metadata only the server sets; writes cannot change them.
SYSTEM_METADATA = (
    "uid",
    "creationTimestamp",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def random_suffix(rng: random.Random, length: int = 5) -> str:
    """The suffix a ``generateName`` gets, from the alphabet the real server draws from."""
    return "".join(rng.choice(_SUFFIX_ALPHABET) for _ in range(length))


def check_body(rt: ResourceType, body: Any) -> JSONDict:
    """The written body as ``rt``'s kind and apiVersion (400 when it names others), with its
    own copy of the metadata, which the write then fills in."""
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if (kind and kind != rt.kind) or (api_version and api_version != rt.api_version):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version}) or the kind ({kind}) is not {rt.kind}"
        )
    meta = body.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return {**body, "kind": rt.kind, "apiVersion": rt.api_version, "metadata": dict(meta)}


def check_name(rt: ResourceType, name: str) -> None:
    """422 unless ``name`` is an RFC 1123 subdomain (a label, for namespaces)."""
    pattern, limit = (_DNS_LABEL, 63) if rt.plural == "namespaces" else (_DNS_SUBDOMAIN, 253)
    if len(name) > limit or not pattern.match(name):
        raise errors.invalid(
            kind=rt.kind,
            group=rt.group,
            name=name,
            field="metadata.name",
            cause_reason="FieldValueInvalid",
            detail=f'Invalid value: "{name}": a lowercase RFC 1123 name must consist of '
            f"lower case alphanumeric characters, '-' or '.', and must start and end "
            f"with an alphanumeric character",
        )


def validate(rt: ResourceType, obj: JSONDict, old: JSONDict | None) -> None:
    """The per-type validation of a create (``old`` None) or an update: a CRD's through
    crds.py; the selector, template labels and replicas of ReplicaSets, Deployments and Jobs."""
    if rt.key == CRD_KEY:
        causes = crds.calculate_validation_causes(obj, old)
        if causes:
            raise crds.validation_error(str(obj["metadata"].get("name", "")), causes)
        return
    if rt.key not in ("replicasets.apps", "deployments.apps", "jobs.batch"):
        return
    name = obj["metadata"]["name"]
    spec = obj.get("spec") or {}
    selector = spec.get("selector")

    def fail(field: str, reason: str, detail: str) -> ApiError:
        return errors.invalid(
            kind=rt.kind,
            group=rt.group,
            name=name,
            field=field,
            cause_reason=reason,
            detail=detail,
        )

    if not selector:
        raise fail("spec.selector", "FieldValueRequired", "Required value")
    if old is not None and selector != (old.get("spec") or {}).get("selector"):
        raise fail("spec.selector", "FieldValueInvalid", "Invalid value: field is immutable")
    try:
        parsed = selector_from_label_selector_object(selector)
    except ValueError as exc:
        raise fail("spec.selector", "FieldValueInvalid", str(exc)) from None
    if parsed.empty:
        raise fail("spec.selector", "FieldValueInvalid", "Invalid value: empty selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not parsed.matches(labels):
        raise fail(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            f"Invalid value: {json.dumps(labels)}: `selector` does not match template `labels`",
        )
    replicas = spec.get("replicas")
    if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
        raise fail(
            "spec.replicas",
            "FieldValueInvalid",
            f"Invalid value: {replicas}: must be greater than or equal to 0",
        )


def check_preconditions(rt: ResourceType, old: Stored, meta: JSONDict) -> None:
    """409 Conflict when ``meta`` names another resourceVersion or uid than ``old`` has."""
    name = str(old.metadata["name"])
    rv = meta.get("resourceVersion")
    if rv and str(rv) != old.metadata["resourceVersion"]:
        raise errors.conflict(resource=rt.plural, group=rt.group, name=name)
    uid = meta.get("uid")
    if uid and uid != old.metadata.get("uid"):
        raise errors.conflict(
            resource=rt.plural,
            group=rt.group,
            name=name,
            why=f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{old.metadata.get('uid')}",
        )


def spec_changed(rt: ResourceType, old: JSONDict, new: JSONDict) -> bool:
    """Whether an update bumps ``metadata.generation``."""
    if rt.custom:
        # Without a status subresource a status change is a spec change too (as on a real
        # server: only metadata changes leave the generation alone).
        skip = {"metadata", "kind", "apiVersion"}
        if rt.status_subresource:
            skip.add("status")
        keys = (set(old) | set(new)) - skip
        return any(old.get(k) != new.get(k) for k in keys)
    return old.get(rt.generation_field) != new.get(rt.generation_field)


def fold_string_data(rt: ResourceType, obj: JSONDict) -> JSONDict:
    """A Secret's write-only `stringData` merged into `data` (base64), as the API server does on
    every write: a key in both takes the `stringData` value, and `stringData` is never stored."""
    if rt.key != "secrets" or "stringData" not in obj:
        return obj
    folded = {k: v for k, v in obj.items() if k != "stringData"}
    data = dict(obj.get("data") or {})
    for key, value in (obj.get("stringData") or {}).items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    if data:
        folded["data"] = data
    return folded


def without_rv(obj: JSONDict) -> JSONDict:
    """``obj`` without its resourceVersion: equal for two versions of a no-op write."""
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "resourceVersion"}
    return {**obj, "metadata": meta}

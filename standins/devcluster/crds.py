"""CustomResourceDefinitions: validation, defaults, status and the types a CRD serves.

What apiextensions-apiserver does with an ``apiextensions.k8s.io/v1`` CRD, reduced to what a
client can observe: the essential validation (422 Invalid with the real field paths and
messages, structural schemas), the defaults (``singular``, ``listKind``, the ``None`` conversion
strategy), the status its controllers set (``NamesAccepted`` unless another CRD of the group
holds a name, ``Established`` once accepted, ``acceptedNames``, ``storedVersions``), and one
``ResourceType`` per served version, with the version's schema (pruning), subresources (status,
scale), printer columns and accepted names (discovery). The store calls these; serving
starts and stops with the CRD's writes (store.py). Pure functions, no I/O.

Not done (a real server does it): value validation against the schema (types, required, enums,
CEL), defaulting from the schema, webhook conversion (a Webhook strategy converts as None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from devcluster import errors
from devcluster.errors import ApiError, JSONDict
from devcluster.resources import CRD_GROUP, ResourceType, ScaleSpec

CRD_KIND = "CustomResourceDefinition"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
APPROVAL = "api-approved.kubernetes.io"
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1035_DETAIL = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)
Cause = tuple[str, str, str]  # field, reason, detail


def calculate_defaults(obj: JSONDict) -> JSONDict:
    """The CRD with the server's defaults applied (a new dict)."""
    spec = dict(obj.get("spec") or {})
    names = dict(spec.get("names") or {})
    kind = names.get("kind")
    if isinstance(kind, str) and kind:
        names.setdefault("singular", kind.lower())
        names.setdefault("listKind", f"{kind}List")
    spec["names"] = names
    spec.setdefault("conversion", {"strategy": "None"})
    versions = spec.get("versions")
    if isinstance(versions, list):
        spec["versions"] = [
            {"served": False, "storage": False, **v} if isinstance(v, dict) else v for v in versions
        ]
    return {**obj, "spec": spec}


def _value(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def calculate_validation_causes(obj: JSONDict, old: JSONDict | None) -> list[Cause]:
    """The validation errors of a (defaulted) CRD, empty when valid; ``old`` on update."""
    causes: list[Cause] = []

    def invalid(field: str, value: Any, detail: str) -> None:
        causes.append((field, "FieldValueInvalid", f"Invalid value: {_value(value)}: {detail}"))

    def required(field: str, detail: str = "") -> None:
        causes.append(
            (field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))
        )

    name = obj["metadata"].get("name", "")
    spec = obj.get("spec") or {}
    group = spec.get("group")
    names = spec.get("names") or {}
    plural = names.get("plural")
    if not group:
        required("spec.group")
    elif not isinstance(group, str) or not _DNS_SUBDOMAIN.match(group):
        invalid(
            "spec.group",
            group,
            "a lowercase RFC 1123 subdomain must consist of lower case "
            "alphanumeric characters, '-' or '.'",
        )
    elif "." not in group:
        invalid("spec.group", group, "should be a domain with at least one dot")
    elif _protected(group) and not (obj["metadata"].get("annotations") or {}).get(APPROVAL):
        causes.append(
            (
                f"metadata.annotations[{APPROVAL}]",
                "FieldValueRequired",
                f'Required value: protected groups must have approval annotation "{APPROVAL}", '
                "see https://github.com/kubernetes/enhancements/pull/1111",
            )
        )
    if not plural:
        required("spec.names.plural")
    elif not isinstance(plural, str) or not _DNS1035.match(plural):
        invalid("spec.names.plural", plural, _DNS1035_DETAIL)
    if name != f"{plural}.{group}":
        invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group')
    singular = names.get("singular")
    if singular is not None and (not isinstance(singular, str) or not _DNS1035.match(singular)):
        invalid("spec.names.singular", singular, _DNS1035_DETAIL)
    kind = names.get("kind")
    if not kind:
        required("spec.names.kind")
    elif kind == names.get("listKind"):
        invalid("spec.names.listKind", names.get("listKind"), "kind and listKind must be different")
    for i, short in enumerate(names.get("shortNames") or []):
        if not isinstance(short, str) or not _DNS1035.match(short):
            invalid(f"spec.names.shortNames[{i}]", short, _DNS1035_DETAIL)
    scope = spec.get("scope")
    if not scope:
        required("spec.scope")
    elif scope not in ("Cluster", "Namespaced"):
        causes.append(
            (
                "spec.scope",
                "FieldValueNotSupported",
                f'Unsupported value: {_value(scope)}: supported values: "Cluster", "Namespaced"',
            )
        )
    causes.extend(_version_causes(spec.get("versions")))
    strategy = (spec.get("conversion") or {}).get("strategy")
    if strategy not in ("None", "Webhook"):
        causes.append(
            (
                "spec.conversion.strategy",
                "FieldValueNotSupported",
                f'Unsupported value: {_value(strategy)}: supported values: "None", "Webhook"',
            )
        )
    if old is not None:
        old_spec = old.get("spec") or {}
        for key in ("group", "scope"):
            if spec.get(key) != old_spec.get(key):
                invalid(f"spec.{key}", spec.get(key), "field is immutable")
        declared = {v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict)}
        stored = (obj.get("status") or {}).get("storedVersions") or []
        for i, version in enumerate(stored):
            if version not in declared:
                invalid(f"status.storedVersions[{i}]", version, "must appear in spec.versions")
    return causes


def _protected(group: str) -> bool:
    """The Kubernetes-owned groups, where a CRD needs API review approval."""
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def _version_causes(versions: Any) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(versions, list) or not versions:
        return [("spec.versions", "FieldValueRequired", "Required value")]
    seen: set[str] = set()
    storage = 0
    for i, version in enumerate(versions):
        at = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append((at, "FieldValueInvalid", "Invalid value: must be an object"))
            continue
        vname = version.get("name")
        if not vname:
            causes.append((f"{at}.name", "FieldValueRequired", "Required value"))
        elif not isinstance(vname, str) or not _DNS1035.match(vname):
            causes.append(
                (
                    f"{at}.name",
                    "FieldValueInvalid",
                    f"Invalid value: {_value(vname)}: " + _DNS1035_DETAIL,
                )
            )
        elif vname in seen:
            causes.append((f"{at}.name", "FieldValueDuplicate", f'Duplicate value: "{vname}"'))
        else:
            seen.add(vname)
        if version.get("storage") is True:
            storage += 1
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        schema_at = f"{at}.schema.openAPIV3Schema"
        if not isinstance(schema, dict):
            causes.append((schema_at, "FieldValueRequired", "Required value: schemas are required"))
        elif schema.get("type") == "object":
            causes.extend(_structural_causes(schema, schema_at, what="", root=True))
        else:
            causes.append(
                (
                    f"{schema_at}.type",
                    "FieldValueRequired" if not schema.get("type") else "FieldValueInvalid",
                    "Required value: must be object at the root"
                    if not schema.get("type")
                    else f"Invalid value: {_value(schema.get('type'))}: must be object at the root",
                )
            )
        scale = (version.get("subresources") or {}).get("scale")
        if scale is not None:
            causes.extend(_scale_causes(f"{at}.subresources.scale", scale))
    if storage != 1:
        causes.append(
            (
                "spec.versions",
                "FieldValueInvalid",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    return causes


def _structural_causes(schema: Any, at: str, *, what: str, root: bool = False) -> list[Cause]:
    """The essentials of a structural schema (pruning needs one): every specified field has a
    type unless it is int-or-string or preserves unknown fields, int-or-string has none, and
    ``properties`` and ``additionalProperties`` exclude each other."""
    if not isinstance(schema, dict):
        return [(at, "FieldValueInvalid", "Invalid value: must be an object")]
    causes: list[Cause] = []
    int_or_string = schema.get("x-kubernetes-int-or-string") is True
    if int_or_string and schema.get("type"):
        causes.append(
            (
                f"{at}.type",
                "FieldValueForbidden",
                "Forbidden: must be empty if x-kubernetes-int-or-string is true",
            )
        )
    elif (
        not root
        and not schema.get("type")
        and not int_or_string
        and schema.get("x-kubernetes-preserve-unknown-fields") is not True
    ):
        causes.append(
            (f"{at}.type", "FieldValueRequired", f"Required value: must not be empty {what}")
        )
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    if properties and isinstance(additional, dict):
        causes.append(
            (
                f"{at}.additionalProperties",
                "FieldValueForbidden",
                "Forbidden: additionalProperties and properties are mutual exclusive",
            )
        )
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if root and name == "metadata":
                continue  # the server owns metadata's schema
            causes.extend(
                _structural_causes(
                    sub, f"{at}.properties[{name}]", what="for specified object fields"
                )
            )
    if isinstance(schema.get("items"), dict):
        causes.extend(
            _structural_causes(schema["items"], f"{at}.items", what="for specified array items")
        )
    if isinstance(additional, dict):
        causes.extend(
            _structural_causes(
                additional, f"{at}.additionalProperties", what="for specified map values"
            )
        )
    return causes


def _scale_causes(at: str, scale: Any) -> list[Cause]:
    if not isinstance(scale, dict):
        return [(at, "FieldValueInvalid", "Invalid value: must be an object")]
    causes: list[Cause] = []
    for key, roots, required in (
        ("specReplicasPath", (".spec.",), True),
        ("statusReplicasPath", (".status.",), True),
        ("labelSelectorPath", (".spec.", ".status."), False),
    ):
        path = scale.get(key)
        if path is None:
            if required:
                causes.append((f"{at}.{key}", "FieldValueRequired", "Required value"))
            continue
        if not isinstance(path, str) or not path.startswith(roots) or _json_path(path) is None:
            under = " or ".join(r.rstrip(".") for r in roots)
            causes.append(
                (
                    f"{at}.{key}",
                    "FieldValueInvalid",
                    f"Invalid value: {_value(path)}: should be a json path under {under}",
                )
            )
    return causes


def _json_path(path: str) -> tuple[str, ...] | None:
    """``.spec.replicas`` -> ("spec", "replicas"); None when not a simple field path."""
    parts = tuple(path.split(".")[1:])
    if len(parts) < 2 or any(not p or "[" in p for p in parts):
        return None
    return parts


def validation_error(name: str, causes: list[Cause]) -> ApiError:
    return errors.invalid_causes(kind=CRD_KIND, group=CRD_GROUP, name=name, causes=causes)


@dataclass(frozen=True)
class TakenNames:
    """The accepted names of the other CRDs of a group: resource names (plurals, singulars,
    short names) and kinds (kinds, list kinds) each share one namespace."""

    resources: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()

    @classmethod
    def of(cls, others: list[JSONDict]) -> TakenNames:
        resources: set[str] = set()
        kinds: set[str] = set()
        for crd in others:
            accepted = (crd.get("status") or {}).get("acceptedNames") or {}
            resources.update(n for n in (accepted.get("plural"), accepted.get("singular")) if n)
            resources.update(accepted.get("shortNames") or ())
            kinds.update(n for n in (accepted.get("kind"), accepted.get("listKind")) if n)
        return cls(frozenset(resources), frozenset(kinds))


def calculate_accepted_names(
    requested: JSONDict, accepted: JSONDict, taken: TakenNames
) -> tuple[JSONDict, tuple[str, str] | None]:
    """The names the naming controller accepts, and the last conflict (reason, message), as
    apiextensions-apiserver's NamingConditionController: a requested name is accepted when it
    is already ours or no other CRD of the group uses it; a refused one keeps its old value."""
    out: JSONDict = {}
    conflict: tuple[str, str] | None = None

    def fresh(name: Any, mine: Any, used: frozenset[str]) -> bool:
        return name == mine or name not in used

    for key, reason, used in (
        ("plural", "PluralConflict", taken.resources),
        ("singular", "SingularConflict", taken.resources),
        ("kind", "KindConflict", taken.kinds),
        ("listKind", "ListKindConflict", taken.kinds),
    ):
        want = requested.get(key)
        if fresh(want, accepted.get(key), used):
            if want:
                out[key] = want
        else:
            conflict = (reason, f'"{want}" is already in use')
            if accepted.get(key):
                out[key] = accepted[key]
    mine = set(accepted.get("shortNames") or ())
    clashes = [
        n for n in requested.get("shortNames") or () if n not in mine and n in taken.resources
    ]
    if clashes:
        conflict = ("ShortNamesConflict", ", ".join(f'"{n}" is already in use' for n in clashes))
        if accepted.get("shortNames"):
            out["shortNames"] = accepted["shortNames"]
    elif requested.get("shortNames"):
        out["shortNames"] = list(requested["shortNames"])
    if requested.get("categories"):
        out["categories"] = list(requested["categories"])
    # plural and kind are not omitempty in the Go type: "" until accepted.
    return {"plural": "", "kind": "", **out}, conflict


def calculate_status(
    obj: JSONDict, previous: JSONDict | None, *, now: str, taken: TakenNames | None = None
) -> JSONDict:
    """The status the CRD controllers converge to: names accepted unless another CRD of the
    group holds them, established once accepted, the storage version recorded in
    ``storedVersions`` (never removed here: only a client removes one)."""
    spec = obj.get("spec") or {}
    previous = previous or {}
    names, conflict = calculate_accepted_names(
        spec.get("names") or {}, previous.get("acceptedNames") or {}, taken or TakenNames()
    )
    old_conditions = {c.get("type"): c for c in previous.get("conditions") or []}

    def condition(ctype: str, status: str, reason: str, message: str) -> JSONDict:
        old = old_conditions.get(ctype)
        since = old.get("lastTransitionTime") if old and old.get("status") == status else None
        return {
            "type": ctype,
            "status": status,
            "lastTransitionTime": since or now,
            "reason": reason,
            "message": message,
        }

    established = old_conditions.get("Established")
    if conflict is None:
        conditions = [
            condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
        ]
    else:
        conditions = [
            condition("NamesAccepted", "False", *conflict),
            established
            if established is not None and established.get("status") == "True"
            else condition("Established", "False", "NotAccepted", "not all names are accepted"),
        ]
    terminating = old_conditions.get("Terminating")
    if obj["metadata"].get("deletionTimestamp"):
        conditions.append(
            condition(
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
            )
        )
    elif terminating is not None:
        conditions.append(terminating)
    stored = list(
        (obj.get("status") or {}).get("storedVersions") or previous.get("storedVersions") or []
    )
    for version in spec.get("versions") or []:
        if isinstance(version, dict) and version.get("storage") and version["name"] not in stored:
            stored.append(version["name"])
    return {"conditions": conditions, "acceptedNames": names, "storedVersions": stored}


def names_accepted(crd: JSONDict) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "NamesAccepted" and c.get("status") == "True" for c in conditions)


def is_established(crd: JSONDict) -> bool:
    """Served: the Established condition is True (its names were accepted once)."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def calculate_resource_types(crd: JSONDict) -> list[ResourceType]:
    """One type per served version; the storage version is the one holding the objects (it
    is registered even when not served, so the objects keep a home)."""
    spec = crd["spec"]
    # Served under the accepted names (the requested ones until another CRD holds one).
    names = (crd.get("status") or {}).get("acceptedNames") or spec["names"]
    group = spec["group"]
    out: list[ResourceType] = []
    for version in spec["versions"]:
        storage = bool(version.get("storage"))
        if not version.get("served") and not storage:
            continue
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale")
        scale_spec = None
        if isinstance(scale, dict):
            spec_path = _json_path(scale.get("specReplicasPath", ""))
            status_path = _json_path(scale.get("statusReplicasPath", ""))
            selector = scale.get("labelSelectorPath")
            if spec_path is not None and status_path is not None:
                scale_spec = ScaleSpec(
                    spec_replicas=spec_path,
                    status_replicas=status_path,
                    label_selector=_json_path(selector) if selector else None,
                )
        out.append(
            ResourceType(
                group=group,
                version=version["name"],
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                kind=names["kind"],
                namespaced=spec["scope"] == "Namespaced",
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status_subresource=isinstance(subresources.get("status"), dict),
                scale=scale_spec,
                has_generation=True,
                custom=True,
                delete_returns_object=True,
                storage=storage,
                served=bool(version.get("served")),
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=tuple(
                    c for c in version.get("additionalPrinterColumns") or () if isinstance(c, dict)
                ),
            )
        )
    return out

"""The base model and shared field types of the argoproj.io/v1alpha1 resources.

The controller reads objects written by Argo Rollouts' own tools (kubectl plugin, Argo CD
resume actions, the dashboard) and by newer or older API versions than the one modelled here.
Every model therefore keeps the fields it does not know about (`extra="allow"`) and writes back
only what was read or explicitly set (`exclude_unset`), so a read-modify-write never drops or
invents a field. The JSON names are Argo's: camelCase from the Python name, with explicit
aliases where Go's name is not plain camelCase (`HPAReplicas`, `stableRS`).

The idiom, wrapped by `to_dict`/`from_dict` and `to_json`/`from_json`::

    rollout = Rollout.model_validate(obj)
    obj2 = rollout.model_dump(by_alias=True, exclude_unset=True, mode="json")
    assert obj2 == obj
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

#: A Kubernetes `intstr.IntOrString`: 5 or "25%", kept as given.
IntOrString = Annotated[
    int | str,
    WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "string"}]}),
]
#: A Go `int32`; the format tells `kubectl explain` and OpenAPI clients its width.
Int32 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int32"})]
#: A Go `int64`.
Int64 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int64"})]
#: A `metav1.Time`, kept as the RFC 3339 string the API server sent so that a round trip is
#: byte-for-byte; parse it where arithmetic is needed.
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
#: A Go duration string such as "30s", "5m" or "1h".
DurationString = str
#: Free-form JSON objects this project passes through without modelling (pod templates, job
#: specs, provider settings); the CRD keeps their contents as they are.
FreeForm = dict[str, Any]

#: Marks a model whose object, in the generated CRD, keeps fields the schema does not list.
PRESERVE_UNKNOWN = "x-kubernetes-preserve-unknown-fields"


class KubeModel(BaseModel):
    """Base of every API model: camelCase JSON names, unknown fields kept, sparse output."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        use_attribute_docstrings=True,
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Validate a decoded JSON object (as the Kubernetes client returns it)."""
        return cls.model_validate(data)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object with Argo's names, holding only the fields that were read or set."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Validate a JSON document."""
        return cls.model_validate_json(text)

    def to_json(self) -> str:
        """The JSON document of `to_dict`."""
        return self.model_dump_json(by_alias=True, exclude_unset=True)


class OpenModel(KubeModel):
    """A model only partly described: in the CRD its object keeps fields the schema omits.

    Used where Argo accepts configuration this project passes through without modelling all of
    it (traffic routers, metric providers), so that the API server does not prune it.
    """

    model_config = ConfigDict(json_schema_extra={PRESERVE_UNKNOWN: True})


class ObjectMeta(KubeModel):
    """The parts of `metav1.ObjectMeta` the controller reads; the rest is kept as extra fields."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[FreeForm] | None = None
    finalizers: list[str] | None = None


class LabelSelectorRequirement(KubeModel):
    """One `matchExpressions` entry of a label selector."""

    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KubeModel):
    """A `metav1.LabelSelector`."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class ConditionStatus(StrEnum):
    """The status of a condition, as in `corev1.ConditionStatus`."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class Resource(KubeModel):
    """The envelope every top-level resource shares: type meta and object meta."""

    api_version: str = "argoproj.io/v1alpha1"
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

"""Rollout validation: Argo Rollouts' checks and messages, as pure functions.

A Rollout whose spec is invalid gets an `InvalidSpec` condition whose message is exactly what
Argo Rollouts writes (users and dashboards grep for those texts), and is not reconciled further
until the spec changes. This package decides *whether* a spec is invalid and *what the message
says*; setting the condition and choosing a slow requeue is the caller's business.

Ported from argo-rollouts (newest copy read: `pkg/apis/rollouts/validation/`), along Argo's own
seams:

- `spec`: `ValidateRollout` and the checks under it (`validation.go`), which need only the
  rollout;
- `references`: `validation_references.go` and the controller's look-ups, which need the objects
  the rollout refers to (`ReferencedResources`);
- `messages`: Argo's message texts, apimachinery's `field.Error` (`ValidationError`) and the Go
  renderings of the values errors quote.

This module holds the one entry point of the controller and the linter, `validate` (the first
error: the spec's, then the references') and `validate_raw` (the same for a decoded object, which
may not even fit the model).

Traffic routers this controller does not implement (ALB), and traffic router plugins the
settings do not enable, are refused by the controller
(`trafficrouting.plugins.unsupported_router`), not here: such a spec is valid Argo.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic

from rollout_workers.api.rollout import Rollout
from rollout_workers.rollout.validation.messages import ValidationError, model_error
from rollout_workers.rollout.validation.references import ReferencedResources, reference_errors
from rollout_workers.rollout.validation.spec import spec_errors


def validate(
    rollout: Rollout, references: ReferencedResources | None = None
) -> ValidationError | None:
    """The first reason the rollout is invalid, or None: the spec checks, then (when
    `references` is given) the referenced objects."""
    for error in spec_errors(rollout):
        return error
    if references is not None:
        for error in reference_errors(rollout, references):
            return error
    return None


def validate_raw(
    obj: Mapping[str, Any],
    references: ReferencedResources | None = None,
    *,
    parsed: Rollout | None = None,
) -> ValidationError | None:
    """Like `validate`, for a decoded object that may not even fit the model (`parsed`: the
    caller's model of `obj`, which spares parsing it again).

    A spec the model rejects (a string where an integer belongs, a required field missing) is
    reported on the first offending field, in the same `field.Error` form.
    """
    if parsed is None:
        try:
            parsed = Rollout.from_dict(dict(obj))
        except pydantic.ValidationError as exc:
            return model_error(exc)
    return validate(parsed, references)

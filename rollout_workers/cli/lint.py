"""`rollouts lint`: validate the Rollouts of a manifest file offline, as the plugin's `lint`.

Every YAML (or JSON) document of the file whose apiVersion group is `argoproj.io` and kind is
`Rollout` is checked with the controller's own validation (`rollout.validation`), so a manifest
that passes here is not marked InvalidSpec by this controller for its spec. As the plugin, each
error's body (without the field path) goes to stdout, then the first error, with its field,
is the one-line failure (exit 1); a clean file prints nothing (exit 0). A field the models do
not know (a typo) is an error too, as the plugin decodes strictly. References to objects in
the cluster (services, analysis templates) are not checked: lint never connects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pydantic
import yaml

from rollout_workers.analysis.fieldpath import go_quote
from rollout_workers.api.base import KubeModel, ObjectMeta, OpenModel
from rollout_workers.api.rollout import Rollout
from rollout_workers.cli.common import Fail
from rollout_workers.rollout.validation import validate_raw
from rollout_workers.rollout.validation.messages import ErrorType, ValidationError
from rollout_workers.rollout.validation.spec import spec_errors

GROUP = "argoproj.io"
KIND = "Rollout"


class ManifestError(ValueError):
    """The file cannot be read as YAML/JSON documents."""


@dataclass(frozen=True)
class LintError:
    rollout: str
    error: ValidationError

    @property
    def body(self) -> str:
        """apimachinery's `ErrorBody`: the error without its field path."""
        return str(self.error)[len(self.error.field) + 2 :]


def load_documents(text: str) -> list[Any]:
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as err:
        raise ManifestError(" ".join(str(err).split())) from None


def is_rollout(doc: Any) -> bool:
    if not isinstance(doc, dict):
        return False
    group = str(doc.get("apiVersion") or "").partition("/")[0]
    return group == GROUP and doc.get("kind") == KIND


UNKNOWN_FIELD_MESSAGE = "unknown field"


def unknown_fields(value: Any, path: str = "") -> list[str]:
    """The paths of the fields no model knows (the plugin decodes strictly, so a typo such as
    `stratgy` fails the lint); open models (traffic routers, metric providers), object
    metadata and free-form parts (the pod template) accept anything."""
    found: list[str] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            found += unknown_fields(item, f"{path}[{i}]")
    elif isinstance(value, KubeModel) and not isinstance(value, OpenModel | ObjectMeta):
        prefix = f"{path}." if path else ""
        found += [f"{prefix}{key}" for key in value.model_extra or {}]
        for name, info in type(value).model_fields.items():
            found += unknown_fields(getattr(value, name), f"{prefix}{info.alias or name}")
    return found


def calculate_lint_errors(documents: list[Any]) -> list[LintError]:
    """Every validation error of every Rollout among `documents`, in file order; a Rollout
    that does not fit the model reports its first offending field."""
    errors: list[LintError] = []
    for doc in documents:
        if not is_rollout(doc):
            continue
        name = str((doc.get("metadata") or {}).get("name") or "")
        try:
            rollout = Rollout.from_dict(doc)
        except pydantic.ValidationError:
            first = validate_raw(doc)
            if first is not None:
                errors.append(LintError(name, first))
            continue
        unknown = [
            ValidationError(
                path,
                UNKNOWN_FIELD_MESSAGE,
                ErrorType.INVALID,
                go_quote(path.rpartition(".")[2]),
            )
            for path in unknown_fields(rollout)
        ]
        found = spec_errors(rollout)
        errors += [LintError(name, error) for error in unknown + found]
    return errors


@click.command()
@click.option(
    "-f",
    "--filename",
    "filename",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File to lint (or give it as the argument).",
)
@click.argument("file", required=False, type=click.Path(path_type=Path, dir_okay=False))
def lint(filename: Path | None, file: Path | None) -> None:
    """Lint and validate the Rollouts of a manifest file (YAML or JSON, several documents)."""
    path = filename or file
    if path is None or (filename is not None and file is not None):
        raise click.UsageError("give one file: rollouts lint FILE (or -f FILE)")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise Fail(f"cannot read {path}: {reason}") from None
    try:
        errors = calculate_lint_errors(load_documents(text))
    except ManifestError as err:
        raise Fail(f"{path}: {err}") from None
    for found in errors:
        click.echo(found.body)
    if errors:
        raise Fail(str(errors[0].error))

"""Reading several keys of one Secret, as the datadog, newRelic and influxdb providers do
(Argo reads the whole Secret and looks keys up in its data: an absent key is empty, an absent
Secret an error)."""

from __future__ import annotations

from collections.abc import Iterable

from rollout_workers.analysis.providers.base import SecretKeyMissing, SecretReader


def read_keys(
    reader: SecretReader, *, namespace: str, name: str, keys: Iterable[str]
) -> dict[str, str]:
    """The keys of Secret `namespace/name` that it holds; raises the reader's errors for a
    Secret that cannot be read (NotFound...) or a value that cannot be decoded."""
    found: dict[str, str] = {}
    for key in keys:
        try:
            found[key] = reader.read(namespace, name, key)
        except SecretKeyMissing:
            continue
    return found

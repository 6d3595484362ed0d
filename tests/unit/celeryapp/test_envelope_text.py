"""The text helpers of `sender.Envelopes`: the same JSON as json.dumps, UUIDs as uuid4's."""

from __future__ import annotations

import json
import uuid

import pytest

from rollout_workers.celeryapp.sender import _quote, _uuid4


@pytest.mark.parametrize(
    "text",
    ["ns/name-1.a", "('ns/name',)", 'a"b', "a\\b", "é", "x\x01y", "\x7f", "", "日本"],
)
def test_quote_is_json_dumps(text: str) -> None:
    assert _quote(text) == json.dumps(text)


def test_uuid4_is_a_random_version_4_uuid() -> None:
    seen = set()
    for _ in range(2000):
        text = _uuid4()
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        seen.add(text)
    assert len(seen) == 2000

"""Key validation: a table of named cases."""

from __future__ import annotations

import pytest

from rollout_workers.keys import InvalidKey, parse_key, split_key

VALID = {
    "simple": "default/guestbook",
    "dotted name": "prod/api.v2",
    "digits": "ns-1/0abc",
    "63-char namespace": "a" * 63 + "/x",
    "253-char name": "ns/" + ".".join(["a" * 63] * 4)[:253].rstrip("."),
}

INVALID = {
    "no slash": ("guestbook", "expected 'namespace/name'"),
    "empty name": ("default/", "expected 'namespace/name'"),
    "empty namespace": ("/guestbook", "expected 'namespace/name'"),
    "two slashes": ("a/b/c", "must be a DNS-1123 label"),
    "uppercase": ("Default/x", "namespace 'Default'"),
    "leading dash": ("-ns/x", "namespace '-ns'"),
    "trailing dash in name": ("ns/x-", "name 'x-'"),
    "underscore": ("ns/a_b", "name 'a_b'"),
    "64-char label": ("ns/" + "a" * 64, "at most 63"),
    "too long": ("ns/" + ".".join(["a" * 60] * 5), "longer than 253"),
    "not a string": (42, "expected a 'namespace/name' string"),
    "none": (None, "expected a 'namespace/name' string"),
    "empty label": ("ns/a..b", "name ''"),
}


@pytest.mark.parametrize("raw", VALID.values(), ids=VALID.keys())
def test_valid_keys(raw: str) -> None:
    assert parse_key(raw) == raw
    namespace, name = split_key(parse_key(raw))
    assert f"{namespace}/{name}" == raw


@pytest.mark.parametrize(("raw", "message"), INVALID.values(), ids=INVALID.keys())
def test_invalid_keys(raw: object, message: str) -> None:
    with pytest.raises(InvalidKey) as err:
        parse_key(raw)
    assert message in str(err.value)

"""objects.decode/encode: orjson where it can, the standard library where it cannot, with the
same meaning either way."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from rollout_workers.objects import decode, encode


def test_decode_matches_the_standard_library_including_what_orjson_refuses() -> None:
    for text in (
        b'{"a":[1,2.5,"x\\u00e9",null,true],"b":{"c":{}}}',
        b'{"lone":"\\ud800"}',  # a lone surrogate: likewise
        b"[]",
    ):
        assert decode(text) == json.loads(text)
    # Past 64 bits, a float: as Go's unstructured JSON (the API server) holds it.
    assert decode(b"[18446744073709551615,18446744073709551616]") == [2**64 - 1, 2.0**64]
    with pytest.raises(ValueError):
        decode(b'{"a":')
    with pytest.raises(ValueError):
        decode(b"")


@dataclasses.dataclass
class Point:
    x: int


def test_encode_is_compact_utf8_and_sends_other_types_to_default() -> None:
    assert encode({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    assert encode({1: "x"}) == b'{"1":"x"}'
    assert encode({"n": 2**70}) == b'{"n":1180591620717411303424}'
    when = dt.datetime(2026, 11, 26, 18, 0, tzinfo=dt.UTC)

    def default(value: object) -> object:
        if isinstance(value, dt.datetime):
            return "at " + value.isoformat()
        if isinstance(value, Point):
            return {"point": value.x}
        raise TypeError(value)

    assert decode(encode({"t": when, "p": Point(3)}, default=default)) == {
        "t": "at 2026-11-26T18:00:00+00:00",
        "p": {"point": 3},
    }
    with pytest.raises(TypeError):
        encode({"t": when})
    with pytest.raises(TypeError):
        encode({"s": {1, 2}})

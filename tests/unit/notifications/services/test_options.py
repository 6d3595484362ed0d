"""Reading a service's options: Go's decoding, final configuration errors."""

from __future__ import annotations

from typing import Any

import pytest

from rollout_workers.notifications.services import SendError
from rollout_workers.notifications.services.options import Options


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, ""), ("s", "s"), (587, "587"), (True, "true"), (1.5, "1.5")],
    ids=["absent", "string", "integer", "bool", "float"],
)
def test_text_takes_a_scalar_as_its_string(value: Any, text: str) -> None:
    assert Options("svc", {"o": value}).text("o") == text
    assert Options("svc", {"m": {"k": value}}).text_map("m") == {"k": text}


@pytest.mark.parametrize(
    ("options", "read", "problem"),
    [
        ({"o": [1]}, lambda o: o.text("o"), "svc: option 'o' must be a string, not list"),
        ({"m": "x"}, lambda o: o.text_map("m"), "svc: option 'm' must be a map of strings"),
        ({"m": {"k": {}}}, lambda o: o.text_map("m"), "svc: option 'm.k' must be a string"),
        ({"f": "yes"}, lambda o: o.flag("f"), "svc: option 'f' must be true or false"),
        ({"basicAuth": "u"}, lambda o: o.basic_auth(), "svc: option 'basicAuth' must be a map"),
        ({"m": {}}, lambda o: o.for_recipient("m", "r", what="API key"), "no API key configured"),
    ],
    ids=["text", "map", "map entry", "flag", "basic auth", "no entry for the recipient"],
)
def test_problems_are_final(options: dict[str, Any], read: Any, problem: str) -> None:
    with pytest.raises(SendError) as e:
        read(Options("svc", options))
    assert e.value.final is True
    assert problem in str(e.value)


def test_flags_basic_auth_and_base_urls() -> None:
    opts = Options("svc", {"f": "false", "t": True, "basicAuth": {"username": "u"}, "u": "h/"})
    assert (opts.flag("f"), opts.flag("t"), opts.flag("absent")) == (False, True, False)
    assert opts.basic_auth() == ("u", "")
    assert Options("svc", {}).basic_auth() is None
    assert (opts.base_url("u", "d"), opts.base_url("absent", "d")) == ("h", "d")

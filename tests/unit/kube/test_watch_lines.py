"""A watch line's object text is kept exactly as the server sent it, and only when its shape
leaves no doubt where the object is."""

import json

from rollout_workers.kube.client import WatchEvent, parse_watch_line

OBJ = b'{"metadata":{"name":"a","resourceVersion":"7"},"spec":{"x":"\\u00e9 }"}}'


def test_the_object_text_is_the_servers_bytes() -> None:
    event = parse_watch_line(b'{"type":"MODIFIED","object":' + OBJ + b"}\r\n")
    assert isinstance(event, WatchEvent)
    assert event["type"] == "MODIFIED"
    assert event.object_text == OBJ
    assert json.loads(event.object_text) == event["object"]


def test_each_change_type_keeps_its_text() -> None:
    for kind in ("ADDED", "MODIFIED", "DELETED"):
        line = b'{"type":"' + kind.encode() + b'","object":' + OBJ + b"}"
        assert parse_watch_line(line).object_text == OBJ


def test_other_shapes_parse_without_text() -> None:
    lines = [
        b'{"object":' + OBJ + b',"type":"ADDED"}',  # object first
        b'{"type":"ADDED","object":' + OBJ + b',"extra":{}}',  # a third key
        b'{"type": "ADDED", "object": ' + OBJ + b"}",  # spaced
        b'{"type":"BOOKMARK","object":' + OBJ + b"}",  # not a change
        b'{"type":"ADDED","object":[1]}',  # not an object
    ]
    for line in lines:
        event = parse_watch_line(line)
        assert event == json.loads(line)
        assert event.object_text is None


def test_a_line_that_is_not_an_object_is_returned_parsed() -> None:
    assert parse_watch_line(b"[1, 2]") == [1, 2]

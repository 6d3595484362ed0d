"""The reflector's batching of a watch stream (watcher.reflector.Batches): events that arrive
within the window go out together, an error comes after the events before it, and closing
ends a reader blocked on a quiet stream."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from rollout_workers.watcher.reflector import Batches


def paced(items: list[Any], gaps: dict[int, float]) -> Iterator[Any]:
    """`items`, waiting `gaps[i]` seconds before item i; an exception item is raised."""
    for i, item in enumerate(items):
        time.sleep(gaps.get(i, 0.0))
        if isinstance(item, Exception):
            raise item
        yield item


def test_events_that_keep_coming_go_together_and_a_pause_starts_another_batch() -> None:
    """A batch gathers for up to its window while events come within a quarter of it."""
    batches = Batches(0.4, 100)
    batches.start(paced(list(range(8)), {1: 0.03, 2: 0.03, 3: 0.03, 5: 0.25}), "test")
    assert list(batches) == [[0, 1, 2, 3, 4], [5, 6, 7]]
    batches.close()


def test_a_batch_closes_at_its_window_while_events_keep_coming() -> None:
    batches = Batches(0.2, 100)
    batches.start(paced(list(range(12)), dict.fromkeys(range(1, 12), 0.03)), "test")
    got = list(batches)
    assert [e for batch in got for e in batch] == list(range(12)) and 2 <= len(got) <= 4, got
    batches.close()


def test_a_batch_holds_at_most_its_size() -> None:
    batches = Batches(0.2, 4)
    batches.start(paced(list(range(10)), {}), "test")
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    batches.close()


def test_no_window_hands_on_what_has_arrived() -> None:
    batches = Batches(0.0, 100)
    batches.start(paced(list(range(3)), {1: 0.2, 2: 0.2}), "test")
    assert list(batches) == [[0], [1], [2]]
    batches.close()


def test_an_error_comes_after_the_events_before_it() -> None:
    batches = Batches(0.05, 100)
    batches.start(paced([1, 2, ValueError("stream broke")], {2: 0.2}), "test")
    got = []
    with pytest.raises(ValueError, match="stream broke"):
        for batch in batches:
            got.append(batch)
    assert got == [[1, 2]]
    batches.close()


class Response:
    """A watch response whose stream blocks until it is shut down."""

    def __init__(self) -> None:
        self.ended = threading.Event()

    def shutdown(self) -> None:
        self.ended.set()

    def stream(self, batches: Batches) -> Iterator[Any]:
        batches.opened(self)  # type: ignore[arg-type]
        yield "first"
        self.ended.wait()
        raise OSError("shut down")


def test_closing_ends_a_reader_blocked_on_a_quiet_stream() -> None:
    response = Response()
    batches = Batches(0.0, 100)
    batches.start(response.stream(batches), "test")
    assert next(iter(batches)) == ["first"]
    batches.close()
    assert response.ended.is_set()
    assert batches._thread is not None and not batches._thread.is_alive()


def test_closed_before_the_stream_opens_shuts_it_down_as_it_opens() -> None:
    response = Response()
    batches = Batches(0.0, 100)
    batches.close()
    batches.opened(response)  # type: ignore[arg-type]
    assert response.ended.is_set()

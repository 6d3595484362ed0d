"""Per type: the current objects and the bounded history of their changes.

Separate from the store's write semantics because this is the watch cache's part: which objects
exist (in pagination order), the last ``history_size`` events from which a watch resumes and a
later LIST page is rebuilt as of its first page's resourceVersion, the compaction marks behind
410 Expired, and the open watches. The continue token of a paginated LIST is encoded here too.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from devcluster import errors
from devcluster.resources import ResourceType
from devcluster.stored import Stored, dumps
from devcluster.watches import Event, Watch

# Watch events kept per type. A real kube-apiserver's watch cache holds a few hundred to a few
# thousand events per type (its default capacity is 100, grown with load up to ~3,000), so a
# watch from a resourceVersion some thousand writes old gets 410 Gone there. 1,000 keeps the
# controller honest: a much longer history hides relist bugs that a real cluster shows.
DEFAULT_HISTORY_SIZE = 1_000


@dataclass(slots=True)
class ListResult:
    items: list[Stored]
    resource_version: int
    continue_token: str | None
    remaining: int | None


class TypeState:
    """Objects of one type, their sort order for pagination, history and watches."""

    def __init__(self, rt: ResourceType, start_rv: int) -> None:
        self.rt = rt
        self.by_ns: dict[str, dict[str, Stored]] = {}
        self.count = 0
        self._sorted_all: list[tuple[str, str]] | None = None
        self._sorted_ns: dict[str, list[str]] = {}
        self.history: deque[Event] = deque()
        self.compacted_rv = start_rv
        self.forced_rv = start_rv
        self.watches: set[Watch] = set()

    def get(self, namespace: str, name: str) -> Stored | None:
        bucket = self.by_ns.get(namespace)
        return None if bucket is None else bucket.get(name)

    def put(self, namespace: str, name: str, stored: Stored) -> None:
        bucket = self.by_ns.setdefault(namespace, {})
        if name not in bucket:
            self.count += 1
            self._sorted_all = None
            self._sorted_ns.pop(namespace, None)
        bucket[name] = stored

    def remove(self, namespace: str, name: str) -> None:
        bucket = self.by_ns.get(namespace)
        if bucket is None or name not in bucket:
            return
        del bucket[name]
        self.count -= 1
        if not bucket:
            del self.by_ns[namespace]
        self._sorted_all = None
        self._sorted_ns.pop(namespace, None)

    def sorted_keys(self, namespace: str | None) -> list[tuple[str, str]]:
        if namespace is None:
            if self._sorted_all is None:
                self._sorted_all = sorted(
                    (ns, name) for ns, bucket in self.by_ns.items() for name in bucket
                )
            return self._sorted_all
        names = self._sorted_ns.get(namespace)
        if names is None:
            names = sorted(self.by_ns.get(namespace, {}))
            self._sorted_ns[namespace] = names
        return [(namespace, n) for n in names]

    def all(self) -> Iterator[Stored]:
        for bucket in self.by_ns.values():
            yield from bucket.values()

    def states_at(self, rv: int, namespace: str | None) -> dict[tuple[str, str], Stored | None]:
        """For each object changed after ``rv``: its state at ``rv`` (None: did not exist)."""
        states: dict[tuple[str, str], Stored | None] = {}
        for event in reversed(self.history):
            if event.rv <= rv:
                break
            if namespace is not None and event.namespace != namespace:
                continue
            # Walking backwards, the last write wins: the earliest event after rv.
            states[(event.namespace, event.name)] = (
                None if event.type == "ADDED" else event.previous
            )
        return states


def encode_continue(rv: int, namespace: str, name: str) -> str:
    payload = dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": [namespace, name]})
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        start = data["start"]
        return int(data["rv"]), (str(start[0]), str(start[1]))
    except (ValueError, KeyError, TypeError, IndexError, binascii.Error):
        raise errors.bad_request(f"continue key is not valid: {token!r}") from None

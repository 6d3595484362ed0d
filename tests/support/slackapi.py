"""A Slack Web API stand-in on 127.0.0.1: ``chat.postMessage`` and ``chat.update`` answered as
Slack answers them, reached through a Slack service's ``apiURL``.

The token is checked as Slack checks it: ``Authorization: Bearer <token>`` or a ``token`` form
field; a wrong or missing one answers ``{"ok": false, "error": "invalid_auth"}`` (HTTP 200, as
Slack does). A post answers ``{"ok": true, "channel": <id>, "ts": <new ts>, "message": {...}}``
with the channel id from ``channel_ids`` (default: the channel as given); an update answers the
same shape with the ts it was given, and wants the channel's id, not a name from
``channel_ids``. ``fail_next`` queues answers to give instead (a 429 with
``Retry-After``, a 500, an ``ok: false``). ``calls`` lists ``(method, form)`` in order.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from tests.support.receiver import Answer, Receiver, Request


class SlackAPI:
    def __init__(self, token: str) -> None:
        self.token = token
        self.channel_ids: dict[str, str] = {}
        self.fail_next: list[Answer] = []
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self.receiver = Receiver(self._answer)

    def __enter__(self) -> SlackAPI:
        self.receiver.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.receiver.stop()

    @property
    def api_url(self) -> str:
        return self.receiver.url("/api/")

    def calls(self) -> list[tuple[str, dict[str, str]]]:
        return [(r.path.removeprefix("/api/"), _form(r)) for r in self.receiver.received()]

    def _answer(self, request: Request) -> Answer:
        with self._lock:
            if self.fail_next:
                return self.fail_next.pop(0)
        form = _form(request)
        auth = request.headers.get("Authorization", "")
        if auth != f"Bearer {self.token}" and form.get("token") != self.token:
            return Answer.json(200, {"ok": False, "error": "invalid_auth"})
        method = request.path.removeprefix("/api/")
        channel = form.get("channel", "")
        if not channel:
            return Answer.json(200, {"ok": False, "error": "channel_not_found"})
        message: dict[str, Any] = {"type": "message", "text": form.get("text", "")}
        if method == "chat.postMessage":
            ts = f"1700000000.{next(self._ts):06d}"
            channel_id = self.channel_ids.get(channel, channel)
        elif method == "chat.update":
            ts = form.get("ts", "")
            if channel in self.channel_ids:  # a name: chat.update wants the channel's id
                return Answer.json(200, {"ok": False, "error": "channel_not_found"})
            channel_id = channel
        else:
            return Answer.json(404, {"ok": False, "error": "unknown_method"})
        message["ts"] = ts
        return Answer.json(200, {"ok": True, "channel": channel_id, "ts": ts, "message": message})


def _form(request: Request) -> dict[str, str]:
    return {k: v[-1] for k, v in request.form().items()}

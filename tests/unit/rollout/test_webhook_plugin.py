"""The webhook step plugin against a local HTTP endpoint: the request it sends, and how each
kind of answer maps to a step phase."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rollout_workers.rollout.stepplugins.protocol import StepContext, StepResult
from rollout_workers.rollout.stepplugins.registry import ENTRY_POINT_GROUP, StepPluginRegistry
from rollout_workers.rollout.stepplugins.webhook import (
    NAME,
    WebhookConfigError,
    WebhookError,
    WebhookStepPlugin,
    parse_answer,
)

Obj = dict[str, Any]
ROLLOUT: Obj = {
    "metadata": {
        "name": "web",
        "namespace": "shop",
        "uid": "u-1",
        "annotations": {"rollout.argoproj.io/revision": "3"},
    },
    "status": {"currentPodHash": "abc123", "currentStepIndex": 2},
}


class Endpoint:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Obj, Any]] = []
        self.answer: tuple[int, str] = (200, "")
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode() if length else ""
                body = json.loads(raw) if raw else None
                endpoint.requests.append((self.command, self.path, dict(self.headers), body))
                code, text = endpoint.answer
                data = text.encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_PUT = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    ep = Endpoint()
    yield ep
    ep.server.shutdown()
    ep.server.server_close()


def step(config: Obj, status: Obj | None = None) -> StepContext:
    return StepContext(index=2, name=NAME, config=config, status=status)


def test_run_posts_the_rollout_config_and_previous_status(endpoint: Endpoint) -> None:
    endpoint.answer = (
        200,
        '{"phase": "Running", "message": "half", "requeueAfter": "15s", "status": {"done": 5}}',
    )
    config = {"url": endpoint.url + "/hook", "headers": {"X-Token": "t"}}
    result = WebhookStepPlugin().run(ROLLOUT, step(config, {"done": 4}))
    assert result == StepResult(
        phase="Running", message="half", requeue_after=15.0, status={"done": 5}
    )
    ((method, path, headers, body),) = endpoint.requests
    assert (method, path, headers["X-Token"], headers["X-Rollouts-Operation"]) == (
        "POST",
        "/hook",
        "t",
        "run",
    )
    assert body == {
        "operation": "run",
        "rollout": {
            "namespace": "shop",
            "name": "web",
            "uid": "u-1",
            "revision": "3",
            "podTemplateHash": "abc123",
            "stepIndex": 2,
        },
        "config": config,
        "status": {"done": 4},
    }


def test_body_template_and_method(endpoint: Endpoint) -> None:
    config = {
        "url": endpoint.url,
        "method": "put",
        "body": {
            "text": "{{namespace}}/{{name}} rev {{ revision }} step {{stepIndex}}",
            "op": "{{operation}}",
        },
    }
    assert WebhookStepPlugin().abort(ROLLOUT, step(config)).phase == "Successful"
    ((method, _, _, body),) = endpoint.requests
    assert method == "PUT"
    assert body == {"text": "shop/web rev 3 step 2", "op": "abort"}


@pytest.mark.parametrize(
    ("code", "text", "phase", "message"),
    [
        (200, "", "Successful", ""),
        (204, "", "Successful", ""),
        (200, "ok", "Successful", ""),
        (200, '{"message": "fine"}', "Successful", "fine"),
        (200, '{"phase": "Failed", "message": "bad canary"}', "Failed", "bad canary"),
        (202, '{"phase": "Running"}', "Running", ""),
        (404, "no such step", "Failed", "HTTP 404: no such step"),
        (422, "", "Failed", "HTTP 422:"),
    ],
)
def test_answers_map_to_phases(code: int, text: str, phase: str, message: str) -> None:
    result = parse_answer(code, text)
    assert (result.phase, result.message) == (phase, message)


@pytest.mark.parametrize(("code", "text"), [(500, "oops"), (503, ""), (200, '{"phase": "Error"}')])
def test_server_errors_are_retryable_errors(code: int, text: str) -> None:
    with pytest.raises(WebhookError):
        parse_answer(code, text)


def test_http_errors_through_the_plugin(endpoint: Endpoint) -> None:
    endpoint.answer = (503, "busy")
    with pytest.raises(WebhookError, match="HTTP 503: busy"):
        WebhookStepPlugin().run(ROLLOUT, step({"url": endpoint.url}))
    endpoint.answer = (400, "bad config")
    result = WebhookStepPlugin().terminate(ROLLOUT, step({"url": endpoint.url}))
    assert (result.phase, result.message) == ("Failed", "HTTP 400: bad config")


def test_connection_refused_is_a_retryable_error(endpoint: Endpoint) -> None:
    url = endpoint.url
    endpoint.server.shutdown()
    endpoint.server.server_close()
    with pytest.raises(WebhookError):
        WebhookStepPlugin().run(ROLLOUT, step({"url": url, "timeout": "2s"}))


def test_config_errors() -> None:
    with pytest.raises(WebhookConfigError):
        WebhookStepPlugin().run(ROLLOUT, step({}))
    with pytest.raises(WebhookConfigError):
        WebhookStepPlugin().run(ROLLOUT, step({"url": "http://x", "method": "TRACE"}))


def test_the_webhook_is_registered_as_an_entry_point() -> None:
    registry = StepPluginRegistry(enabled=frozenset({NAME}))
    assert isinstance(registry.resolve(NAME), WebhookStepPlugin)
    assert ENTRY_POINT_GROUP == "rollout_workers.step_plugins"

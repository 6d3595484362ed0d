"""The `rollout-workers/webhook` step plugin: a canary step carried out by an HTTP endpoint.

Each Run, Terminate and Abort is one HTTP request (POST by default) to the step's `url`, so a
step plugin can be written in any language. The step's config:

    plugin:
      name: rollout-workers/webhook
      config:
        url: https://deployer.example/steps/migrate   # required
        method: POST                                   # default POST
        headers: {Authorization: "Bearer ..."}         # optional
        timeout: 10s                                   # default 10s (at most 60s)
        body: {...}                                    # optional template, see below

The request body, unless `body` is given, is JSON:

    {"operation": "run" | "terminate" | "abort",
     "rollout": {"namespace", "name", "uid", "revision", "podTemplateHash", "stepIndex"},
     "config": <the step's config>, "status": <what the endpoint returned last, or null>}

A `body` template is sent instead, with `{{namespace}}`, `{{name}}`, `{{revision}}`,
`{{stepIndex}}`, `{{operation}}` and `{{podTemplateHash}}` replaced in its strings. The
`X-Rollouts-Operation` header carries the operation either way.

The answer:
- 2xx with a JSON object `{"phase": "Running" | "Successful" | "Failed", "message": "...",
  "requeueAfter": "10s", "status": {...}}`: that phase (missing: Successful), message, requeue
  and state (given back as `status` next time);
- any other 2xx: Successful;
- 4xx: Failed (the step fails and the rollout aborts), with the response's text as message;
- 5xx, a timeout or a connection error: Error, retried after a backoff.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from rollout_workers.objects import Obj
from rollout_workers.rollout.stepplugins.protocol import (
    FAILED,
    RUNNING,
    SUCCESSFUL,
    StepContext,
    StepResult,
)
from rollout_workers.timefmt import duration_seconds

NAME = "rollout-workers/webhook"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 60.0
MAX_MESSAGE = 512
POD_TEMPLATE_HASH = "rollouts-pod-template-hash"
REVISION_ANNOTATION = "rollout.argoproj.io/revision"


class WebhookError(RuntimeError):
    """The endpoint could not give an answer (5xx, timeout, connection): retried."""


class WebhookConfigError(ValueError):
    """The step's config cannot make a request (no url, a bad method or timeout)."""


def _seconds(value: Any, *, default: float) -> float:
    if value is None or value == "":
        return default
    if isinstance(value, int | float):
        return float(value)
    seconds = duration_seconds(str(value))
    if seconds is None:
        raise WebhookConfigError(f"invalid duration {value!r}")
    return float(seconds)


def rollout_facts(rollout: Obj, step: StepContext, operation: str) -> Obj:
    meta = rollout.get("metadata") or {}
    status = rollout.get("status") or {}
    return {
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "revision": (meta.get("annotations") or {}).get(REVISION_ANNOTATION, ""),
        "podTemplateHash": status.get("currentPodHash", ""),
        "stepIndex": step.index,
        "operation": operation,
    }


def render(template: Any, facts: Obj) -> Any:
    """The body template with `{{key}}` placeholders replaced in every string."""
    if isinstance(template, str):
        for key, value in facts.items():
            template = template.replace("{{" + key + "}}", str(value))
            template = template.replace("{{ " + key + " }}", str(value))
        return template
    if isinstance(template, list):
        return [render(item, facts) for item in template]
    if isinstance(template, dict):
        return {key: render(value, facts) for key, value in template.items()}
    return template


def build_request(rollout: Obj, step: StepContext, operation: str) -> urllib.request.Request:
    config = step.config
    url = config.get("url")
    if not url or not isinstance(url, str):
        raise WebhookConfigError("webhook step plugin: config.url is required")
    method = str(config.get("method") or "POST").upper()
    if method not in {"GET", "POST", "PUT", "PATCH", "DELETE"}:
        raise WebhookConfigError(f"webhook step plugin: unsupported method {method}")
    facts = rollout_facts(rollout, step, operation)
    if "body" in config:
        body = render(config["body"], facts)
    else:
        rollout_part = {k: v for k, v in facts.items() if k != "operation"}
        body = {
            "operation": operation,
            "rollout": rollout_part,
            "config": config,
            "status": step.status,
        }
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "X-Rollouts-Operation": operation}
    headers.update({str(k): str(v) for k, v in (config.get("headers") or {}).items()})
    return urllib.request.Request(
        url, data=None if method == "GET" else data, headers=headers, method=method
    )


def parse_answer(code: int, text: str) -> StepResult:
    """Map an HTTP answer to a step result (raises WebhookError for a retryable one)."""
    if code >= 500:
        raise WebhookError(f"HTTP {code}: {text[:MAX_MESSAGE]}".strip())
    if code >= 400:
        return StepResult(phase=FAILED, message=f"HTTP {code}: {text[:MAX_MESSAGE]}".strip())
    try:
        answer = json.loads(text) if text.strip() else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return StepResult(phase=SUCCESSFUL)
    phase = str(answer.get("phase") or SUCCESSFUL)
    if phase not in (RUNNING, SUCCESSFUL, FAILED):
        raise WebhookError(f"invalid phase {phase!r} in the answer")
    requeue = answer.get("requeueAfter")
    status = answer.get("status")
    return StepResult(
        phase=phase,
        message=str(answer.get("message") or ""),
        requeue_after=_seconds(requeue, default=0.0) if requeue is not None else None,
        status=status if isinstance(status, dict) else None,
    )


class WebhookStepPlugin:
    """Calls the step's endpoint for each operation (see the module docstring)."""

    def _call(self, rollout: Obj, step: StepContext, operation: str) -> StepResult:
        request = build_request(rollout, step, operation)
        timeout = min(_seconds(step.config.get("timeout"), default=DEFAULT_TIMEOUT), MAX_TIMEOUT)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return parse_answer(response.status, response.read().decode(errors="replace"))
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace") if err.fp is not None else ""
            return parse_answer(err.code, text)
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise WebhookError(f"{request.get_method()} {request.full_url}: {reason}") from None

    def run(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._call(rollout, step, "run")

    def terminate(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._call(rollout, step, "terminate")

    def abort(self, rollout: Obj, step: StepContext) -> StepResult:
        return self._call(rollout, step, "abort")

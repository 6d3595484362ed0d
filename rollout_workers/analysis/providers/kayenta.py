"""Kayenta metrics: a canary judgement started by `run` and read by later reconciles.

Behaviour of Argo Rollouts' `metricproviders/kayenta`, over Kayenta's REST API:

- `run` looks the canary config up by name (`GET <address>/canaryConfig?application=..&
  configurationAccountName=..`, a list of `{id, name}`; no match is `Canary config not found`,
  another status than 200 `Invalid Response: HTTP 500`), then starts the judgement
  (`POST <address>/canary/<config id>?application=..&metricsAccountName=..&
  configurationAccountName=..&storageAccountName=..`) with the scopes and thresholds:
  `{"scopes": {<name>: {"controlScope": {"scope", "location" (the scope's region), "step",
  "start", "end"}, "experimentScope": {...}}}, "thresholds": {"pass", "marginal"}}`.
  The answer's `canaryExecutionId` goes to the measurement's metadata, and the measurement
  stays Running, to be looked at again in 15 s (`resumeAt`). Nothing waits in between: the
  run's timer brings the next reconcile, which calls `resume`.
- A scope's `start` and `end` must be set on both sides or on neither (`controlScope.start and
  experimentScope.start must both be set or be empty`). Unset, `start` is the measurement's time
  less the metric's `interval` (with `lookback`, the run's start) and `end` the measurement's
  time, in RFC 3339.
- `resume` reads `GET <address>/canary/<execution id>`: `complete: false` keeps it Running for
  another 15 s; once complete, `result.judgeResult.score.score` (truncated to an integer) is the
  value, and the phase is Successful from `threshold.pass` on, Inconclusive from
  `threshold.marginal` on, Failed below. The metric's conditions are not used. No `complete`
  is `Missing Complete Status`, no score `Missing Score`, another status than 200
  `Invalid Response`.
- `terminate` leaves a started judgement to finish on its own, as Argo does.
- Requests are bounded by 15 s, as Argo's client.

Deviations: the config lookup sends the metric's `configurationAccountName` (Argo sends the
storage account's name under that parameter, which only works where the two are one account);
query parameters are percent-encoded (Argo pastes them in as they are); an answer without a
`canaryExecutionId` is an Error (Argo records the execution id `<nil>` and polls it).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from urllib.parse import quote, urlencode

from rollout_workers.analysis.providers.base import (
    BaseProvider,
    format_time,
    mark_error,
    started,
)
from rollout_workers.analysis.providers.values import decode_json, sprint_float
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import (
    AnalysisPhase,
    AnalysisRun,
    KayentaMetric,
    KayentaScope,
    KayentaScopeDetail,
    Measurement,
    Metric,
)
from rollout_workers.timefmt import TimeError, parse_duration_string, parse_time

PROVIDER_TYPE = "Kayenta"
EXECUTION_ID_KEY = "canaryExecutionId"
RESUME_DELAY = dt.timedelta(seconds=15)
TIMEOUT_SECONDS = 15.0


class JudgementError(Exception):
    pass


class KayentaProvider(BaseProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        try:
            config_id = self.config_id(spec)
            body = calculate_request(spec, run=run, interval=metric.interval or "", now=now)
            execution_id = self.start(spec, config_id, body)
        except (JudgementError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        return measurement.model_copy(
            update={
                "metadata": {EXECUTION_ID_KEY: execution_id},
                "resume_at": format_time(now + RESUME_DELAY),
            }
        )

    def config_id(self, spec: KayentaMetric) -> str:
        """The id of the canary config named `canaryConfigName`; raises JudgementError or
        RequestError."""
        params = {
            "application": spec.application or "",
            "configurationAccountName": spec.configuration_account_name or "",
        }
        url = f"{spec.address or ''}/canaryConfig?{urlencode(params)}"
        response = send(self.deps.http, "GET", url, headers={}, timeout=TIMEOUT_SECONDS)
        if response.status != 200:
            raise JudgementError(f"Invalid Response: HTTP {response.status}")
        configs = _decode(response.data)
        if not isinstance(configs, list):
            raise JudgementError(
                f"json: cannot unmarshal {_json_kind(configs)} into a list of canary configs"
            )
        wanted = spec.canary_config_name or ""
        for config in configs:
            if isinstance(config, dict) and _field(config, "name") == wanted:
                return str(_field(config, "id") or "")
        raise JudgementError("Canary config not found")

    def start(self, spec: KayentaMetric, config_id: str, body: dict[str, Any]) -> str:
        """Start the judgement; its execution id. Raises JudgementError or RequestError."""
        params = {
            "application": spec.application or "",
            "metricsAccountName": spec.metrics_account_name or "",
            "configurationAccountName": spec.configuration_account_name or "",
            "storageAccountName": spec.storage_account_name or "",
        }
        url = f"{spec.address or ''}/canary/{quote(config_id, safe='')}?{urlencode(params)}"
        response = send(
            self.deps.http,
            "POST",
            url,
            headers={"Content-Type": "application/json"},
            body=json.dumps(body, separators=(",", ":")).encode(),
            timeout=TIMEOUT_SECONDS,
        )
        if response.status != 200:
            raise JudgementError("Invalid Response")
        answer = _decode_object(response.data)
        execution_id = answer.get(EXECUTION_ID_KEY)
        if isinstance(execution_id, float):
            execution_id = sprint_float(execution_id)
        if not isinstance(execution_id, str) or not execution_id:
            raise JudgementError("Invalid canaryExecutionId")
        return execution_id

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        spec = _spec(metric)
        execution_id = (measurement.metadata or {}).get(EXECUTION_ID_KEY)
        if not execution_id:
            return mark_error(measurement, f"{EXECUTION_ID_KEY} missing from the metadata", now)
        url = f"{spec.address or ''}/canary/{quote(execution_id, safe='')}"
        try:
            response = send(self.deps.http, "GET", url, headers={}, timeout=TIMEOUT_SECONDS)
            if response.status != 200:
                raise JudgementError("Invalid Response")
            execution = _decode_object(response.data)
            complete = _nested(execution, "complete", kind=bool, missing="Missing Complete Status")
            if not complete:
                return measurement.model_copy(
                    update={
                        "phase": AnalysisPhase.RUNNING,
                        "resume_at": format_time(now + RESUME_DELAY),
                    }
                )
            path = ("result", "judgeResult", "score", "score")
            score = _nested(execution, *path, kind=float, missing="Missing Score")
        except (JudgementError, RequestError) as err:
            return mark_error(measurement, str(err), now)
        value = int(score)  # Go's int(float64): toward zero
        return measurement.model_copy(
            update={
                "value": str(value),
                "phase": calculate_judgement(value, *_thresholds(spec)),
                "finished_at": format_time(now),
            }
        )


def calculate_judgement(score: int, passing: int, marginal: int) -> AnalysisPhase:
    if score >= passing:
        return AnalysisPhase.SUCCESSFUL
    if score >= marginal:
        return AnalysisPhase.INCONCLUSIVE
    return AnalysisPhase.FAILED


def calculate_request(
    spec: KayentaMetric, *, run: AnalysisRun, interval: str, now: dt.datetime
) -> dict[str, Any]:
    """The body that starts a judgement; raises JudgementError for inconsistent scopes."""
    scopes: dict[str, Any] = {}
    for scope in spec.scopes or []:
        scopes[scope.name or ""] = calculate_scope(
            scope, run=run, interval=interval, lookback=bool(spec.lookback), now=now
        )
    return {
        "scopes": scopes,
        "thresholds": dict(zip(("pass", "marginal"), _thresholds(spec), strict=True)),
    }


def calculate_scope(
    scope: KayentaScope, *, run: AnalysisRun, interval: str, lookback: bool, now: dt.datetime
) -> dict[str, Any]:
    control = scope.control_scope or KayentaScopeDetail()
    experiment = scope.experiment_scope or KayentaScopeDetail()
    if bool(control.start) != bool(experiment.start):
        raise JudgementError(
            "controlScope.start and experimentScope.start must both be set or be empty"
        )
    if bool(control.end) != bool(experiment.end):
        raise JudgementError(
            "controlScope.end and experimentScope.end must both be set or be empty"
        )
    # Both set or both empty, as checked above: an empty pair takes the defaults.
    start = control.start or calculate_start(run=run, interval=interval, lookback=lookback, now=now)
    end = control.end or format_time(now)
    return {
        "controlScope": _scope_request(control, start, end),
        "experimentScope": _scope_request(
            experiment, experiment.start or start, experiment.end or end
        ),
    }


def calculate_start(*, run: AnalysisRun, interval: str, lookback: bool, now: dt.datetime) -> str:
    if lookback:
        started_at = run.status.started_at if run.status else None
        if not started_at:
            raise JudgementError("lookback needs the run's start time, which is not set yet")
        return format_time(parse_time(started_at))
    try:
        nanos = parse_duration_string(interval)
    except TimeError as err:
        raise JudgementError(f'Invalid duration "{interval}": {err}') from None
    return format_time(now - dt.timedelta(microseconds=nanos // 1000))


def _scope_request(detail: KayentaScopeDetail, start: str, end: str) -> dict[str, Any]:
    request: dict[str, Any] = {
        "scope": detail.scope or "",
        "location": detail.region or "",
        "step": detail.step or 0,
    }
    if start:
        request["start"] = start
    if end:
        request["end"] = end
    return request


def _thresholds(spec: KayentaMetric) -> tuple[int, int]:
    threshold = spec.threshold
    if threshold is None:
        return 0, 0
    return threshold.pass_ or 0, threshold.marginal or 0


def _decode(data: bytes) -> Any:
    try:
        return decode_json(data)
    except ValueError as err:
        raise JudgementError(f"invalid JSON in Kayenta's answer: {err}") from None


def _decode_object(data: bytes) -> dict[str, Any]:
    """A JSON object, as Go decodes one into a `map[string]interface {}`."""
    decoded = _decode(data)
    if not isinstance(decoded, dict):
        raise JudgementError(
            f"json: cannot unmarshal {_json_kind(decoded)} into Go value of type "
            "map[string]interface {}"
        )
    return decoded


def _field(obj: dict[str, Any], name: str) -> Any:
    """A field as Go's JSON decoding finds it: the exact key, else one differing in case."""
    if name in obj:
        return obj[name]
    for key, value in obj.items():
        if key.lower() == name.lower():
            return value
    return None


_GO_TYPES = {
    bool: "bool",
    float: "float64",
    str: "string",
    dict: "map[string]interface {}",
    list: "[]interface {}",
    type(None): "<nil>",
}


def _nested(obj: dict[str, Any], *path: str, kind: type, missing: str) -> Any:
    """`unstructured.NestedBool`/`NestedFloat64`: the value at `path`, which must be of `kind`;
    raises JudgementError with `missing` when a field is absent, or Go's accessor error."""
    current: Any = obj
    for depth, name in enumerate(path):
        if not isinstance(current, dict):
            where = "." + ".".join(path[:depth])
            raise JudgementError(
                f"{where} accessor error: {current} is of the type "
                f"{_GO_TYPES.get(type(current), type(current).__name__)}, "
                "expected map[string]interface{}"
            )
        if name not in current:
            raise JudgementError(missing)
        current = current[name]
    if not isinstance(current, kind) or (kind is float and isinstance(current, bool)):
        where = "." + ".".join(path)
        raise JudgementError(
            f"{where} accessor error: {current} is of the type "
            f"{_GO_TYPES.get(type(current), type(current).__name__)}, "
            f"expected {_GO_TYPES[kind]}"
        )
    return current


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return "number"
    return "null"


def _spec(metric: Metric) -> KayentaMetric:
    assert metric.provider.kayenta is not None, "the factory only builds it for kayenta"
    return metric.provider.kayenta

"""Wavefront metrics: a query through the chart API (`GET https://<address>/api/v2/chart/api`).

Behaviour of Argo Rollouts' `metricproviders/wavefront` with the go-wavefront client (plain
HTTP here; Wavefront publishes no light Python client):

- The token is the value of the key named like `address` (a host name, as
  `example.wavefront.com`) in the Secret `wavefront-api-tokens` of the controller's namespace
  (`ProviderDeps.namespace`). No such key is an Error `API token not found`; a Secret that
  cannot be read is an Error with the API server's message. The token is sent as
  `Authorization: Bearer <token>`.
- The query asks for the point nearest the measurement's time: `q` the query, `s` and `e` both
  the measurement's time in epoch milliseconds, `g=s`, `p=1`, `i=true` (series outside the
  window too), and go-wavefront's other flags, all false (`autoEvents`, `listmode`, `strict`,
  `includeObsoleteMetrics`). go-wavefront sets no timeout; 10 s here, as the other providers.
- A status other than 200 is an Error `server returned 500 Internal Server Error\n<body>\n`
  (go-wavefront's). `warnings` of the answer go to the measurement's metadata, Error or not.
- In each time series the data point nearest the measurement's time is chosen. One series:
  conditions see its value, the value is written with two decimals (`10.00`). Several: a list
  of values, `[10.00,11.00]`. The metadata records the chosen points' `timestamps` (epoch
  seconds) and their `drift` from the measurement's time (seconds; bracketed lists for several
  series). No series is an Error `No TimeSeries found in response from Wavefront`.
"""

from __future__ import annotations

import datetime as dt
import math
from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from rollout_workers.analysis.providers.base import SecretKeyMissing, mark_error, started
from rollout_workers.analysis.providers.instant import InstantProvider
from rollout_workers.analysis.providers.values import decode_json
from rollout_workers.analysis.providers.web import RequestError, send
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric, WavefrontMetric
from rollout_workers.kube.errors import KubeError

PROVIDER_TYPE = "Wavefront"
SECRET_NAME = "wavefront-api-tokens"
TIMEOUT_SECONDS = 10.0


class WavefrontError(Exception):
    pass


class WavefrontProvider(InstantProvider):
    provider_type = PROVIDER_TYPE

    def run(self, run: AnalysisRun, metric: Metric, now: dt.datetime) -> Measurement:
        measurement = started(now)
        spec = _spec(metric)
        address = spec.address or ""
        try:
            token = self.token(address)
        except WavefrontError as err:
            return mark_error(measurement, str(err), now)
        epoch = int(now.timestamp())
        millis = str(epoch * 1000)
        # go-wavefront sends every non-empty field of its QueryParams, booleans always.
        params = {
            "autoEvents": "false",
            "e": millis,
            "g": "s",
            "i": "true",
            "includeObsoleteMetrics": "false",
            "listmode": "false",
            "p": "1",
            "q": spec.query or "",
            "s": millis,
            "strict": "false",
        }
        url = f"https://{address}/api/v2/chart/api?{urlencode(sorted(params.items()))}"
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        try:
            response = send(self.deps.http, "GET", url, headers=headers, timeout=TIMEOUT_SECONDS)
            if response.status != 200:
                reason = HTTPStatus(response.status).phrase if response.status in _KNOWN else ""
                raise WavefrontError(
                    f"server returned {response.status} {reason}".rstrip()
                    + f"\n{response.data.decode(errors='replace')}\n"
                )
            answer = decode_json(response.data)
            if not isinstance(answer, dict):
                raise WavefrontError("the chart API's answer is not a JSON object")
        except (RequestError, WavefrontError, ValueError) as err:
            return mark_error(measurement, str(err), now)
        metadata: dict[str, str] = {}
        if answer.get("warnings"):
            metadata["warnings"] = str(answer["warnings"])
        try:
            series = [_points(s) for s in answer.get("timeseries") or []]
        except WavefrontError as err:
            failed = measurement.model_copy(update={"metadata": metadata or None})
            return mark_error(failed, str(err), now)
        if not series:
            failed = measurement.model_copy(update={"metadata": metadata or None})
            return mark_error(failed, "No TimeSeries found in response from Wavefront", now)
        chosen = [nearest(points, epoch) for points in series]
        values = [f"{value:.2f}" for value, _, _ in chosen]
        stamps = [str(stamp) for _, stamp, _ in chosen]
        drifts = [str(drift) for _, _, drift in chosen]
        result: float | list[float]
        if len(chosen) == 1:
            result, text = chosen[0][0], values[0]
            metadata.update(timestamps=stamps[0], drift=drifts[0])
        else:
            result, text = [value for value, _, _ in chosen], "[" + ",".join(values) + "]"
            metadata.update(timestamps=f"[{','.join(stamps)}]", drift=f"[{','.join(drifts)}]")
        return self.judged(
            measurement.model_copy(update={"metadata": metadata}),
            metric,
            result=result,
            value=text,
            now=now,
        )

    def token(self, address: str) -> str:
        if self.deps.secrets is None:
            raise WavefrontError("API token not found")
        try:
            return self.deps.secrets.read(self.deps.namespace, SECRET_NAME, address)
        except SecretKeyMissing:
            raise WavefrontError("API token not found") from None
        except KubeError as err:
            raise WavefrontError(err.message) from None


_KNOWN = {s.value for s in HTTPStatus}


def nearest(points: list[tuple[float, float]], epoch: int) -> tuple[float, int, int]:
    """The value of the point nearest `epoch`, its time and its drift (seconds; Argo's
    `findDataPointValue`: the first of equally near points, 0s when there is none)."""
    value, stamp, delta = 0.0, 0.0, math.inf
    for time, point_value in points:
        new = time - epoch
        if abs(new) < abs(delta):
            value, stamp, delta = point_value, time, new
    return value, int(stamp), int(delta) if math.isfinite(delta) else _go_int_of_inf()


def _go_int_of_inf() -> int:
    # Go's int64(+Inf) on amd64 is the minimum int64; Argo then records it as the drift.
    return -(2**63)


def _points(series: Any) -> list[tuple[float, float]]:
    if not isinstance(series, dict):
        raise WavefrontError("a time series is not a JSON object")
    points = []
    for point in series.get("data") or []:
        if not isinstance(point, list) or len(point) < 2:
            raise WavefrontError(f"a data point is not [time, value]: {point}")
        time, value = point[0], point[1]
        if not isinstance(time, float) or not isinstance(value, (float, type(None))):
            raise WavefrontError(f"a data point is not [time, value]: {point}")
        points.append((time, value if value is not None else 0.0))
    return points


def _spec(metric: Metric) -> WavefrontMetric:
    assert metric.provider.wavefront is not None, "the factory only builds it for wavefront"
    return metric.provider.wavefront

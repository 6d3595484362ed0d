"""What the providers that take a measurement in one request share (datadog, newRelic,
graphite, wavefront, cloudWatch, influxdb, skywalking): `run` does all the work, so `resume`
has nothing to do (Argo's providers only log a warning there), and every one of them ends the
same way, judging what it measured by the metric's conditions (`judged`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from rollout_workers.analysis.providers.base import (
    BaseProvider,
    ProviderDeps,
    format_time,
    mark_error,
)
from rollout_workers.analysis.providers.evaluate import Evaluator, calculate_phase
from rollout_workers.api.analysis import AnalysisRun, Measurement, Metric


class InstantProvider(BaseProvider):
    def __init__(self, deps: ProviderDeps, *, evaluator: Evaluator | None = None) -> None:
        super().__init__(deps)
        self.evaluator = evaluator

    def judged(
        self,
        measurement: Measurement,
        metric: Metric,
        *,
        result: object,
        value: str,
        now: dt.datetime,
        keep_value_on_error: bool = False,
        **update: Any,
    ) -> Measurement:
        """The measurement finished with `value`, its phase from the metric's conditions on
        `result`; an Error with the evaluator's message when a condition cannot be evaluated
        (the value kept only where Argo keeps it). `update` is applied in both cases."""
        verdict = calculate_phase(metric, result, evaluator=self.evaluator)
        if verdict.error is not None:
            if keep_value_on_error:
                measurement = measurement.model_copy(update={"value": value})
            return mark_error(measurement.model_copy(update=update), verdict.error, now)
        return measurement.model_copy(
            update={
                "phase": verdict.phase,
                "value": value,
                "finished_at": format_time(self.deps.clock()),
                **update,
            }
        )

    def resume(
        self, run: AnalysisRun, metric: Metric, measurement: Measurement, now: dt.datetime
    ) -> Measurement:
        return measurement

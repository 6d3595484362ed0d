"""The pool-wide Prometheus collector: Argo Rollouts' controller metrics, read from Redis.

State gauges come from the watcher's cache at scrape time, as Argo's collectors read their
listers: `rollout_info` and its replica counts, `analysis_run_info`, `experiment_info` and the
deprecated per-phase gauges. Counters and histograms come from the hashes every process
increments (`counters.py`), and client-go's workqueue metrics from the workqueue's own
structures (depth is the `queued` zset: keys waiting, not the ones being reconciled).

Names, labels and types are Argo's (controller/metrics/ in argo-rollouts) and client-go's, so
dashboards and alerts carry over. Series of objects no longer in the cache are not reported
(Argo deletes them when an object goes away).
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString as _go_float

from rollout_workers.cache import Lister
from rollout_workers.counters import (
    NOTIFICATION_BUCKETS,
    RECONCILE_BUCKETS,
    SEP,
    WORKQUEUE_BUCKETS,
    Keys,
)
from rollout_workers.keys import ObjectKey
from rollout_workers.kube import resources as r
from rollout_workers.objects import Obj
from rollout_workers.settings import KINDS, OBJECT_KINDS, QueueSettings
from rollout_workers.workqueue import Owner, WorkQueue

#: Argo's queue names (the `name` label of client-go's workqueue metrics).
QUEUE_NAMES = {
    "rollouts": "Rollouts",
    "analysisruns": "AnalysisRuns",
    "experiments": "Experiments",
    "notifications": "Notifications",
}
#: The metric-name prefix of each kind's reconcile histogram and error counter.
RECONCILE_NAMES = {
    "rollouts": "rollout",
    "analysisruns": "analysis_run",
    "experiments": "experiment",
}
_HELP_RECONCILE = {
    "rollouts": ("Rollout reconciliation performance.", "Error occurring during the rollout"),
    "analysisruns": (
        "Analysis Run reconciliation performance.",
        "Error occurring during the analysis run",
    ),
    "experiments": (
        "Experiments reconciliation performance.",
        "Error occurring during the experiment",
    ),
}

ROLLOUT_PHASES = ("Completed", "Progressing", "Paused", "Timeout", "Error", "Abort")
ANALYSIS_PHASES = ("Pending", "Error", "Failed", "Successful", "Running", "Inconclusive")
EXPERIMENT_PHASES = ("Pending", "Error", "Successful", "Running", "Inconclusive")
_TRAFFIC_ROUTERS = (
    ("alb", "ALB"),
    ("ambassador", "Ambassador"),
    ("istio", "Istio"),
    ("nginx", "Nginx"),
    ("smi", "SMI"),
    ("appMesh", "AppMesh"),
)
_PROVIDER_TYPES = {
    "prometheus": "Prometheus",
    "kayenta": "Kayenta",
    "web": "Web",
    "datadog": "Datadog",
    "wavefront": "Wavefront",
    "newRelic": "NewRelic",
    "job": "Job",
    "cloudWatch": "CloudWatch",
    "graphite": "Graphite",
    "influxdb": "Influxdb",
    "skywalking": "SkyWalking",
}


# -- pure calculations, as Argo's collectors ---------------------------------------------------


def _condition(status: Obj, type_: str) -> Obj | None:
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return dict(cond)
    return None


def calculate_rollout_phase(rollout: Obj) -> str:
    """Argo's metrics phase (calculatePhase): from the Progressing and InvalidSpec conditions."""
    status = rollout.get("status") or {}
    phase = "Progressing"
    progressing = _condition(status, "Progressing")
    if progressing is not None:
        phase = {
            "NewReplicaSetAvailable": "Completed",
            "RolloutPaused": "Paused",
            "ReplicaSetCreateError": "Error",
            "ProgressDeadlineExceeded": "Timeout",
            "RolloutAborted": "Abort",
        }.get(str(progressing.get("reason", "")), phase)
    if _condition(status, "InvalidSpec") is not None:
        phase = "InvalidSpec"
    return phase


def calculate_strategy(rollout: Obj) -> tuple[str, str]:
    """(strategy, traffic_router) as Argo labels them."""
    strategy = (rollout.get("spec") or {}).get("strategy") or {}
    if strategy.get("blueGreen") is not None:
        return "blueGreen", ""
    canary = strategy.get("canary")
    if canary is None:
        return "none", ""
    router = ""
    routing = canary.get("trafficRouting") or {}
    for field_name, label in _TRAFFIC_ROUTERS:
        if routing.get(field_name) is not None:
            router = label
    return "canary", router


def calculate_metric_type(metric: Obj) -> str:
    """Argo's metricproviders.Type: the provider's name, or the plugin's."""
    provider = metric.get("provider") or {}
    for key, label in _PROVIDER_TYPES.items():
        if provider.get(key) is not None:
            return label
    plugin = provider.get("plugin") or {}
    if plugin:
        return str(next(iter(plugin)))
    return "Unknown Provider"


def calculate_dry_run(run: Obj) -> dict[str, bool]:
    """Which metrics of a run are dry-run (spec.dryRun: names, regexes or `*`)."""
    spec = run.get("spec") or {}
    names = [str(m.get("name", "")) for m in spec.get("metrics") or []]
    out = dict.fromkeys(names, False)
    for entry in spec.get("dryRun") or []:
        pattern = str(entry.get("metricName", ""))
        for name in names:
            if pattern in ("*", name) or _matches(pattern, name):
                out[name] = True
    return out


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False


# -- reading Redis --------------------------------------------------------------------------


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ints(raw: Mapping[Any, Any]) -> dict[str, int]:
    return {_text(k): int(v) for k, v in raw.items()}


@dataclass
class Snapshot:
    """Everything one scrape reads, in as few round trips as possible."""

    now_ms: int
    objects: dict[str, list[Obj]]
    reconcile: dict[str, dict[str, int]]
    workqueue: dict[str, dict[str, int]]
    depth: dict[str, int]
    started: dict[str, list[int]]
    k8s_requests: dict[str, int]
    events: dict[str, int]
    notifications: dict[str, int] = field(default_factory=dict)
    events_dropped: dict[str, int] = field(default_factory=dict)
    kinds: Sequence[str] = field(default_factory=lambda: list(KINDS))


def read_snapshot(client: redis.Redis, *, prefix: str) -> Snapshot:
    keys = Keys(prefix)
    kinds = list(KINDS)
    resources = {
        "rollouts": r.ROLLOUTS,
        "analysisruns": r.ANALYSISRUNS,
        "experiments": r.EXPERIMENTS,
    }
    listers = {k: Lister(client, prefix=prefix, resource=res) for k, res in resources.items()}
    queues = {
        k: WorkQueue(client, kind=k, prefix=prefix, settings=QueueSettings(), send=_no_send)
        for k in kinds
    }
    pipe = client.pipeline(transaction=False)
    pipe.time()
    for kind in kinds:
        if kind in listers:
            pipe.hvals(listers[kind].keys.objects)
            pipe.hgetall(keys.reconcile(kind))
        pipe.hgetall(keys.workqueue(kind))
        pipe.zcard(queues[kind].k_queued)
        pipe.hvals(queues[kind].k_active)
    pipe.hgetall(keys.k8s_requests)
    pipe.hgetall(keys.events)
    pipe.hgetall(keys.notifications)
    pipe.hgetall(keys.events_dropped)
    replies = iter(pipe.execute())
    now_s, now_us = next(replies)
    snap = Snapshot(
        now_ms=int(now_s) * 1000 + int(now_us) // 1000,
        objects={},
        reconcile={},
        workqueue={},
        depth={},
        started={},
        k8s_requests={},
        events={},
        kinds=kinds,
    )
    for kind in kinds:
        if kind in listers:
            snap.objects[kind] = [json.loads(raw) for raw in next(replies)]
            snap.reconcile[kind] = _ints(next(replies))
        snap.workqueue[kind] = _ints(next(replies))
        snap.depth[kind] = int(next(replies))
        owners = (Owner.parse(v) for v in next(replies))
        snap.started[kind] = [o.since_ms for o in owners if o.since_ms is not None]
    snap.k8s_requests = _ints(next(replies))
    snap.events = _ints(next(replies))
    snap.notifications = _ints(next(replies))
    snap.events_dropped = _ints(next(replies))
    return snap


def _no_send(keys: Sequence[ObjectKey]) -> None:  # the collector never queues anything
    raise RuntimeError("the metrics collector does not send messages")


def _float(value: float) -> str:
    """A number as Go's Prometheus client prints it (strconv 'g', -1): 1, 0.15, 1e-08, +Inf."""
    if math.isinf(value) or math.isnan(value):
        text: str = _go_float(value)  # type: ignore[no-untyped-call]
        return text
    text = repr(float(value))
    return text.removesuffix(".0")


# -- rendering -------------------------------------------------------------------------------


class ArgoCounter(Metric):
    """A counter family whose samples are named exactly `name`: Argo's `*_reconcile_error`
    have no `_total` suffix (prometheus_client's CounterMetricFamily would add one)."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        super().__init__(name, documentation, "counter")
        self.label_names = tuple(labels)

    def add(self, values: Sequence[str], value: float) -> None:
        self.add_sample(self.name, dict(zip(self.label_names, values, strict=True)), value)


def _split_series(fields: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """`series|suffix` -> {series: {suffix: value}}."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for name, value in fields.items():
        series, _, suffix = name.rpartition(SEP)
        out[series][suffix] = value
    return out


def _buckets(
    bounds: Sequence[float], fields: Mapping[str, int]
) -> tuple[list[tuple[str, float]], float]:
    """Cumulative (le, count) pairs from per-bucket counts, and the sum in seconds."""
    out: list[tuple[str, float]] = []
    total = 0
    for i, bound in enumerate([*bounds, float("inf")]):
        total += fields.get(f"b{i}", 0)
        out.append((_float(bound), float(total)))
    return out, fields.get("sum", 0) / 1_000_000


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def render_families(snap: Snapshot) -> Iterator[Metric]:
    yield from _rollout_families(snap.objects.get("rollouts", []))
    yield from _analysis_families(snap.objects.get("analysisruns", []))
    yield from _experiment_families(snap.objects.get("experiments", []))
    for kind in snap.kinds:
        if kind not in OBJECT_KINDS:
            continue
        present = {f"{ns}/{name}" for ns, name in map(_key, snap.objects.get(kind, []))}
        yield from _reconcile_families(kind, snap.reconcile.get(kind, {}), present)
    yield from _request_families(snap)
    yield from _notification_families(snap.notifications)
    yield from _workqueue_families(snap)


def _gauge(name: str, documentation: str, labels: Sequence[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=list(labels))


def _rollout_families(rollouts: Iterable[Obj]) -> Iterator[Metric]:
    nn = ("namespace", "name")
    info = _gauge(
        "rollout_info", "Information about rollout.", (*nn, "strategy", "traffic_router", "phase")
    )
    available = _gauge(
        "rollout_info_replicas_available", "The number of available replicas per rollout.", nn
    )
    unavailable = _gauge(
        "rollout_info_replicas_unavailable", "The number of unavailable replicas per rollout.", nn
    )
    desired = _gauge(
        "rollout_info_replicas_desired", "The number of desired replicas per rollout.", nn
    )
    updated = _gauge(
        "rollout_info_replicas_updated", "The number of updated replicas per rollout.", nn
    )
    phase_g = _gauge(
        "rollout_phase",
        "Information on the state of the rollout (DEPRECATED - use rollout_info)",
        (*nn, "strategy", "phase"),
    )
    for ro in sorted(rollouts, key=_key):
        ns, name = _key(ro)
        status = ro.get("status") or {}
        strategy, router = calculate_strategy(ro)
        phase = calculate_rollout_phase(ro)
        info.add_metric([ns, name, strategy, router, phase], 1)
        avail = int(status.get("availableReplicas") or 0)
        available.add_metric([ns, name], avail)
        unavailable.add_metric([ns, name], int(status.get("replicas") or 0) - avail)
        spec_replicas = (ro.get("spec") or {}).get("replicas")
        desired.add_metric([ns, name], 1 if spec_replicas is None else int(spec_replicas))
        updated.add_metric([ns, name], int(status.get("updatedReplicas") or 0))
        for p in ROLLOUT_PHASES:
            phase_g.add_metric([ns, name, strategy, p], 1 if phase == p else 0)
    yield from (info, available, unavailable, desired, updated, phase_g)


def _analysis_families(runs: Iterable[Obj]) -> Iterator[Metric]:
    nn = ("namespace", "name")
    info = _gauge("analysis_run_info", "Information about analysis run.", (*nn, "phase"))
    phase_g = _gauge(
        "analysis_run_phase",
        "Information on the state of the Analysis Run (DEPRECATED - use analysis_run_info)",
        (*nn, "phase"),
    )
    mtype = _gauge(
        "analysis_run_metric_type",
        "Information on the type of a specific metric in the Analysis Runs",
        (*nn, "metric", "type"),
    )
    mphase = _gauge(
        "analysis_run_metric_phase",
        "Information on the duration of a specific metric in the Analysis Run",
        (*nn, "metric", "type", "dry_run", "phase"),
    )
    for run in sorted(runs, key=_key):
        ns, name = _key(run)
        status = run.get("status") or {}
        phase = str(status.get("phase") or "")
        info.add_metric([ns, name, phase], 1)
        for p in ANALYSIS_PHASES:
            hit = phase == p or (p == "Pending" and phase == "")
            phase_g.add_metric([ns, name, p], 1 if hit else 0)
        results = {str(m.get("name")): m for m in status.get("metricResults") or []}
        dry = calculate_dry_run(run)
        for metric in (run.get("spec") or {}).get("metrics") or []:
            mname = str(metric.get("name", ""))
            kind = calculate_metric_type(metric)
            mtype.add_metric([ns, name, mname, kind], 1)
            mresult = str((results.get(mname) or {}).get("phase") or "")
            dry_run = "true" if dry.get(mname) else "false"
            for p in ANALYSIS_PHASES:
                hit = mresult == p or (p == "Pending" and mresult == "")
                mphase.add_metric([ns, name, mname, kind, dry_run, p], 1 if hit else 0)
    yield from (info, phase_g, mtype, mphase)


def _experiment_families(experiments: Iterable[Obj]) -> Iterator[Metric]:
    nn = ("namespace", "name")
    info = _gauge("experiment_info", "Information about Experiment.", (*nn, "phase"))
    phase_g = _gauge(
        "experiment_phase",
        "Information on the state of the experiment (DEPRECATED - use experiment_info)",
        (*nn, "phase"),
    )
    for ex in sorted(experiments, key=_key):
        ns, name = _key(ex)
        phase = str((ex.get("status") or {}).get("phase") or "")
        info.add_metric([ns, name, phase], 1)
        for p in EXPERIMENT_PHASES:
            hit = phase == p or (p == "Pending" and phase == "")
            phase_g.add_metric([ns, name, p], 1 if hit else 0)
    yield from (info, phase_g)


def _reconcile_families(
    kind: str, fields: Mapping[str, int], present: set[str]
) -> Iterator[Metric]:
    base = RECONCILE_NAMES[kind]
    help_hist, help_err = _HELP_RECONCILE[kind]
    hist = HistogramMetricFamily(f"{base}_reconcile", help_hist, labels=["namespace", "name"])
    errors = ArgoCounter(f"{base}_reconcile_error", help_err, ("namespace", "name"))
    for series, parts in sorted(_split_series(fields).items()):
        if series not in present:
            continue
        ns, _, name = series.partition("/")
        buckets, total = _buckets(RECONCILE_BUCKETS, parts)
        hist.add_metric([ns, name], buckets, total)
        if "err" in parts:
            errors.add([ns, name], parts["err"])
    yield from (hist, errors)


def _notification_families(fields: Mapping[str, int]) -> Iterator[Metric]:
    """Argo's notification_send_success/_error{namespace,name,type,reason} and the
    notification_send{namespace,name} histogram (counters.py writes them)."""
    labels = ("namespace", "name", "type", "reason")
    success = ArgoCounter("notification_send_success", "Notification send success.", labels)
    error = ArgoCounter("notification_send_error", "Error sending the notification", labels)
    hist = HistogramMetricFamily(
        "notification_send", "Notification send performance.", labels=["namespace", "name"]
    )
    sends: dict[str, dict[str, int]] = defaultdict(dict)
    for name, value in sorted(fields.items()):
        outcome, _, rest = name.partition(SEP)
        parts = rest.split(SEP)
        if outcome == "ok" and len(parts) == 4:
            success.add(parts, value)
        elif outcome == "err" and len(parts) == 4:
            error.add(parts, value)
        elif outcome == "send" and len(parts) == 2:
            sends[parts[0]][parts[1]] = value
    for series, observed in sorted(sends.items()):
        ns, _, name = series.partition("/")
        buckets, total = _buckets(NOTIFICATION_BUCKETS, observed)
        hist.add_metric([ns, name], buckets, total)
    yield from (success, error, hist)


def _request_families(snap: Snapshot) -> Iterator[Metric]:
    requests = ArgoCounter(
        "controller_clientset_k8s_request_total",
        "Number of kubernetes requests executed during application reconciliation.",
        ("kind", "namespace", "name", "verb", "status_code"),
    )
    for fields, value in sorted(snap.k8s_requests.items()):
        parts = fields.split(SEP)
        if len(parts) == 5:
            requests.add(parts, value)
    events = ArgoCounter(
        "rollout_events_total", "Count of rollout events", ("namespace", "name", "type", "reason")
    )
    for fields, value in sorted(snap.events.items()):
        parts = fields.split(SEP)
        if len(parts) == 4:
            events.add(parts, value)
    # Ours, not Argo's: events recorded (counted above) that never became an Event write.
    dropped = ArgoCounter(
        "rollout_events_dropped_total",
        "Events recorded but not written: queue_full, spam (client-go's spam filter), failed",
        ("cause",),
    )
    for cause, value in sorted(snap.events_dropped.items()):
        dropped.add([cause], value)
    yield from (requests, events, dropped)


def _workqueue_families(snap: Snapshot) -> Iterator[Metric]:
    depth = _gauge("workqueue_depth", "Current depth of workqueue", ["name"])
    adds = ArgoCounter(
        "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"]
    )
    queue_hist = HistogramMetricFamily(
        "workqueue_queue_duration_seconds",
        "How long in seconds an item stays in workqueue before being requested.",
        labels=["name"],
    )
    work_hist = HistogramMetricFamily(
        "workqueue_work_duration_seconds",
        "How long in seconds processing an item from workqueue takes.",
        labels=["name"],
    )
    unfinished = _gauge(
        "workqueue_unfinished_work_seconds",
        "How many seconds of work has done that is in progress and hasn't been observed by "
        "work_duration. Large values indicate stuck threads. One can deduce the number of "
        "stuck threads by observing the rate at which this increases.",
        ["name"],
    )
    longest = _gauge(
        "workqueue_longest_running_processor_seconds",
        "How many seconds has the longest running processor for workqueue been running.",
        ["name"],
    )
    retries = ArgoCounter(
        "workqueue_retries_total", "Total number of retries handled by workqueue", ["name"]
    )
    for kind in snap.kinds:
        label = [QUEUE_NAMES[kind]]
        wq = _split_series(snap.workqueue.get(kind, {}))
        depth.add_metric(label, snap.depth.get(kind, 0))
        adds.add(label, snap.workqueue.get(kind, {}).get("adds", 0))
        buckets, total = _buckets(WORKQUEUE_BUCKETS, wq.get("queue", {}))
        queue_hist.add_metric(label, buckets, total)
        buckets, total = _buckets(WORKQUEUE_BUCKETS, wq.get("work", {}))
        work_hist.add_metric(label, buckets, total)
        running = [max(0, snap.now_ms - t) / 1000 for t in snap.started.get(kind, [])]
        unfinished.add_metric(label, sum(running))
        longest.add_metric(label, max(running, default=0.0))
        retries.add(label, snap.workqueue.get(kind, {}).get("retries", 0))
    yield from (depth, adds, queue_hist, work_hist, unfinished, longest, retries)


def prune(client: redis.Redis, snap: Snapshot, *, prefix: str) -> int:
    """Delete the reconcile series of objects gone from the cache (Argo deletes them when an
    object goes away), so deleted AnalysisRuns do not pile up in Redis. Returns fields deleted.

    A reconcile that finishes after its object was deleted writes its series again; the next
    prune takes it away."""
    keys = Keys(prefix)
    pipe = client.pipeline(transaction=False)
    deleted = 0
    for kind in snap.kinds:
        if kind not in OBJECT_KINDS:
            continue
        present = {f"{ns}/{name}" for ns, name in map(_key, snap.objects.get(kind, []))}
        stale = [f for f in snap.reconcile.get(kind, {}) if f.rpartition(SEP)[0] not in present]
        if stale:
            pipe.hdel(keys.reconcile(kind), *stale)
            deleted += len(stale)
    if deleted:
        pipe.execute()
    return deleted


class PoolCollector(Collector):
    """A prometheus_client collector of the whole pool's metrics, read from Redis per scrape.

    With `prune` (the leader's endpoint), the series of deleted objects are also deleted from
    Redis; `rollouts metrics` only reads."""

    def __init__(self, client: redis.Redis, *, prefix: str, prune: bool = False) -> None:
        self._redis, self._prefix, self._prune = client, prefix, prune

    def collect(self) -> Iterator[Metric]:
        snap = read_snapshot(self._redis, prefix=self._prefix)
        if self._prune:
            prune(self._redis, snap, prefix=self._prefix)
        yield from render_families(snap)


def exposition(collectors: Iterable[Collector]) -> bytes:
    """The Prometheus text format (0.0.4) of the collectors' families.

    prometheus_client's generate_latest would append `_total` to the TYPE line of every
    counter; Argo's `*_reconcile_error` counters have no such suffix, so the family name is
    taken from its samples here. Everything else is rendered as generate_latest does.
    """
    lines: list[str] = []
    for collector in collectors:
        for metric in collector.collect():
            name, mtype = metric.name, metric.type
            if mtype == "counter":
                name = name if isinstance(metric, ArgoCounter) else f"{name}_total"
            elif mtype == "unknown":
                mtype = "untyped"
            elif mtype == "info":
                name, mtype = f"{name}_info", "gauge"
            doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
            lines.append(f"# HELP {name} {doc}\n# TYPE {name} {mtype}\n")
            for sample in metric.samples:
                if sample.name.endswith("_created"):
                    continue
                lines.append(_sample_line(sample.name, sample.labels, sample.value))
    return "".join(lines).encode()


def _sample_line(name: str, labels: Mapping[str, str], value: float) -> str:
    if labels:
        inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
        return f"{name}{{{inner}}} {_float(value)}\n"
    return f"{name} {_float(value)}\n"


def _escape(value: str) -> str:
    if "\\" not in value and "\n" not in value and '"' not in value:
        return value  # the common case: Kubernetes names and label values
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")

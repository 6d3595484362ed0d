"""The kubelet-less controllers that run inside the devcluster.

A real cluster has a controller-manager and kubelets; the devcluster has this module:

- ReplicaSet controller: keeps ``spec.replicas`` pods per ReplicaSet (named ``<rs>-<5 chars>``,
  template labels, a controller ownerReference), deletes surplus pods (not-ready first, then
  newest), and keeps ``status`` (replicas, fullyLabeledReplicas, readyReplicas,
  availableReplicas, observedGeneration) true.
- Kubelet: every pod, whoever created it, turns Running and Ready ``ready_delay`` seconds after
  creation, except pods with an image matching ``bad_image_pattern``, which stay Pending in
  ImagePullBackOff forever.
- Deployment controller, only as far as Argo's ``workloadRef`` needs: status follows
  ``spec.replicas`` at once. It creates no ReplicaSets.
- Job controller: one pod per Job, finished after ``job_duration`` seconds (see the package
  docstring for how a Job asks to fail).
- Garbage collector: dependents of a deleted owner are deleted (background propagation), or lose
  the dangling ownerReference when another owner still exists; objects created with only absent
  owners are collected too.
- Namespace controller: a deleted (Terminating) namespace is emptied, then removed.

Everything is event-driven so tens of thousands of idle objects cost nothing: the store's
listener records dirty keys, one task drains them in batches (yielding to the HTTP server
between batches), and a heap of timers drives readiness, availability and job completion.
Nothing polls.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import fnmatch
import heapq
import itertools
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from devcluster.errors import ApiError, JSONDict
from devcluster.resources import Registry, ResourceType
from devcluster.store import Store
from devcluster.stored import Stored
from devcluster.watches import Event

log = logging.getLogger(__name__)

EXIT_CODE_ENV = "DEVCLUSTER_EXIT_CODE"
JOB_SECONDS_ENV = "DEVCLUSTER_JOB_SECONDS"
_EXIT_RE = re.compile(r"\bexit\s+(-?\d+)")
_BATCH = 500

TimerAction = tuple[str, str, str, str]  # (kind, namespace, name, uid)


def _first_container(template: JSONDict) -> JSONDict:
    containers = ((template.get("spec") or {}).get("containers")) or [{}]
    first = containers[0]
    return first if isinstance(first, dict) else {}


def job_exit_code(template: JSONDict) -> int:
    """The exit code a Job's pod "returns": ``DEVCLUSTER_EXIT_CODE`` in the first container's
    env, else the N of an ``exit N`` in its command + args, else 0."""
    container = _first_container(template)
    for env in container.get("env") or []:
        if isinstance(env, dict) and env.get("name") == EXIT_CODE_ENV:
            try:
                return int(str(env.get("value", "0")))
            except ValueError:
                return 1
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    match = _EXIT_RE.search(" ".join(words))
    return int(match.group(1)) if match else 0


def job_seconds(template: JSONDict, default: float) -> float:
    """How long a Job runs: ``DEVCLUSTER_JOB_SECONDS`` in the first container's env, else
    ``default``."""
    for env in _first_container(template).get("env") or []:
        if isinstance(env, dict) and env.get("name") == JOB_SECONDS_ENV:
            with contextlib.suppress(ValueError):
                return max(0.0, float(str(env.get("value"))))
    return default


def pod_is_ready(pod: JSONDict) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def _ready_since(pod: JSONDict) -> str | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "True":
            value = cond.get("lastTransitionTime")
            return str(value) if value else None
    return None


def calculate_deletion_order(pods: list[Stored]) -> list[Stored]:
    """Pods in the order a scale-down deletes them: not ready before ready, not running before
    running, then newest first (creationTimestamp, then resourceVersion), as the real
    ReplicaSet controller ranks them (minus node placement)."""

    def rank(pod: Stored) -> tuple[bool, bool, float, int]:
        created = pod.metadata.get("creationTimestamp")
        return (
            pod_is_ready(pod.obj),
            (pod.obj.get("status") or {}).get("phase") == "Running",
            -_parse_ts(created) if created else 0.0,
            -pod.resource_version,
        )

    return sorted(pods, key=rank)


def _controller_ref(obj: JSONDict) -> JSONDict | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def _parse_ts(value: str) -> float:
    return float(calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")))


class Controllers:
    """The in-server controllers; ``start`` them on the server's event loop."""

    def __init__(
        self,
        store: Store,
        registry: Registry,
        *,
        ready_delay: float,
        bad_image_pattern: str,
        job_duration: float | None = None,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.ready_delay = ready_delay
        self.bad_image_pattern = bad_image_pattern
        self.job_duration = ready_delay if job_duration is None else job_duration
        self._monotonic = monotonic

        def rt(group: str, plural: str) -> ResourceType:
            found = registry.lookup(group, "v1", plural)
            assert found is not None, plural
            return found

        self.pods = rt("", "pods")
        self.namespaces = rt("", "namespaces")
        self.replicasets = rt("apps", "replicasets")
        self.deployments = rt("apps", "deployments")
        self.jobs = rt("batch", "jobs")

        self._dirty_rs: set[tuple[str, str]] = set()
        self._dirty_deploy: set[tuple[str, str]] = set()
        self._dirty_jobs: set[tuple[str, str]] = set()
        self._gc_owners: set[str] = set()
        self._gc_objects: set[tuple[str, str, str]] = set()
        self._dirty_ns: set[str] = set()
        self._terminating: set[str] = set()

        self._timers: list[tuple[float, int, TimerAction]] = []
        self._seq = itertools.count()
        self._scheduled: set[str] = set()  # uids of pods/jobs with a pending timer
        self._wake = asyncio.Event()
        self._timer_wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._pod_ip = 0
        store.add_listener(self._on_event)

    # --- lifecycle ------------------------------------------------------------------------

    def _now(self) -> float:
        if self._monotonic is not None:
            return self._monotonic()
        return asyncio.get_running_loop().time()

    def start(self) -> None:
        self.resync_all()
        self._tasks = [
            asyncio.create_task(self._run_work(), name="devcluster-controllers"),
            asyncio.create_task(self._run_timers(), name="devcluster-timers"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def resync_all(self) -> None:
        """Mark every controlled object dirty (after loading a snapshot)."""
        for stored in self.store.iter_objects(self.replicasets):
            self._dirty_rs.add((stored.metadata["namespace"], stored.metadata["name"]))
        for stored in self.store.iter_objects(self.deployments):
            self._dirty_deploy.add((stored.metadata["namespace"], stored.metadata["name"]))
        for stored in self.store.iter_objects(self.jobs):
            self._dirty_jobs.add((stored.metadata["namespace"], stored.metadata["name"]))
        for stored in self.store.iter_objects(self.pods):
            self._start_pod(stored, fresh=False)
        for stored in self.store.iter_objects(self.namespaces):
            if stored.metadata.get("deletionTimestamp"):
                self._terminating.add(stored.metadata["name"])
                self._dirty_ns.add(stored.metadata["name"])
        self._wake.set()

    @property
    def idle(self) -> bool:
        """No dirty keys waiting (timers may still be pending)."""
        return not self._has_work()

    @property
    def pending_timers(self) -> int:
        return len(self._timers)

    # --- event intake (synchronous, from inside store commits) ----------------------------

    def _on_event(self, event: Event) -> None:
        rt = event.rt
        obj = event.current.obj
        key = (event.namespace, event.name)
        if rt is self.pods:
            if event.type == "ADDED":
                self._start_pod(event.current, fresh=True)
            ref = _controller_ref(obj)
            if ref is not None:
                if ref.get("kind") == "ReplicaSet":
                    self._dirty_rs.add((event.namespace, str(ref.get("name"))))
                elif ref.get("kind") == "Job":
                    self._dirty_jobs.add((event.namespace, str(ref.get("name"))))
        elif rt is self.replicasets:
            self._dirty_rs.add(key)
        elif rt is self.deployments:
            self._dirty_deploy.add(key)
        elif rt is self.jobs:
            self._dirty_jobs.add(key)
        elif rt is self.namespaces and obj["metadata"].get("deletionTimestamp"):
            if event.type != "DELETED":
                self._terminating.add(event.name)
                self._dirty_ns.add(event.name)
            else:
                self._terminating.discard(event.name)
        if event.type == "DELETED":
            self._gc_owners.add(str(obj["metadata"].get("uid", "")))
            if event.namespace in self._terminating:
                self._dirty_ns.add(event.namespace)
        elif obj["metadata"].get("ownerReferences"):
            before = event.previous.obj["metadata"] if event.previous is not None else {}
            if before.get("ownerReferences") != obj["metadata"].get("ownerReferences"):
                self._gc_objects.add((rt.key, event.namespace, event.name))
        self._wake.set()

    def _has_work(self) -> bool:
        return bool(
            self._dirty_rs
            or self._dirty_deploy
            or self._dirty_jobs
            or self._gc_owners
            or self._gc_objects
            or self._dirty_ns
        )

    # --- the work loop --------------------------------------------------------------------

    async def _run_work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._has_work():
                self.process_batch(_BATCH)
                await asyncio.sleep(0)

    def process_batch(self, limit: int) -> None:
        """Handle up to ``limit`` dirty keys. GC first, so controllers see settled owners."""
        done = 0
        while done < limit and self._has_work():
            done += 1
            try:
                if self._gc_owners:
                    self._collect_dependents(self._gc_owners.pop())
                elif self._gc_objects:
                    type_key, ns, name = self._gc_objects.pop()
                    rt = self.store.registry.find_key(type_key)  # None: its CRD is gone
                    stored = None if rt is None else self.store.find(rt, namespace=ns, name=name)
                    if rt is not None and stored is not None:
                        self._collect(rt, stored)
                elif self._dirty_ns:
                    self._reconcile_namespace(self._dirty_ns.pop())
                elif self._dirty_rs:
                    self._reconcile_replicaset(*self._dirty_rs.pop())
                elif self._dirty_deploy:
                    self._reconcile_deployment(*self._dirty_deploy.pop())
                elif self._dirty_jobs:
                    self._reconcile_job(*self._dirty_jobs.pop())
            except ApiError as exc:
                # A concurrent client write won the race; the event it made requeues the key.
                log.debug("devcluster controller write failed: %s", exc.message)
            except Exception:
                log.exception("devcluster controller failed")

    # --- timers ---------------------------------------------------------------------------

    def _schedule(self, delay: float, action: TimerAction) -> None:
        due = self._now() + max(0.0, delay)
        if not self._timers or due < self._timers[0][0]:
            self._timer_wake.set()
        heapq.heappush(self._timers, (due, next(self._seq), action))

    async def _run_timers(self) -> None:
        while True:
            now = self._now()
            fired = 0
            while self._timers and self._timers[0][0] <= now and fired < _BATCH:
                _, _, action = heapq.heappop(self._timers)
                fired += 1
                try:
                    self.fire(action)
                except ApiError as exc:
                    log.debug("devcluster timer write failed: %s", exc.message)
                except Exception:
                    log.exception("devcluster timer failed")
            if fired:
                await asyncio.sleep(0)
                continue
            self._timer_wake.clear()
            timeout = self._timers[0][0] - now if self._timers else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._timer_wake.wait(), timeout)

    def fire(self, action: TimerAction) -> None:
        kind, ns, name, uid = action
        if kind == "pod":
            self._scheduled.discard(uid)
            self._make_pod_ready(ns, name, uid)
        elif kind == "rs":
            self._dirty_rs.add((ns, name))
            self._wake.set()
        elif kind == "job":
            self._scheduled.discard(uid)
            self._finish_job(ns, name, uid)

    # --- garbage collection ---------------------------------------------------------------

    def _collect_dependents(self, owner_uid: str) -> None:
        if self.store.get_by_uid(owner_uid) is not None:
            return
        for rt, stored in self.store.dependents_of(owner_uid):
            self._collect(rt, stored)

    def _collect(self, rt: ResourceType, stored: Stored) -> None:
        """Delete ``stored`` when none of its owners exists; drop dangling references when
        some do (the real GC's attemptToDeleteItem, minus foreground bookkeeping)."""
        refs = stored.metadata.get("ownerReferences") or []
        if not refs or stored.metadata.get("deletionTimestamp"):
            return
        absent = [
            str(r.get("uid"))
            for r in refs
            if (found := self.store.get_by_uid(str(r.get("uid")))) is None
            or found[1].obj.get("kind") != r.get("kind")
        ]
        if not absent:
            return
        ns = stored.metadata.get("namespace")
        name = stored.metadata["name"]
        if len(absent) < len(refs):
            current = stored
            for uid in absent:
                current = self.store.remove_owner_reference(rt, stored=current, owner_uid=uid)
            return
        self.store.delete(rt, namespace=ns, name=name, propagation="Background")

    def _reconcile_namespace(self, name: str) -> None:
        if name not in self._terminating:
            return
        for rt in self.store.registry.storage_types:
            if not rt.namespaced:
                continue
            for stored in list(self.store.iter_objects(rt, name)):
                if not stored.metadata.get("deletionTimestamp"):
                    self.store.delete(
                        rt, namespace=name, name=stored.metadata["name"], propagation="Background"
                    )
        if self.store.namespace_is_empty(name):
            self.store.finalize_namespace(name)

    # --- ReplicaSets and pods -------------------------------------------------------------

    def _is_bad(self, spec: JSONDict) -> bool:
        for container in spec.get("containers") or []:
            if fnmatch.fnmatchcase(str(container.get("image", "")), self.bad_image_pattern):
                return True
        return False

    def _owned_pods(self, owner_uid: str) -> list[Stored]:
        pods: list[Stored] = []
        for rt, stored in self.store.dependents_of(owner_uid):
            if rt is not self.pods or stored.metadata.get("deletionTimestamp"):
                continue
            ref = _controller_ref(stored.obj)
            if ref is not None and ref.get("uid") == owner_uid:
                pods.append(stored)
        return pods

    def _new_pod(self, owner: Stored, owner_rt: ResourceType, template: JSONDict) -> Stored:
        meta = owner.metadata
        tmeta = template.get("metadata") or {}
        pod_meta: JSONDict = {
            "generateName": f"{meta['name']}-",
            "namespace": meta["namespace"],
            "labels": dict(tmeta.get("labels") or {}),
            "ownerReferences": [
                {
                    "apiVersion": owner_rt.api_version,
                    "kind": owner_rt.kind,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        }
        if tmeta.get("annotations"):
            pod_meta["annotations"] = dict(tmeta["annotations"])
        body = {"metadata": pod_meta, "spec": dict(template.get("spec") or {})}
        return self.store.create(self.pods, namespace=meta["namespace"], body=body)

    def _start_pod(self, pod: Stored, *, fresh: bool) -> None:
        """The kubelet's part: schedule readiness ``ready_delay`` after creation, once.

        ``fresh`` pods were just created; others (loaded from a snapshot) count their age
        from creationTimestamp.
        """
        uid = str(pod.metadata["uid"])
        status = pod.obj.get("status") or {}
        if (
            uid in self._scheduled
            or pod.metadata.get("deletionTimestamp")
            or status.get("containerStatuses")  # already started, failed or finished
            or status.get("phase") in ("Succeeded", "Failed")
        ):
            return
        age = 0.0
        created = pod.metadata.get("creationTimestamp")
        if not fresh and created:
            age = max(0.0, self.store.clock() - _parse_ts(created))
        self._scheduled.add(uid)
        self._schedule(
            self.ready_delay - age,
            ("pod", pod.metadata["namespace"], pod.metadata["name"], uid),
        )

    def _reconcile_replicaset(self, ns: str, name: str) -> None:
        rs = self.store.find(self.replicasets, namespace=ns, name=name)
        if rs is None or rs.metadata.get("deletionTimestamp"):
            return
        spec = rs.obj.get("spec") or {}
        uid = str(rs.metadata["uid"])
        pods = self._owned_pods(uid)
        desired = int(spec.get("replicas", 1) or 0)
        template = spec.get("template") or {}
        if len(pods) < desired:
            for _ in range(desired - len(pods)):
                pods.append(self._new_pod(rs, self.replicasets, template))
        elif len(pods) > desired:
            surplus = calculate_deletion_order(pods)[: len(pods) - desired]
            for pod in surplus:
                self.store.delete(self.pods, namespace=ns, name=pod.metadata["name"])
            gone = {id(p) for p in surplus}
            pods = [p for p in pods if id(p) not in gone]
        self._write_rs_status(rs, pods)

    def _write_rs_status(self, rs: Stored, pods: list[Stored]) -> None:
        spec = rs.obj.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.store.clock()
        ready = available = fully = 0
        next_check: float | None = None
        for pod in pods:
            labels = pod.metadata.get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully += 1
            if not pod_is_ready(pod.obj):
                continue
            ready += 1
            since = _ready_since(pod.obj)
            waited = now - _parse_ts(since) if since else float(min_ready)
            if waited >= min_ready:
                available += 1
            else:
                remaining = min_ready - waited
                next_check = remaining if next_check is None else min(next_check, remaining)
        if next_check is not None:
            self._schedule(
                next_check + 0.01, ("rs", rs.metadata["namespace"], rs.metadata["name"], "")
            )
        status: JSONDict = {
            k: v
            for k, v in (rs.obj.get("status") or {}).items()
            if k
            not in (
                "replicas",
                "fullyLabeledReplicas",
                "readyReplicas",
                "availableReplicas",
                "observedGeneration",
            )
        }
        status["replicas"] = len(pods)
        for key, value in (
            ("fullyLabeledReplicas", fully),
            ("readyReplicas", ready),
            ("availableReplicas", available),
            ("observedGeneration", int(rs.metadata.get("generation", 1))),
        ):
            if value:
                status[key] = value
        self._write_status(self.replicasets, rs, status)

    def _write_status(self, rt: ResourceType, stored: Stored, status: JSONDict) -> None:
        if stored.obj.get("status") == status:
            return
        self.store.update(
            rt,
            namespace=stored.metadata.get("namespace"),
            name=stored.metadata["name"],
            body={**stored.obj, "status": status},
            subresource="status",
        )

    def _make_pod_ready(self, ns: str, name: str, uid: str) -> None:
        pod = self.store.find(self.pods, namespace=ns, name=name)
        if pod is None or pod.metadata.get("uid") != uid or pod.metadata.get("deletionTimestamp"):
            return
        if (pod.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        now = self.store.now_timestamp()
        spec = pod.obj.get("spec") or {}
        bad = self._is_bad(spec)
        self._pod_ip += 1
        ip = f"10.244.{(self._pod_ip // 250) % 250}.{self._pod_ip % 250 + 1}"

        def cond(kind: str, ok: bool) -> JSONDict:
            return {
                "type": kind,
                "status": "True" if ok else "False",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            }

        containers: list[JSONDict] = []
        for c in spec.get("containers") or []:
            state: JSONDict
            if bad:
                state = {
                    "waiting": {
                        "reason": "ImagePullBackOff",
                        "message": f'Back-off pulling image "{c.get("image")}"',
                    }
                }
            else:
                state = {"running": {"startedAt": now}}
            containers.append(
                {
                    "name": c.get("name"),
                    "image": c.get("image"),
                    "imageID": "",
                    "ready": not bad,
                    "started": not bad,
                    "restartCount": 0,
                    "state": state,
                }
            )
        status: JSONDict = {
            **(pod.obj.get("status") or {}),
            "phase": "Pending" if bad else "Running",
            "conditions": [
                cond("PodReadyToStartContainers", True),
                cond("Initialized", True),
                cond("Ready", not bad),
                cond("ContainersReady", not bad),
                cond("PodScheduled", True),
            ],
            "hostIP": "10.0.0.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "containerStatuses": containers,
        }
        self._write_status(self.pods, pod, status)

    # --- Deployments ----------------------------------------------------------------------

    def _reconcile_deployment(self, ns: str, name: str) -> None:
        deploy = self.store.find(self.deployments, namespace=ns, name=name)
        if deploy is None or deploy.metadata.get("deletionTimestamp"):
            return
        replicas = int((deploy.obj.get("spec") or {}).get("replicas", 1) or 0)
        old = deploy.obj.get("status") or {}
        status: JSONDict = {"observedGeneration": int(deploy.metadata.get("generation", 1))}
        for key in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
            if replicas:
                status[key] = replicas
        now = self.store.now_timestamp()
        conditions: list[JSONDict] = []
        for kind, reason, message in (
            ("Available", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            ("Progressing", "NewReplicaSetAvailable", "The deployment has progressed."),
        ):
            previous: dict[str, Any] = next(
                (c for c in old.get("conditions") or [] if c.get("type") == kind), {}
            )
            conditions.append(
                {
                    "type": kind,
                    "status": "True",
                    "lastUpdateTime": previous.get("lastUpdateTime", now),
                    "lastTransitionTime": previous.get("lastTransitionTime", now),
                    "reason": reason,
                    "message": message,
                }
            )
        status["conditions"] = conditions
        self._write_status(self.deployments, deploy, status)

    # --- Jobs -----------------------------------------------------------------------------

    @staticmethod
    def _job_finished(job: Stored) -> bool:
        for cond in (job.obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
                return True
        return False

    def _reconcile_job(self, ns: str, name: str) -> None:
        job = self.store.find(self.jobs, namespace=ns, name=name)
        if job is None or job.metadata.get("deletionTimestamp") or self._job_finished(job):
            return
        spec = job.obj.get("spec") or {}
        if spec.get("suspend"):
            return
        uid = str(job.metadata["uid"])
        template = spec.get("template") or {}
        pods = self._owned_pods(uid)
        if not pods:
            self._new_pod(job, self.jobs, template)
        status = job.obj.get("status") or {}
        if "startTime" not in status or status.get("active") != 1:
            new_status = {**status, "active": 1, "ready": 0, "terminating": 0}
            new_status.setdefault("startTime", self.store.now_timestamp())
            new_status.setdefault("uncountedTerminatedPods", {})
            self._write_status(self.jobs, job, new_status)
        if uid not in self._scheduled:
            self._scheduled.add(uid)
            started = status.get("startTime")
            elapsed = self.store.clock() - _parse_ts(started) if started else 0.0
            self._schedule(
                job_seconds(template, self.job_duration) - max(0.0, elapsed),
                ("job", ns, name, uid),
            )

    def _finish_job(self, ns: str, name: str, uid: str) -> None:
        job = self.store.find(self.jobs, namespace=ns, name=name)
        if job is None or job.metadata.get("uid") != uid or self._job_finished(job):
            return
        template = (job.obj.get("spec") or {}).get("template") or {}
        code = job_exit_code(template)
        now = self.store.now_timestamp()
        for pod in self._owned_pods(uid):
            pod_status = {
                **(pod.obj.get("status") or {}),
                "phase": "Succeeded" if code == 0 else "Failed",
                "startTime": (pod.obj.get("status") or {}).get("startTime", now),
                "containerStatuses": [
                    {
                        "name": c.get("name"),
                        "image": c.get("image"),
                        "imageID": "",
                        "ready": False,
                        "started": False,
                        "restartCount": 0,
                        "state": {
                            "terminated": {
                                "exitCode": code,
                                "reason": "Completed" if code == 0 else "Error",
                                "startedAt": now,
                                "finishedAt": now,
                            }
                        },
                    }
                    for c in (pod.obj.get("spec") or {}).get("containers") or []
                ],
            }
            self._write_status(self.pods, pod, pod_status)
        status = {k: v for k, v in (job.obj.get("status") or {}).items() if k not in ("active",)}
        condition: JSONDict = {
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
        }
        if code == 0:
            status["succeeded"] = 1
            status["completionTime"] = now
            condition.update(
                type="Complete",
                reason="CompletionsReached",
                message="Reached expected number of succeeded pods",
            )
        else:
            status["failed"] = 1
            condition.update(
                type="Failed",
                reason="BackoffLimitExceeded",
                message="Job has reached the specified backoff limit",
            )
        status["conditions"] = [*(status.get("conditions") or []), condition]
        status["ready"] = 0
        self._write_status(self.jobs, job, status)

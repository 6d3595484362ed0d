"""An embedded, in-memory Kubernetes API server for development and tests.

No real API server can be installed on the machines this project targets, yet the controller
must talk to one exactly as it would to a real cluster. The devcluster serves the Kubernetes REST
API over real HTTP (aiohttp), so the official ``kubernetes`` client and kubectl reach it through
an ordinary kubeconfig and cannot tell the difference. Pointing the controller at a real cluster
needs no code change.

What it serves: core/v1 namespaces, services, pods, podtemplates, events, secrets,
configmaps; apps/v1 replicasets and deployments; batch/v1 jobs; networking.k8s.io/v1
ingresses; events.k8s.io/v1 events (the core/v1 events seen through the v1 field mapping,
see conversion.py); apiextensions.k8s.io/v1 customresourcedefinitions and every type they
define; discovery, ``/version`` and ``/healthz``. The argoproj.io types are CRDs like any
other: ``DevCluster`` installs the project's (``rollout_workers.api.crdgen.calculate_crds()``)
at start unless ``install_crds=False`` (``rollouts devcluster --no-crds``).

Behaviour worth knowing (each mirrors a real API server unless marked):

- Namespaced objects need an existing namespace (404 NotFound otherwise, 403 Forbidden while
  it terminates). ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease`` exist
  at startup. Deleting a namespace marks it Terminating; its objects are deleted, then it goes.
- PUT without ``metadata.resourceVersion`` is an unconditional update for built-in types and a
  422 for custom resources (as for a real CRD). A resourceVersion in a PUT or inside a PATCH is a
  precondition: 409 Conflict when stale. A write that changes nothing keeps the resourceVersion.
- PATCH: ``application/merge-patch+json``, ``application/json-patch+json`` and, for built-in
  types, ``application/strategic-merge-patch+json`` (common list merge keys; see patches.py).
  The official Python client sends strategic merge patch for a dict body to the typed built-in
  APIs and merge patch to CustomObjectsApi; custom resources refuse strategic merge patch (415).
- CRDs (crds.py): validated and given status (NamesAccepted, Established, acceptedNames,
  storedVersions) as apiextensions-apiserver does; served at once, per served version, with the
  version's status/scale subresources; updates apply at once. Without a status subresource
  ``/status`` is 404 and main-resource writes change status. Deleting a CRD marks it
  Terminating, deletes its objects (their finalizers hold it), then stops serving the type and
  ends its watches. Names another CRD of the group holds are refused (NamesAccepted False,
  not served until freed). Not done: value validation and defaulting from the schema, webhook
  conversion.
- Every write to a custom resource is pruned by its version's ``openAPIV3Schema`` (pruning.py);
  the pruned paths are kept per type: ``GET /_devcluster/pruned`` (``DELETE`` also clears
  them), ``DevCluster.pruned_fields()``. ``fieldValidation``: Strict (kubectl's default) refuses
  such a write with 400, Warn (the default) answers ``Warning`` headers, Ignore is silent.
  Reads are pruned too (after a schema change, and through another version's schema).
- Custom resources are printed server-side (a meta.k8s.io/v1 Table of the CRD's
  ``additionalPrinterColumns``, tables.py) for ``kubectl get``, and their schemas are in
  ``/openapi/v3`` for ``kubectl explain``.
- Watches keep a bounded history per type (``history_size`` events, default 1,000, about a real
  watch cache's size); an older resourceVersion gets an ERROR event with a 410 ``Expired``
  Status inside the stream (reason ``Expired`` is what a real server sends for "too old
  resource version"). ``DevCluster.force_gone()`` or ``POST
  /_devcluster/compact`` compacts the history now and ends open watches with that error.
  Paginated LISTs are consistent snapshots at the first page's resourceVersion while the history
  reaches back that far; beyond it later pages show current objects (a deviation: a real server
  would answer 410), and continue tokens expire (410) only on a forced compaction.
- Garbage collection by ownerReference uid, in the background; ``propagationPolicy`` Orphan and
  Foreground are honoured (Foreground deletes dependents synchronously). batch/v1 Jobs default to
  Orphan, as on a real server.

Kubelet-less controllers (see controllers.py): ReplicaSets get pods ``<rs>-<5 chars>`` that are
Ready after ``ready_delay`` seconds unless an image matches ``bad_image_pattern`` (default
``*:bad*``; such pods stay Pending in ImagePullBackOff). Deployments report ``spec.replicas`` as
ready at once and create no ReplicaSets.

Jobs: each Job gets one pod and finishes ``job_duration`` seconds later (default: the ready
delay; ``DEVCLUSTER_JOB_SECONDS`` in the first container's env overrides it). It fails
(``status.failed=1``, condition ``Failed``/BackoffLimitExceeded, pod phase Failed) when the first
container's env has ``DEVCLUSTER_EXIT_CODE`` set to a non-zero integer, or, without that variable,
when its command + args contain ``exit N`` with N non-zero (e.g. ``["sh", "-c", "exit 1"]``);
otherwise it succeeds (``status.succeeded=1``, condition ``Complete``). There are no retries.

Entry points: ``server.DevCluster`` (async), ``server.run_in_thread`` / ``DevClusterThread``
(tests), ``server.serve`` and the ``devcluster`` click command in ``cli.py`` (``python -m
devcluster``, or ``rollouts devcluster``). It is one of the stand-ins (standins/, a distribution of
its own beside the controller's): the controller never imports it, and its image does not carry it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devcluster.server import (
        DevCluster,
        DevClusterThread,
        run_in_thread,
        serve,
    )

__all__ = ["DevCluster", "DevClusterThread", "run_in_thread", "serve"]


def __getattr__(name: str) -> Any:
    # Lazy, so that attaching the CLI command does not import aiohttp.
    if name in __all__:
        from devcluster import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Running the devcluster: the server object, a background-thread runner, and ``serve``.

``DevCluster`` wires the store, the in-server controllers and the HTTP layer on one event loop
and binds a port. Tests use ``DevClusterThread`` (its own loop in a daemon thread, so plain
blocking test code can talk to it through the official client); the CLI uses ``serve``, which
runs in the foreground until SIGINT or SIGTERM. Admin hooks that tests need (forcing 410 Gone)
are methods here and ``/_devcluster/`` paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import yaml
from aiohttp import web

from devcluster.controllers import Controllers
from devcluster.errors import JSONDict
from devcluster.history import DEFAULT_HISTORY_SIZE
from devcluster.http import ApiHandler
from devcluster.resources import CRD_KEY, Registry
from devcluster.store import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
CONTEXT_NAME = "devcluster"


def kubeconfig_for(url: str, *, namespace: str = "default", token: str = "") -> dict[str, Any]:
    """A kubeconfig dict whose current context ``devcluster`` points at ``url``. The server
    authenticates nobody; a ``token`` only names the caller in the audit log (audit.py)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT_NAME, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT_NAME, "user": {"token": token} if token else {}}],
        "contexts": [
            {
                "name": CONTEXT_NAME,
                "context": {"cluster": CONTEXT_NAME, "user": CONTEXT_NAME, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT_NAME,
        "preferences": {},
    }


@functools.cache
def _project_crds_json() -> str:
    """The generated CRDs, computed once per process (tests start many devclusters)."""
    from rollout_workers.api.crdgen import calculate_crds

    return json.dumps(calculate_crds())


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


class DevCluster:
    """The embedded API server. ``await start()`` binds; ``await stop()`` shuts down (and
    writes the state file when one is configured).

    ``install_crds`` (default True) installs the project's argoproj.io CRDs at start, after
    the state file is loaded (a stored CRD whose spec differs from the generated one is
    updated); with False the API serves no argoproj.io types until a client creates CRDs.
    ``history_size``: watch events kept per type (``DEFAULT_HISTORY_SIZE``)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ready_delay: float = 2.0,
        bad_image_pattern: str = "*:bad*",
        history_size: int = DEFAULT_HISTORY_SIZE,
        bookmark_interval: float = 60.0,
        state_file: Path | None = None,
        job_duration: float | None = None,
        install_crds: bool = True,
    ) -> None:
        self.host = host
        self.requested_port = port
        self.state_file = state_file
        self.install_crds = install_crds
        self.registry = Registry()
        self.store = Store(self.registry, history_size=history_size)
        self.controllers: Controllers | None = None
        self._ready_delay = ready_delay
        self._bad_image_pattern = bad_image_pattern
        self._job_duration = job_duration
        self.handler = ApiHandler(
            self.store,
            self.registry,
            bookmark_interval=bookmark_interval,
            server_address=lambda: f"{self.host}:{self.port}",
            on_compact=self.force_gone,
        )
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        if not self.port:
            raise RuntimeError("the devcluster is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        if self.state_file is not None and self.state_file.exists():
            self.store.restore(json.loads(self.state_file.read_text()))
        self.store.ensure_namespaces()
        if self.install_crds:
            self.install_project_crds()
        self.controllers = Controllers(
            self.store,
            self.registry,
            ready_delay=self._ready_delay,
            bad_image_pattern=self._bad_image_pattern,
            job_duration=self._job_duration,
        )
        self.controllers.start()
        runner = web.AppRunner(
            self.handler.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        log.info("devcluster listening on %s", self.url)

    async def stop(self) -> None:
        self.handler.close_streams()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.controllers is not None:
            await self.controllers.stop()
        if self.state_file is not None:
            self.save_state(self.state_file)

    def install_project_crds(self) -> None:
        """Install (or bring up to date) the argoproj.io CRDs generated from the models."""
        for crd in json.loads(_project_crds_json()):
            self.apply_crd(crd)

    def apply_crd(self, crd: JSONDict) -> JSONDict:
        """Create a CRD, or replace the spec (and labels/annotations) of the one of that
        name, as ``kubectl apply`` would; served at once. Returns the stored CRD."""
        rt = self.registry.by_key(CRD_KEY)
        name = str(crd["metadata"]["name"])
        current = self.store.find(rt, namespace=None, name=name)
        if current is None:
            return self.store.create(rt, namespace=None, body=crd).obj
        meta = {**current.metadata}
        for key in ("labels", "annotations"):
            if key in crd["metadata"]:
                meta[key] = crd["metadata"][key]
        body = {**current.obj, "metadata": meta, "spec": crd["spec"]}
        return self.store.update(rt, namespace=None, name=name, body=body).obj

    def pruned_fields(self) -> dict[str, list[str]]:
        """Per custom resource type (``<plural>.<group>``), the field paths the API has
        pruned from writes because the CRD's schema lacks them (list indices as ``[]``, map
        keys as ``*``). Also served at ``GET /_devcluster/pruned``."""
        return self.store.pruned_fields()

    def clear_pruned_fields(self) -> None:
        self.store.clear_pruned_fields()

    def save_state(self, path: Path) -> None:
        _write_atomically(path, json.dumps(self.store.snapshot()))

    def force_gone(self) -> int:
        """Compact the watch history now: every open watch gets an ERROR 410 (Expired) and
        ends, and any watch or continue token from an older resourceVersion gets 410."""
        return self.store.force_gone()

    def write_kubeconfig(self, path: Path, *, namespace: str = "default", token: str = "") -> Path:
        config = kubeconfig_for(self.url, namespace=namespace, token=token)
        _write_atomically(path, yaml.safe_dump(config, sort_keys=False))
        return path


class DevClusterThread:
    """A ``DevCluster`` on its own event loop in a daemon thread, for blocking callers."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="devcluster", daemon=True)
        self._started: Future[None] = Future()
        self.cluster: DevCluster | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def boot() -> None:
            self.cluster = DevCluster(**self._options)
            await self.cluster.start()

        try:
            self._loop.run_until_complete(boot())
        except BaseException as exc:
            self._started.set_exception(exc)
            return
        self._started.set_result(None)
        self._loop.run_forever()
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    def start(self, timeout: float = 30.0) -> DevClusterThread:
        self._thread.start()
        self._started.result(timeout)
        return self

    @property
    def url(self) -> str:
        assert self.cluster is not None
        return self.cluster.url

    @property
    def port(self) -> int:
        assert self.cluster is not None
        return self.cluster.port

    def call(self, fn: Callable[[DevCluster], T], timeout: float = 30.0) -> T:
        """Run ``fn(cluster)`` on the server's loop (the store is single-threaded)."""
        assert self.cluster is not None
        cluster = self.cluster

        async def run() -> T:
            return fn(cluster)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def force_gone(self) -> int:
        return self.call(lambda c: c.force_gone())

    def pruned_fields(self) -> dict[str, list[str]]:
        return self.call(lambda c: c.pruned_fields())

    def clear_pruned_fields(self) -> None:
        self.call(lambda c: c.clear_pruned_fields())

    def apply_crd(self, crd: JSONDict) -> JSONDict:
        return self.call(lambda c: c.apply_crd(crd))

    def write_kubeconfig(self, path: Path, *, namespace: str = "default", token: str = "") -> Path:
        return self.call(lambda c: c.write_kubeconfig(path, namespace=namespace, token=token))

    def audit(self, *, clear: bool = False) -> list[dict[str, Any]]:
        """The audit log's distinct calls with counts (audit.py); ``clear`` empties it after."""

        def read(c: DevCluster) -> list[dict[str, Any]]:
            calls = c.handler.audit.calls()
            if clear:
                c.handler.audit.clear()
            return calls

        return self.call(read)

    def stop(self, timeout: float = 30.0) -> None:
        if self.cluster is not None and self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self.cluster.stop(), self._loop).result(timeout)
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    def __enter__(self) -> DevClusterThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def run_in_thread(**options: Any) -> DevClusterThread:
    """Start a devcluster in a background thread; ``.stop()`` it when done."""
    return DevClusterThread(**options).start()


def serve(
    *,
    on_ready: Callable[[DevCluster], None] | None = None,
    on_exit: Callable[[DevCluster], None] | None = None,
    **options: Any,
) -> None:
    """Run a devcluster in the foreground until SIGINT or SIGTERM."""

    async def main() -> None:
        cluster = DevCluster(**options)
        await cluster.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        try:
            if on_ready is not None:
                on_ready(cluster)
            await stop.wait()
        finally:
            await cluster.stop()
            if on_exit is not None:
                on_exit(cluster)

    asyncio.run(main())

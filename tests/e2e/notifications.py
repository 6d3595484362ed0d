"""Notifications end to end, with Argo's own catalog (notifications-install.yaml of v1.9.1) and
a webhook service pointed at a receiver on loopback. The scenario runs in the chaos run of
tests/e2e/test_rollouts.py, where worker hosts are killed with SIGKILL throughout: every count
below is exact, so a lost notification fails it, and so does a duplicate, except of a job
whose sender was killed mid-send (delivery is at least once).

A canary subscribed to `on-rollout-step-completed` and `on-rollout-completed` gets exactly one
message per step ("step number 1/2": rendered with the rollout as it stood when the step
completed) and one at the end; an abort sends once; a `when` that does not hold sends nothing
and one that holds sends; a template calling `env` sends nothing and leaves a Warning event.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from rollout_workers.kube import manifests
from rollout_workers.kube import resources as r
from rollout_workers.notifications.delivery import FAILED_REASON
from rollout_workers.notifications.source import CONFIGMAP_NAME
from tests.e2e import test_rollouts as e2e
from tests.e2e.test_rollouts import World
from tests.support.procs import wait_for
from tests.support.receiver import Receiver

CATALOG = (
    Path(__file__).parents[1] / "unit/notifications/testdata/notifications-install-v1.9.1.yaml"
)
#: Where the controller reads the ConfigMap: the default (no POD_NAMESPACE in the tests).
CONTROLLER_NAMESPACE = "argo-rollouts"
SUBSCRIBE = "notifications.argoproj.io/subscribe"


def catalog_configmap(url: str) -> dict[str, object]:
    """Argo's catalog, a webhook service `hook` (no webhook block in the catalog's templates:
    a GET with the message as body), and three triggers of ours."""
    (configmap,) = [d for d in yaml.safe_load_all(CATALOG.read_text()) if d]
    data = dict(configmap["data"])
    data["service.webhook.hook"] = yaml.safe_dump({"url": url})
    # A `when` that holds and one that does not.
    data["trigger.on-rollout-updated"] = (
        "- when: rollout.metadata.name == 'notify'\n  send: [rollout-updated]\n"
    )
    data["trigger.on-rollout-paused"] = (
        "- when: rollout.metadata.name == 'someone-else'\n  send: [rollout-paused]\n"
    )
    # sprig's env is not there: the template fails to load, nothing is sent.
    data["template.leak"] = 'message: \'{{env "HOME"}} {{env "ROLLOUTS_REDIS_URL"}}\'\n'
    data["trigger.on-rollout-step-completed"] = (
        "- send: [rollout-step-completed]\n- when: 'true'\n  send: [leak]\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP_NAME, "namespace": CONTROLLER_NAMESPACE},
        "data": data,
    }


def exactly_once(w: World) -> None:
    receiver = Receiver().start()
    try:
        _exactly_once(w, receiver)
    finally:
        receiver.stop()


def _messages(receiver: Receiver) -> Counter[str]:
    return Counter(req.body.decode() for req in receiver.received())


def _settle(
    w: World, receiver: Receiver, expected: Counter[str], what: str, timeout: float = e2e.TIMEOUT
) -> None:
    """Wait until at least `expected` arrived, then a little longer: nothing more may come.

    Delivery is at least once: a sender killed between its POST and recording it sent leaves
    the job to be sent again. So a message may come once more for each notification job of
    this rollout that a killed host held, and never otherwise."""
    deadline = time.monotonic() + timeout
    while not all(_messages(receiver)[m] >= n for m, n in expected.items()):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: expected {dict(expected)}, got {dict(_messages(receiver))}"
            )
        time.sleep(0.2)
    time.sleep(3)  # a duplicate would come from a retried job: seconds, not minutes
    got = _messages(receiver)
    extra = sum(got[m] - n for m, n in expected.items())  # counts are since the start
    interrupted = w.interrupted("notifications", f"{w.namespace}/")
    assert all(got[m] >= n for m, n in expected.items()), (what, dict(got))
    assert extra <= interrupted, (what, dict(got), f"{interrupted} jobs interrupted by a kill")


def _exactly_once(w: World, receiver: Receiver) -> None:
    manifests.ensure_namespace(w.kube, CONTROLLER_NAMESPACE)
    manifests.apply(w.kube, catalog_configmap(receiver.url("/hook")), CONTROLLER_NAMESPACE)
    name = "notify"
    ro = e2e.canary(name, 2, [{"setWeight": 50}, {"pause": {}}])
    ro["metadata"]["annotations"] = {
        f"{SUBSCRIBE}.{trigger}.hook": ""
        for trigger in (
            "on-rollout-step-completed", "on-rollout-completed", "on-rollout-aborted",
            "on-rollout-updated", "on-rollout-paused",
        )
    }  # fmt: skip
    w.apply(ro)
    first = w.wait(name, e2e.promoted, "first deploy")
    # The first deploy notifies too (a job can wait out a killed worker's lease: seconds).
    updated, completed = "Rollout notify has been updated.", "Rollout notify has been completed."
    _settle(w, receiver, Counter({updated: 1, completed: 1}), "the first deploy's notifications")

    w.cli("set", "image", name, "app=demo:2")
    w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused at the pause step")
    w.cli("promote", name)
    w.wait(name, e2e.promoted_past(e2e.status(first)["stableRS"]), "promoted")
    step = "Rollout notify step number {}/2 has been completed."
    _settle(
        w,
        receiver,
        Counter({step.format(1): 1, step.format(2): 1, completed: 2, updated: 2}),
        "one message per step, one at the end",
    )  # fmt: skip
    assert not any("paused" in m for m in _messages(receiver)), _messages(receiver)

    w.cli("set", "image", name, "app=demo:3")
    w.wait(name, lambda o: e2e.phase(o) == "Paused", "paused again")
    w.cli("abort", name)
    w.wait(name, lambda o: e2e.phase(o) == "Degraded", "aborted")
    _settle(w, receiver, Counter({"Rollout notify has been aborted.": 1}), "one abort message")

    secrets = {os.environ.get("HOME", "/"), "redis://"}
    assert not any(s in m for m in _messages(receiver) for s in secrets), _messages(receiver)

    def failures() -> list[dict[str, Any]]:  # written by the worker's event sink: poll
        return [
            e for e in w.list(r.EVENTS)
            if e["reason"] == FAILED_REASON and e["involvedObject"]["name"] == name
        ]  # fmt: skip

    wait_for(failures, e2e.TIMEOUT, f"a {FAILED_REASON} event", interval=0.25)
    failed = failures()
    assert failed and all(e["type"] == "Warning" for e in failed), failed
    assert all("'leak'" in e["message"] and "env" in e["message"] for e in failed), failed

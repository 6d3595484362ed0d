"""Every overlay under deploy/ renders to a complete, self-consistent install.

Rendered with the small kustomize in `kustomize.py` (CI has no kubectl); each check runs on
every overlay, so a patch that breaks one (a probe port, a Secret name, a role binding) fails
here rather than in a cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import click
import pytest

from rollout_workers.celeryapp.app import celery_config
from rollout_workers.cli.main import cli
from rollout_workers.metrics.collector import QUEUE_NAMES
from rollout_workers.settings import Settings
from tests.unit.deploy.render import DEPLOY, Obj, ident, overlays, rendered

OVERLAYS = overlays()
APP_IMAGE = "ghcr.io/rollout-workers/rollout-workers:"
WORKLOADS = ("Deployment", "StatefulSet")

#: Secrets the user creates (never generated, so no password is in git); each is documented in
#: deploy/base/kustomization.yaml or the component that reads it.
USER_PROVIDED_SECRETS = {
    ("redis", "password"): "base/kustomization.yaml",
    ("redis", "url"): "components/external-redis/kustomization.yaml",
    ("flower", "basic-auth"): "base/kustomization.yaml",
}

#: The health contract of every long-running `rollouts` process (--health-port, default 8080).
HEALTH_PORT = 8080
#: The pool-wide metrics of the leading watcher (--metrics-port, default 8090).
METRICS_PORT = 8090


def by_kind(objs: tuple[Obj, ...], *kinds: str) -> list[Obj]:
    return [o for o in objs if o["kind"] in kinds]


def pod_specs(objs: tuple[Obj, ...]) -> Iterator[tuple[Obj, Obj]]:
    for w in by_kind(objs, *WORKLOADS):
        yield w, w["spec"]["template"]["spec"]


def containers(objs: tuple[Obj, ...]) -> Iterator[tuple[Obj, Obj]]:
    for w, spec in pod_specs(objs):
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            yield w, c


def is_app(container: Obj) -> bool:
    return str(container["image"]).startswith(APP_IMAGE)


def selects(selector: Obj, labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        if expr["operator"] == "In" and labels.get(expr["key"]) not in expr["values"]:
            return False
        if expr["operator"] not in ("In",):
            raise AssertionError(f"selector operator {expr['operator']} not checked here")
    return True


def pod_labels(w: Obj) -> dict[str, str]:
    return dict(w["spec"]["template"]["metadata"]["labels"])


def port_number(container: Obj, port: Any) -> int:
    if isinstance(port, int):
        assert any(p["containerPort"] == port for p in container.get("ports", [])), port
        return port
    named = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    assert port in named, f"{container['name']}: no port named {port}"
    return int(named[port])


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion; an undefined variable would stay literal, so it fails."""

    def sub(m: re.Match[str]) -> str:
        assert m.group(1) in env, f"$({m.group(1)}) is not defined in the container's env"
        return env[m.group(1)]

    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, value)


def container_env(c: Obj) -> dict[str, str]:
    """Names defined by env (values from Secrets and fields get a stand-in)."""
    return {e["name"]: str(e.get("value", f"<{e['name']}>")) for e in c.get("env", [])}


def parse_cli(args: list[str]) -> click.Context:
    """Parse `rollouts <args>` with the real command's parser (no invocation)."""
    command = cli.commands.get(args[0])  # type: ignore[attr-defined]
    assert command is not None, f"`rollouts {args[0]}` is not a command"
    return command.make_context(f"rollouts {args[0]}", list(args[1:]))


def celery_queues() -> set[str]:
    """The queues the reconcile tasks are routed to (not the system queue)."""
    settings = Settings()
    routes = celery_config(settings, "redis://x")["task_routes"]
    return {r["queue"] for r in routes.values()} - {settings.queue.system}


# -- the tests ---------------------------------------------------------------------------------


def test_every_overlay_is_found() -> None:
    assert {
        "base", "namespaced", "ha", "external-redis", "redis-sentinel", "keda", "hpa"
    } <= set(OVERLAYS)  # fmt: skip


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_objects_are_unique_and_namespaced(overlay: str) -> None:
    objs = rendered(overlay)
    ids = [ident(o) for o in objs]
    assert len(ids) == len(set(ids))
    for o in objs:
        cluster_scoped = o["kind"] in (
            "Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"
        )  # fmt: skip
        assert bool(o["metadata"].get("namespace")) != cluster_scoped, ident(o)


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_containers_are_complete(overlay: str) -> None:
    objs = rendered(overlay)
    assert list(containers(objs))
    for w, c in containers(objs):
        where = f"{w['metadata']['name']}/{c['name']}"
        assert c["image"] and c["image"] != "rollout-workers", where  # the images: transform ran
        assert ":" in c["image"].split("/")[-1], f"{where}: image without a tag"
        for part in ("requests", "limits"):
            assert set(c.get("resources", {}).get(part, {})) == {"cpu", "memory"}, where
        assert c.get("livenessProbe") and c.get("readinessProbe"), where
        assert c.get("securityContext", {}).get("allowPrivilegeEscalation") is False, where


def effective_port(objs: tuple[Obj, ...], c: Obj, option: str, env_name: str) -> int:
    """The port a `rollouts` process listens on: its option, else the environment (the
    container's env over its envFrom ConfigMaps), else the settings' default."""
    params = parse_cli([expand(a, container_env(c)) for a in c["args"]]).params
    if params.get(option) is not None:
        return int(params[option])
    env: dict[str, str] = {}
    configmaps = {o["metadata"]["name"]: o for o in by_kind(objs, "ConfigMap")}
    for src in c.get("envFrom", []):
        env.update(configmaps[src["configMapRef"]["name"]].get("data") or {})
    env.update({e["name"]: e["value"] for e in c.get("env", []) if "value" in e})
    if env_name in env:
        return int(env[env_name])
    section = env_name.removeprefix("ROLLOUTS_").split("_")[0].lower()
    return int(getattr(Settings(), section).port)


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_probes_hit_the_health_endpoints(overlay: str) -> None:
    objs = rendered(overlay)
    for _, c in containers(objs):
        if not is_app(c):
            continue
        live, ready = c["livenessProbe"]["httpGet"], c["readinessProbe"]["httpGet"]
        if c["args"][0] == "flower":
            assert (live["path"], ready["path"]) == ("/healthcheck", "/healthcheck")
            assert port_number(c, live["port"]) == port_number(c, ready["port"]) == 5555
            continue
        health = effective_port(objs, c, "health_port", "ROLLOUTS_HEALTH_PORT")
        assert health == HEALTH_PORT
        assert (live["path"], ready["path"]) == ("/healthz", "/readyz"), c["name"]
        assert port_number(c, live["port"]) == port_number(c, ready["port"]) == health
        if c["args"][0] == "watcher":
            metrics = effective_port(objs, c, "metrics_port", "ROLLOUTS_METRICS_PORT")
            assert metrics == METRICS_PORT
            assert port_number(c, "metrics") == metrics


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_args_are_real_rollouts_commands_with_valid_options(overlay: str) -> None:
    seen = set()
    for _, c in containers(rendered(overlay)):
        if not is_app(c):
            continue
        args = [expand(a, container_env(c)) for a in c["args"]]
        ctx = parse_cli(args)
        seen.add(args[0])
        if args[0] == "flower":
            assert ctx.params["address"] == "0.0.0.0"
            names = {e["name"] for e in c["env"]}
            assert "ROLLOUTS_FLOWER_BASIC_AUTH" in names  # required off loopback
    assert seen == {"watcher", "worker", "beat", "flower"}


def test_parse_cli_rejects_what_the_cli_rejects() -> None:
    with pytest.raises(click.UsageError):
        parse_cli(["watcher", "--no-such-option"])
    with pytest.raises(AssertionError):
        parse_cli(["no-such-command"])


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_every_process_reaches_redis_with_its_password(overlay: str) -> None:
    objs = rendered(overlay)
    services = {s["metadata"]["name"] for s in by_kind(objs, "Service")}
    for _, c in containers(objs):
        if not is_app(c):
            continue
        env = {e["name"]: e for e in c["env"]}
        url = env["ROLLOUTS_REDIS_URL"]
        if url.get("value", "").startswith(
            "sentinel://"
        ):  # Sentinels: their pods by name, passwords from the Secret
            sentinels = _sentinel_hosts(objs)
            assert url["value"] == ";".join(f"sentinel://{h}:26379" for h in sentinels) + "/0"
            for name in ("ROLLOUTS_REDIS_PASSWORD", "ROLLOUTS_REDIS_SENTINEL_PASSWORD"):
                assert env[name]["valueFrom"]["secretKeyRef"] == {
                    "name": "redis", "key": "password"
                }  # fmt: skip
            assert env["ROLLOUTS_REDIS_SENTINEL_MASTER"]["value"] == _sentinel_master(objs)
            assert "REDIS_PASSWORD" not in env and "redis" not in services
            assert {"redis-server", "redis-sentinel"} <= services
        elif "value" in url:  # the in-cluster Redis: password from the Secret, expanded
            assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
                "name": "redis", "key": "password"
            }  # fmt: skip
            expanded = expand(url["value"], container_env(c))
            assert re.fullmatch(r"redis://:<REDIS_PASSWORD>@redis:6379/0", expanded)
            assert "redis" in services
            names = list(env)
            assert names.index("REDIS_PASSWORD") < names.index("ROLLOUTS_REDIS_URL")
        else:  # external: the whole URL from the Secret
            assert url["valueFrom"]["secretKeyRef"] == {"name": "redis", "key": "url"}
            assert "REDIS_PASSWORD" not in env
            assert "redis" not in services


def _sentinel_hosts(objs: tuple[Obj, ...]) -> list[str]:
    """`<pod>.<headless service>` of every Sentinel of the rendered StatefulSet."""
    (sts,) = [s for s in by_kind(objs, "StatefulSet") if s["metadata"]["name"] == "redis-sentinel"]
    name, service = sts["metadata"]["name"], sts["spec"]["serviceName"]
    (svc,) = [s for s in by_kind(objs, "Service") if s["metadata"]["name"] == service]
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"]
    return [f"{name}-{i}.{service}" for i in range(sts["spec"]["replicas"])]


def _sentinel_master(objs: tuple[Obj, ...]) -> str:
    """The master name the servers and Sentinels are started with (one for all)."""
    names = {
        e["value"]
        for _, c in containers(objs)
        for e in c.get("env", [])
        if e["name"] == "MASTER_NAME"
    }
    (name,) = names
    return str(name)


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_referenced_secrets_and_configmaps_exist_or_are_documented(overlay: str) -> None:
    objs = rendered(overlay)
    present = {o["metadata"]["name"] for o in by_kind(objs, "Secret")}
    configmaps = {o["metadata"]["name"] for o in by_kind(objs, "ConfigMap")}
    refs: set[tuple[str, str]] = set()
    for _, c in containers(objs):
        for e in c.get("env", []):
            if "secretKeyRef" in e.get("valueFrom", {}):
                ref = e["valueFrom"]["secretKeyRef"]
                refs.add((ref["name"], ref["key"]))
        for src in c.get("envFrom", []):
            if "configMapRef" in src:
                assert src["configMapRef"]["name"] in configmaps
            assert "secretRef" not in src
    for auth in by_kind(objs, "TriggerAuthentication"):
        refs |= {(r["name"], r["key"]) for r in auth["spec"]["secretTargetRef"]}
    assert refs
    for name, key in refs:
        if name in present:
            continue
        assert (name, key) in USER_PROVIDED_SECRETS, (
            f"secret {name}/{key} is neither here nor documented"
        )
        doc = (DEPLOY / USER_PROVIDED_SECRETS[(name, key)]).read_text()
        assert re.search(rf"create secret generic {name}\b.*--from-literal={key}=", doc, re.S)


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_workloads_with_more_than_one_replica_have_a_pdb(overlay: str) -> None:
    objs = rendered(overlay)
    pdbs = by_kind(objs, "PodDisruptionBudget")
    scaled = {
        s["spec"]["scaleTargetRef"]["name"]: s["spec"].get(
            "minReplicaCount", s["spec"].get("minReplicas")
        )
        for s in by_kind(objs, "ScaledObject", "HorizontalPodAutoscaler")
    }
    for w in by_kind(objs, *WORKLOADS):
        name = w["metadata"]["name"]
        replicas = w["spec"].get("replicas")
        if name in scaled:
            assert replicas is None, f"{name}: replicas would fight the autoscaler"
            replicas = scaled[name]
        covering = [p for p in pdbs if selects(p["spec"]["selector"], pod_labels(w))]
        if (replicas if replicas is not None else 1) > 1:
            assert len(covering) == 1, name
        else:
            assert not covering, f"{name}: a PDB on one replica blocks every drain"
    for p in pdbs:  # none dangling
        assert any(selects(p["spec"]["selector"], pod_labels(w)) for w in by_kind(objs, *WORKLOADS))


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_service_accounts_and_rbac(overlay: str) -> None:
    objs = rendered(overlay)
    accounts = {o["metadata"]["name"]: o for o in by_kind(objs, "ServiceAccount")}
    roles = {(o["kind"], o["metadata"]["name"]) for o in by_kind(objs, "Role", "ClusterRole")}
    bound: dict[str, list[tuple[str, str]]] = {}
    for b in by_kind(objs, "RoleBinding", "ClusterRoleBinding"):
        ref = (b["roleRef"]["kind"], b["roleRef"]["name"])
        assert ref in roles, f"{b['metadata']['name']} binds missing {ref}"
        if b["kind"] == "RoleBinding":
            assert ref[0] == "Role"
        for s in b["subjects"]:
            assert s["kind"] == "ServiceAccount" and s["name"] in accounts
            assert s["namespace"] == accounts[s["name"]]["metadata"]["namespace"]
            bound.setdefault(s["name"], []).append(ref)
    used = set()
    for w, spec in pod_specs(objs):
        sa = spec.get("serviceAccountName")
        assert sa in accounts, f"{w['metadata']['name']} runs as missing account {sa}"
        used.add(sa)
        if sa in ("beat", "flower", "redis"):  # no Kubernetes API at all
            assert spec.get("automountServiceAccountToken") is False
            assert accounts[sa].get("automountServiceAccountToken") is False
            assert sa not in bound
        else:
            assert spec.get("automountServiceAccountToken", True) is not False
            # Its own role, and for the watcher the notifications ConfigMap and Secret.
            extra = {("Role", "rollout-workers-notifications")} if sa == "watcher" else set()
            assert len(bound.get(sa, [])) == 1 + len(extra), sa
            assert extra <= set(bound.get(sa, [])), sa
    assert used == set(accounts)  # one per process kind, none spare
    if overlay == "namespaced":
        assert not by_kind(objs, "ClusterRole", "ClusterRoleBinding")


def test_namespaced_watcher_watches_its_own_namespace() -> None:
    objs = rendered("namespaced")
    (w,) = [w for w in by_kind(objs, "Deployment") if w["metadata"]["name"] == "watcher"]
    c = w["spec"]["template"]["spec"]["containers"][0]
    ctx = parse_cli([expand(a, container_env(c)) for a in c["args"]])
    assert ctx.params["namespace"] == "<POD_NAMESPACE>"
    (env,) = [e for e in c["env"] if e["name"] == "POD_NAMESPACE"]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    (role,) = [
        r for r in by_kind(objs, "Role") if r["metadata"]["name"] == "rollout-workers-watcher"
    ]
    assert not any("clusteranalysistemplates" in rule["resources"] for rule in role["rules"])


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_services_select_pods_and_name_real_ports(overlay: str) -> None:
    objs = rendered(overlay)
    for s in by_kind(objs, "Service"):
        targets = [
            w
            for w in by_kind(objs, *WORKLOADS)
            if selects({"matchLabels": s["spec"]["selector"]}, pod_labels(w))
        ]
        assert len(targets) == 1, s["metadata"]["name"]
        (c,) = targets[0]["spec"]["template"]["spec"]["containers"]
        for p in s["spec"]["ports"]:
            port_number(c, p["targetPort"])
    for m in by_kind(objs, "ServiceMonitor"):
        (svc,) = [
            s
            for s in by_kind(objs, "Service")
            if selects(m["spec"]["selector"], s["metadata"]["labels"])
        ]
        port_names = {p["name"] for p in svc["spec"]["ports"]}
        assert {e["port"] for e in m["spec"]["endpoints"]} <= port_names
        (port,) = [
            p for p in svc["spec"]["ports"] if p["name"] == m["spec"]["endpoints"][0]["port"]
        ]
        assert port["port"] == METRICS_PORT


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_only_our_processes_reach_redis(overlay: str) -> None:
    objs = rendered(overlay)
    # The in-cluster Redis: one server (base), or servers and Sentinels (redis-sentinel).
    guarded = {"redis", "redis-server", "redis-sentinel"}
    for sts in by_kind(objs, "StatefulSet"):
        if sts["metadata"]["name"] not in guarded:
            continue
        (policy,) = [
            p
            for p in by_kind(objs, "NetworkPolicy")
            if p["metadata"]["name"] == sts["metadata"]["name"]
        ]
        assert selects(policy["spec"]["podSelector"], pod_labels(sts))
        peers = [peer for rule in policy["spec"]["ingress"] for peer in rule["from"]]
        for w in by_kind(objs, "Deployment"):
            reaches = any(
                e["name"] == "ROLLOUTS_REDIS_URL"
                for c in w["spec"]["template"]["spec"]["containers"]
                for e in c["env"]
            )
            allowed = any(
                "podSelector" in p and selects(p["podSelector"], pod_labels(w)) for p in peers
            )
            assert reaches == allowed, w["metadata"]["name"]
        assert all(set(p) == {"podSelector"} for p in peers)  # same namespace only
        (c,) = sts["spec"]["template"]["spec"]["containers"]
        served = {p["containerPort"] for p in c["ports"]}
        assert {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]} == served


def test_redis_sentinel_overlay_replicates_and_keeps_quorum() -> None:
    objs = rendered("redis-sentinel")
    sets = {s["metadata"]["name"]: s for s in by_kind(objs, "StatefulSet")}
    assert "redis" not in sets
    for name in ("redis-server", "redis-sentinel"):
        sts = sets[name]
        assert sts["spec"]["replicas"] == 3
        spec = sts["spec"]["template"]["spec"]
        (term,) = spec["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert selects(term["labelSelector"], pod_labels(sts))
        (pdb,) = [
            p
            for p in by_kind(objs, "PodDisruptionBudget")
            if selects(p["spec"]["selector"], pod_labels(sts))
        ]
        assert pdb["spec"]["maxUnavailable"] == 1  # a quorum of 2 of 3 Sentinels stays
    (scripts,) = [
        c for c in by_kind(objs, "ConfigMap") if c["metadata"]["name"] == "redis-sentinel-scripts"
    ]
    conf = scripts["data"]["sentinel.sh"]
    assert "sentinel monitor $MASTER_NAME $master 6379 2" in conf
    assert "requirepass $REDISCLI_AUTH" in conf and "auth-pass $MASTER_NAME $REDISCLI_AUTH" in conf
    assert "--masterauth" in scripts["data"]["server.sh"]


@pytest.mark.parametrize("overlay", ["keda", "hpa"])
def test_worker_autoscaling(overlay: str) -> None:
    objs = rendered(overlay)
    (w,) = [w for w in by_kind(objs, "Deployment") if w["metadata"]["name"] == "worker"]
    assert "replicas" not in w["spec"]
    if overlay == "keda":
        (so,) = by_kind(objs, "ScaledObject")
        assert so["spec"]["scaleTargetRef"]["name"] == "worker"
        assert 2 <= so["spec"]["minReplicaCount"] < so["spec"]["maxReplicaCount"]
        lists = {t["metadata"]["listName"] for t in so["spec"]["triggers"] if t["type"] == "redis"}
        assert lists == celery_queues()
        (auth,) = by_kind(objs, "TriggerAuthentication")
        assert {t["authenticationRef"]["name"] for t in so["spec"]["triggers"]} == {
            auth["metadata"]["name"]
        }
        ns = w["metadata"]["namespace"]
        assert {t["metadata"]["address"] for t in so["spec"]["triggers"]} == {
            f"redis.{ns}.svc.cluster.local:6379"
        }
    else:
        (hpa,) = by_kind(objs, "HorizontalPodAutoscaler")
        assert hpa["spec"]["scaleTargetRef"]["name"] == "worker"
        assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
        names = {
            m["external"]["metric"]["selector"]["matchLabels"]["name"]
            for m in hpa["spec"]["metrics"]
        }
        assert names == set(QUEUE_NAMES.values())  # the labels the watcher exports
        assert by_kind(objs, "ServiceMonitor")  # the adapter's series come from the scrape


def test_prometheus_adapter_rule_serves_the_hpa_metric() -> None:
    import yaml

    snippet = yaml.safe_load((DEPLOY / "components/hpa/prometheus-adapter-rules.yaml").read_text())
    (rule,) = yaml.safe_load(snippet["data"]["config.yaml"])["externalRules"]
    assert rule["seriesQuery"].startswith("workqueue_depth{")
    (hpa,) = by_kind(rendered("hpa"), "HorizontalPodAutoscaler")
    assert {m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]} == {rule["name"]["as"]}


def test_ha_spreads_and_keeps_quorum() -> None:
    objs = rendered("ha")
    for w in by_kind(objs, "Deployment"):
        name = w["metadata"]["name"]
        if name == "flower":
            continue
        assert w["spec"]["replicas"] >= 3
        spec = w["spec"]["template"]["spec"]
        (term,) = spec["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert selects(term["podAffinityTerm"]["labelSelector"], pod_labels(w))
        assert all(
            selects(t["labelSelector"], pod_labels(w)) for t in spec["topologySpreadConstraints"]
        )


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o != "crds"])
def test_pods_meet_the_restricted_pod_security_standard(overlay: str) -> None:
    objs = rendered(overlay)
    (ns,) = by_kind(objs, "Namespace")
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for w, spec in pod_specs(objs):
        pod = spec.get("securityContext", {})
        assert pod.get("runAsNonRoot") is True, w["metadata"]["name"]
        assert pod.get("seccompProfile") == {"type": "RuntimeDefault"}
        assert not any("hostPath" in v for v in spec.get("volumes", []))
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"] == {"drop": ["ALL"]}
            if sc.get("readOnlyRootFilesystem"):  # then something writable for temp files
                mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
                assert mounts & {"/tmp", "/data"}, c["name"]

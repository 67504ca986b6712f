"""One builder per Kubernetes kind: StatefulSet, Deployment, Service, PodDisruptionBudget, ConfigMap."""

from __future__ import annotations

import hashlib
from typing import Any

from rocketmq_operator.api.models import ResourceRequirements
from rocketmq_operator.render.kubernetes.names import (
    ANNOTATION_CONFIG_HASH,
    CONFIG_DIR,
    DATA_DIR,
    JSON,
    READINESS_GATE_IN_SYNC,
    RUN_AS_USER,
    SECRET_CONFIG_DIR,
    TLS_DIR,
    group_of,
    labels,
    selector,
)

# --- shared pod pieces ---


def _resources(res: ResourceRequirements) -> JSON:
    out: JSON = {}
    if res.requests:
        out["requests"] = {k: str(v) for k, v in sorted(res.requests.items())}
    if res.limits:
        out["limits"] = {k: str(v) for k, v in sorted(res.limits.items())}
    return out


def _anti_affinity(name: str, component: str, user: dict[str, Any]) -> JSON:
    affinity = dict(user)
    if "podAntiAffinity" not in affinity:
        # Spread replicas over nodes when possible; required would block small clusters.
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": selector(name, component)},
                    },
                }
            ]
        }
    return affinity


SPREAD_TOPOLOGY_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone")


def _spread(name: str, component: str, user: list[dict[str, Any]] | None) -> list[JSON]:
    """The user's constraints, else one per node and one per zone, both ScheduleAnyway: a scoring preference,
    like the anti-affinity, never a filter. DoNotSchedule on the host name would keep a StatefulSet's replacement
    Pending while a dead node is still a domain (its pods tolerate the unreachable taint for 300 s), and nodes
    without a zone label would be filtered out by a strict zone rule."""
    if user is not None:
        return [dict(c) for c in user]
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector(name, component)},
        }
        for key in SPREAD_TOPOLOGY_KEYS
    ]


def _env(java_opts: list[str]) -> list[JSON]:
    def field_ref(path: str) -> JSON:
        return {"valueFrom": {"fieldRef": {"fieldPath": path}}}

    return [
        {"name": "POD_NAME", **field_ref("metadata.name")},
        {"name": "POD_NAMESPACE", **field_ref("metadata.namespace")},
        {"name": "POD_IP", **field_ref("status.podIP")},
        {"name": "JAVA_OPTS", "value": " ".join(java_opts)},
        {"name": "ROCKETMQ_CONFIG_DIR", "value": CONFIG_DIR},
        {"name": "ROCKETMQ_DATA_DIR", "value": DATA_DIR},
    ]


def _pvc_template(size: str, storage_class: str | None) -> JSON:
    spec: JSON = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": "data"}, "spec": spec}


def _security_context() -> tuple[JSON, JSON]:
    pod = {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    container = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    return pod, container


def sidecar(name: str, image: str, args: list[str], mounts: list[JSON], resources: JSON) -> JSON:
    """A helper container of a pod: the same locked-down security context as the main one."""
    container: JSON = {
        "name": name,
        "image": image,
        "args": args,
        "resources": resources,
        "securityContext": _security_context()[1],
    }
    if mounts:  # the API server drops an empty list: the rendered object must equal what it stores
        container["volumeMounts"] = mounts
    return container


def secret_mount(volume: str) -> JSON:
    """The mount of one of `pod_template_spec`'s Secret volumes (``secret-config`` or ``tls``), read-only."""
    return {"name": volume, "mountPath": SECRET_CONFIG_DIR if volume == "secret-config" else TLS_DIR, "readOnly": True}


def config_hash(data: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for key in sorted(data):
        digest.update(key.encode() + b"\0" + data[key].encode() + b"\0")
    return digest.hexdigest()[:16]


def pod_template_spec(
    *,
    name: str,
    component: str,
    image: str,
    pull_policy: str | None,
    role_arg: str,
    java_opts: list[str],
    ports: list[JSON],
    probe_port: int,
    config_map: str,
    resources: ResourceRequirements,
    node_selector: dict[str, str],
    tolerations: list[dict[str, Any]],
    affinity: dict[str, Any],
    readiness_gate: bool,
    spread: list[dict[str, Any]] | None = None,
    priority_class: str | None = None,
    secret_config: str | None = None,
    tls_secret: str | None = None,
    data_volume: JSON | None = None,
    sidecars: list[JSON] | None = None,
) -> JSON:
    """The pod of a StatefulSet or a Deployment. ``secret_config``: a Secret mounted at SECRET_CONFIG_DIR, whose
    *.properties the entrypoint appends to the process's copy of its config. ``tls_secret``: the certificate
    Secret mounted at TLS_DIR (RocketMQ reads the files at start and, in brokers and name servers, again when they
    change). ``data_volume``: the volume mounted at DATA_DIR when no claim template provides it."""
    pod_sc, container_sc = _security_context()
    container: JSON = {
        "name": component,
        "image": image,
        "args": [role_arg],
        "env": _env(java_opts),
        "ports": ports,
        # A TCP connect costs the kubelet next to nothing, and every roll step, failover and scale-up waits for
        # the restarted pod's startup and then its readiness probe: with 5 s periods that was 0-10 s per pod on
        # top of the JVM's own start. Still 5 min to start and 60 s to a restart; unready after 6 s (was 15 s).
        "readinessProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 2, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 10, "failureThreshold": 6},
        "startupProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 1, "failureThreshold": 300},
        "securityContext": container_sc,
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    if pull_policy:
        container["imagePullPolicy"] = pull_policy
    res = _resources(resources)
    if res:
        container["resources"] = res
    pod_spec: JSON = {
        "securityContext": pod_sc,
        "terminationGracePeriodSeconds": 60,
        "affinity": _anti_affinity(group_of(name, component), component, affinity),
        "topologySpreadConstraints": _spread(group_of(name, component), component, spread),
        "containers": [container, *(sidecars or [])],
        "volumes": [
            {"name": "config", "configMap": {"name": config_map}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    if data_volume is not None:
        pod_spec["volumes"].append({"name": "data", **data_volume})
    if secret_config is not None:
        # At the entrypoint's default ROCKETMQ_SECRET_CONFIG_DIR (no env: every other pod template stays as it was).
        container["volumeMounts"].append(secret_mount("secret-config"))
        # Owner read-only; the pod's fsGroup makes the files readable by the non-root user.
        pod_spec["volumes"].append(
            {"name": "secret-config", "secret": {"secretName": secret_config, "defaultMode": 0o440}}
        )
    if tls_secret is not None:
        container["volumeMounts"].append(secret_mount("tls"))
        pod_spec["volumes"].append({"name": "tls", "secret": {"secretName": tls_secret, "defaultMode": 0o440}})
    if readiness_gate:
        # Flipped by the operator when the replica is in the SyncStateSet (or is master).
        pod_spec["readinessGates"] = [{"conditionType": READINESS_GATE_IN_SYNC}]
    if node_selector:
        pod_spec["nodeSelector"] = dict(sorted(node_selector.items()))
    if tolerations:
        pod_spec["tolerations"] = tolerations
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    return pod_spec


def statefulset(
    *,
    name: str,
    namespace: str,
    component: str,
    replicas: int,
    image: str,
    pull_policy: str | None,
    role_arg: str,
    java_opts: list[str],
    ports: list[JSON],
    probe_port: int,
    config_map: str,
    config_digest: str,
    storage_size: str,
    storage_class: str | None,
    reclaim_policy: str,
    resources: ResourceRequirements,
    node_selector: dict[str, str],
    tolerations: list[dict[str, Any]],
    affinity: dict[str, Any],
    readiness_gate: bool,
    spread: list[dict[str, Any]] | None = None,
    priority_class: str | None = None,
    ordered: bool = False,
    secret_config: str | None = None,
    tls_secret: str | None = None,
    sidecars: list[JSON] | None = None,
) -> JSON:
    """``secret_config``: a Secret mounted at SECRET_CONFIG_DIR, whose *.properties the entrypoint appends to the
    process's copy of its config. ``tls_secret``: the certificate Secret mounted at TLS_DIR (RocketMQ reads the
    files at start and, in brokers and name servers, again when they change)."""
    pod_spec = pod_template_spec(
        name=name,
        component=component,
        image=image,
        pull_policy=pull_policy,
        role_arg=role_arg,
        java_opts=java_opts,
        ports=ports,
        probe_port=probe_port,
        config_map=config_map,
        resources=resources,
        node_selector=node_selector,
        tolerations=tolerations,
        affinity=affinity,
        readiness_gate=readiness_gate,
        spread=spread,
        priority_class=priority_class,
        secret_config=secret_config,
        tls_secret=tls_secret,
        sidecars=sidecars,
    )
    group = group_of(name, component)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": {
            "serviceName": f"{name}-headless",
            "replicas": replicas,
            # Ordered for classic modes: the configured master (ordinal 0) must be online before its slaves.
            "podManagementPolicy": "OrderedReady" if ordered else "Parallel",
            # The operator restarts pods itself, in an order that keeps the quorum (never the StatefulSet).
            "updateStrategy": {"type": "OnDelete"},
            # A scale-in's removed replicas keep or lose their data as on deletion (the roll removes them).
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": reclaim_policy, "whenScaled": reclaim_policy},
            "selector": {"matchLabels": selector(group, component)},
            "template": {
                "metadata": {
                    "labels": labels(group, component),
                    "annotations": {ANNOTATION_CONFIG_HASH: config_digest},
                },
                "spec": pod_spec,
            },
            "volumeClaimTemplates": [_pvc_template(storage_size, storage_class)],
        },
    }


def deployment(
    *,
    name: str,
    namespace: str,
    component: str,
    replicas: int,
    config_digest: str,
    pod_spec: JSON,
    min_ready_seconds: int = 0,
) -> JSON:
    """A Deployment of stateless pods (proxies) that a change replaces one at a time, a new pod Ready (for
    ``min_ready_seconds``) before an old one goes: never every pod down at once, whatever the replica count."""
    group = group_of(name, component)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready_seconds,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "selector": {"matchLabels": selector(group, component)},
            "template": {
                "metadata": {
                    "labels": labels(group, component),
                    "annotations": {ANNOTATION_CONFIG_HASH: config_digest},
                },
                "spec": pod_spec,
            },
        },
    }


def service(
    name: str,
    namespace: str,
    component: str,
    group: str,
    ports: list[JSON],
    headless: bool,
    extra_selector: dict[str, str] | None = None,
) -> JSON:
    spec: JSON = {
        "selector": {**selector(group, component), **(extra_selector or {})},
        "ports": [{"name": p["name"], "port": p["containerPort"], "targetPort": p["name"]} for p in ports],
    }
    if headless:
        spec["clusterIP"] = "None"
        # Peers must resolve each other before they are Ready (controllers form a quorum; brokers register).
        spec["publishNotReadyAddresses"] = True
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": spec,
    }


def pod_disruption_budget(name: str, namespace: str, component: str, group: str) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(group, component)}},
    }


def replica_disruption_budget(name: str, namespace: str, group: str, role_label: str, replicas: int) -> JSON:
    """The budget of a controller-mode group's pods but the master's: one of them at a time. Disjoint from
    `master_disruption_budget`: the eviction API refuses a pod that two budgets select ("This pod has more than one
    PodDisruptionBudget, which the eviction subresource does not support", a 500 that `kubectl drain` does not
    retry; seen on the real three-node cluster), so this one selects every pod of the group not labelled master
    (`NotIn` also selects a pod not labelled yet: a replica just made counts as unavailable until Ready). An integer
    `minAvailable`, not `maxUnavailable`: with `maxUnavailable` the disruption controller expects the
    StatefulSet's whole scale among the selected pods and, the master left out, would never allow one."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, "broker")},
        "spec": {
            "minAvailable": max(replicas - 2, 0),
            "selector": {
                "matchLabels": selector(group, "broker"),
                "matchExpressions": [{"key": role_label, "operator": "NotIn", "values": ["master"]}],
            },
        },
    }


def master_disruption_budget(name: str, namespace: str, group: str, role_label: str) -> JSON:
    """No voluntary eviction of the pod labelled master (CloudNativePG's primary budget): a drain waits on it
    (the eviction refused with 429, which `kubectl drain` retries) until the operator has switched the master to a
    pod on a schedulable node and moved the label."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, "broker")},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {**selector(group, "broker"), role_label: "master"}}},
    }


def config_map(name: str, namespace: str, component: str, group: str, data: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "data": data,
    }


def secret_config(name: str, namespace: str, component: str, group: str, data: dict[str, str]) -> JSON:
    """A Secret of settings only the process may read (the entrypoint adds its files to the process's copy of its
    config: `pod_template_spec` ``secret_config``). Built by the platform from a Secret it read, never by a
    renderer of a spec, which holds no secret."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "type": "Opaque",
        "stringData": data,
    }

"""Kubernetes objects for BrokerGroups and ControllerGroups: pure, deterministic dicts.

Same input, same output, byte for byte (a test pins golden files): the operator applies exactly what
`rocketmq-operator render` prints, adding only owner references. Names and labels follow docs/contracts.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from rocketmq_operator.api.models import (
    DEFAULT_IMAGE_REPOSITORY,
    AnyResource,
    BrokerGroup,
    ControllerGroup,
    HAMode,
    ResourceRequirements,
)
from rocketmq_operator.render.config import (
    BROKER_PORT,
    CONTROLLER_PORT,
    NAMESRV_PORT,
    BrokerPlacement,
    ControllerPlacement,
    ReplicaPlacement,
    broker_config,
    controller_config,
    namesrv_config,
    properties_text,
)
from rocketmq_operator.render.jvm import jvm_options

JSON = dict[str, Any]

LABEL_GROUP = "rocketmq-operator.dev/group"
LABEL_ROLE = "rocketmq-operator.dev/role"
LABEL_BROKER_ID = "rocketmq-operator.dev/broker-id"
ANNOTATION_CONFIG_HASH = "rocketmq-operator.dev/config-hash"
READINESS_GATE_IN_SYNC = "rocketmq-operator.dev/in-sync"
DATA_DIR = "/data"
CONFIG_DIR = "/etc/rocketmq"
RUN_AS_USER = 3000
DEFAULT_BROKER_HEAP = "1Gi"
DEFAULT_CONTROLLER_HEAP = "512Mi"


class RenderError(ValueError):
    """The manifests do not give the renderer what it needs (e.g. the referenced ControllerGroup)."""


def labels(name: str, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "rocketmq",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "rocketmq-operator",
        LABEL_GROUP: name,
    }


def selector(name: str, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/instance": name, "app.kubernetes.io/component": component, LABEL_GROUP: name}


def _group_of(object_name: str, component: str) -> str:
    # Objects are named after their group with a suffix; labels carry the group name.
    for suffix in ("-headless", "-config", "-connection", "-namesrv", "-master"):
        if object_name.endswith(suffix):
            return object_name[: -len(suffix)]
    return object_name


def broker_image(bg: BrokerGroup) -> str:
    return bg.spec.image or f"{DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:{bg.spec.version}"


def controller_image(cg: ControllerGroup) -> str:
    return cg.spec.image or f"{DEFAULT_IMAGE_REPOSITORY}/rocketmq-controller:{cg.spec.version}"


def pod_dns(sts: str, ordinal: int, namespace: str) -> str:
    return f"{sts}-{ordinal}.{sts}-headless.{namespace}.svc"


# --- addresses a ControllerGroup publishes ---


def name_server_addresses(cg: ControllerGroup, namespace: str) -> list[str]:
    if cg.spec.standalone:
        count = cg.spec.name_servers.replicas or cg.spec.replicas
        sts = f"{cg.metadata.name}-namesrv"
    else:
        count = cg.spec.replicas
        sts = cg.metadata.name
    return [f"{pod_dns(sts, i, namespace)}:{NAMESRV_PORT}" for i in range(count)]


def controller_addresses(cg: ControllerGroup, namespace: str) -> list[str]:
    return [f"{pod_dns(cg.metadata.name, i, namespace)}:{CONTROLLER_PORT}" for i in range(cg.spec.replicas)]


def namespace_of(resource: BrokerGroup | ControllerGroup, default: str = "default") -> str:
    return resource.metadata.namespace or default


def broker_placement(bg: BrokerGroup, cg: ControllerGroup | None, namespace: str) -> BrokerPlacement:
    if bg.spec.name_servers:
        name_servers = list(bg.spec.name_servers)
    elif cg is not None:
        name_servers = name_server_addresses(cg, namespace)
    else:
        raise RenderError(
            f"BrokerGroup/{bg.metadata.name}: spec.controllerRef.name '{_ref(bg)}' was not found; "
            "fix: create that ControllerGroup (or pass its manifest to render), or set spec.nameServers"
        )
    controllers = controller_addresses(cg, namespace) if cg is not None else []
    replicas = [ReplicaPlacement(BROKER_PORT, f"{DATA_DIR}/store") for _ in range(bg.spec.replicas)]
    return BrokerPlacement(name_servers=name_servers, controllers=controllers, replicas=replicas)


def _ref(bg: BrokerGroup) -> str:
    return bg.spec.controller_ref.name if bg.spec.controller_ref else ""


def controller_placement(cg: ControllerGroup, namespace: str) -> ControllerPlacement:
    ns_count = (cg.spec.name_servers.replicas or cg.spec.replicas) if cg.spec.standalone else 0
    return ControllerPlacement(
        peers=controller_addresses(cg, namespace),
        replicas=[ReplicaPlacement(NAMESRV_PORT, DATA_DIR) for _ in range(cg.spec.replicas)],
        name_server_replicas=[ReplicaPlacement(NAMESRV_PORT, DATA_DIR) for _ in range(ns_count)],
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


def config_hash(data: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for key in sorted(data):
        digest.update(key.encode() + b"\0" + data[key].encode() + b"\0")
    return digest.hexdigest()[:16]


def _statefulset(
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
    priority_class: str | None = None,
    ordered: bool = False,
) -> JSON:
    pod_sc, container_sc = _security_context()
    container: JSON = {
        "name": component,
        "image": image,
        "args": [role_arg],
        "env": _env(java_opts),
        "ports": ports,
        "readinessProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 10, "failureThreshold": 6},
        "startupProbe": {"tcpSocket": {"port": probe_port}, "periodSeconds": 5, "failureThreshold": 60},
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
        "affinity": _anti_affinity(_group_of(name, component), component, affinity),
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": config_map}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    if readiness_gate:
        # Flipped by the operator when the replica is in the SyncStateSet (or is master).
        pod_spec["readinessGates"] = [{"conditionType": READINESS_GATE_IN_SYNC}]
    if node_selector:
        pod_spec["nodeSelector"] = dict(sorted(node_selector.items()))
    if tolerations:
        pod_spec["tolerations"] = tolerations
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    group = _group_of(name, component)
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
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": reclaim_policy, "whenScaled": "Retain"},
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


def _service(
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


def _pdb(name: str, namespace: str, component: str, group: str) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(group, component)}},
    }


def _config_map(name: str, namespace: str, component: str, group: str, data: dict[str, str]) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "data": data,
    }


BROKER_PORTS: list[JSON] = [
    {"name": "remoting", "containerPort": BROKER_PORT, "protocol": "TCP"},
    {"name": "vip", "containerPort": BROKER_PORT - 2, "protocol": "TCP"},
    {"name": "ha", "containerPort": BROKER_PORT + 1, "protocol": "TCP"},
]


def broker_config_files(bg: BrokerGroup, placement: BrokerPlacement, pod_prefix: str) -> dict[str, str]:
    header = f"Rendered by rocketmq-operator for BrokerGroup {bg.metadata.name}; edit the BrokerGroup, not this."
    return {
        f"{pod_prefix}-{i}.conf": properties_text(broker_config(bg, i, placement), header)
        for i in range(bg.spec.replicas)
    }


def render_broker_group(bg: BrokerGroup, cg: ControllerGroup | None) -> list[JSON]:
    name = bg.metadata.name
    namespace = namespace_of(bg)
    placement = broker_placement(bg, cg, namespace)
    files = broker_config_files(bg, placement, name)
    heap = bg.spec.jvm.heap or DEFAULT_BROKER_HEAP
    java = [*jvm_options("broker", heap, bg.spec.jvm.direct_memory), *bg.spec.jvm.extra_options]
    return [
        _config_map(f"{name}-config", namespace, "broker", name, files),
        _service(f"{name}-headless", namespace, "broker", name, BROKER_PORTS, headless=True),
        _service(name, namespace, "broker", name, BROKER_PORTS[:1], headless=False),
        # Follows the master: the operator labels pods with their role from the controller's SyncStateSet.
        _service(
            f"{name}-master",
            namespace,
            "broker",
            name,
            BROKER_PORTS[:1],
            headless=False,
            extra_selector={LABEL_ROLE: "master"},
        ),
        _statefulset(
            name=name,
            namespace=namespace,
            component="broker",
            replicas=bg.spec.replicas,
            image=broker_image(bg),
            pull_policy=bg.spec.image_pull_policy,
            role_arg="broker",
            java_opts=java,
            ports=BROKER_PORTS,
            probe_port=BROKER_PORT,
            config_map=f"{name}-config",
            config_digest=config_hash(files),
            storage_size=bg.spec.storage.size,
            storage_class=bg.spec.storage.storage_class_name,
            reclaim_policy=bg.spec.storage.reclaim_policy,
            resources=bg.spec.resources,
            node_selector=bg.spec.node_selector,
            tolerations=bg.spec.tolerations,
            affinity=bg.spec.affinity,
            readiness_gate=True,
            priority_class=bg.spec.priority_class_name,
            ordered=bg.spec.ha_mode != HAMode.CONTROLLER.value,
        ),
        _pdb(name, namespace, "broker", name),
    ]


CONTROLLER_PORTS: list[JSON] = [
    {"name": "namesrv", "containerPort": NAMESRV_PORT, "protocol": "TCP"},
    {"name": "controller", "containerPort": CONTROLLER_PORT, "protocol": "TCP"},
]


def render_controller_group(cg: ControllerGroup) -> list[JSON]:
    name = cg.metadata.name
    namespace = namespace_of(cg)
    placement = controller_placement(cg, namespace)
    header = f"Rendered by rocketmq-operator for ControllerGroup {name}; edit the ControllerGroup, not this."
    files = {
        f"{name}-{i}.conf": properties_text(controller_config(cg, i, placement), header)
        for i in range(cg.spec.replicas)
    }
    heap = cg.spec.jvm.heap or DEFAULT_CONTROLLER_HEAP
    standalone = cg.spec.standalone
    role = "controller" if standalone else "namesrv"
    java = [*jvm_options(role, heap, cg.spec.jvm.direct_memory), *cg.spec.jvm.extra_options]
    ctl_ports = CONTROLLER_PORTS[1:] if standalone else CONTROLLER_PORTS
    common = dict(
        namespace=namespace,
        image=controller_image(cg),
        pull_policy=cg.spec.image_pull_policy,
        storage_size=cg.spec.storage.size,
        storage_class=cg.spec.storage.storage_class_name,
        reclaim_policy=cg.spec.storage.reclaim_policy,
        resources=cg.spec.resources,
        node_selector=cg.spec.node_selector,
        tolerations=cg.spec.tolerations,
        affinity=cg.spec.affinity,
        readiness_gate=False,
    )
    objects: list[JSON] = []
    if standalone:
        ns_name = f"{name}-namesrv"
        for i in range(len(placement.name_server_replicas)):
            files[f"{ns_name}-{i}.conf"] = properties_text(namesrv_config(cg, i, placement), header)
    objects.append(_config_map(f"{name}-config", namespace, "controller", name, files))
    objects.append(
        _config_map(
            f"{name}-connection",
            namespace,
            "controller",
            name,
            {
                "nameServers": ";".join(name_server_addresses(cg, namespace)),
                "controllers": ";".join(controller_addresses(cg, namespace)),
                "controllerGroup": name,
            },
        )
    )
    objects.append(_service(f"{name}-headless", namespace, "controller", name, ctl_ports, headless=True))
    objects.append(
        _statefulset(
            name=name,
            component="controller",
            replicas=cg.spec.replicas,
            role_arg=role,
            java_opts=java,
            ports=ctl_ports,
            probe_port=CONTROLLER_PORT if standalone else NAMESRV_PORT,
            config_map=f"{name}-config",
            config_digest=config_hash(
                {k: v for k, v in files.items() if k.startswith(f"{name}-") and not k.startswith(f"{name}-namesrv-")}
            ),
            **common,  # type: ignore[arg-type]
        )
    )
    objects.append(_pdb(name, namespace, "controller", name))
    if standalone:
        ns_name = f"{name}-namesrv"
        ns_java = [*jvm_options("namesrv", heap, cg.spec.jvm.direct_memory), *cg.spec.jvm.extra_options]
        objects.append(_service(f"{ns_name}-headless", namespace, "namesrv", name, CONTROLLER_PORTS[:1], headless=True))
        objects.append(_service(name, namespace, "namesrv", name, CONTROLLER_PORTS[:1], headless=False))
        ns_sts = _statefulset(
            name=ns_name,
            component="namesrv",
            replicas=len(placement.name_server_replicas),
            role_arg="namesrv",
            java_opts=ns_java,
            ports=CONTROLLER_PORTS[:1],
            probe_port=NAMESRV_PORT,
            config_map=f"{name}-config",
            config_digest=config_hash({k: v for k, v in files.items() if k.startswith(f"{ns_name}-")}),
            **common,  # type: ignore[arg-type]
        )
        objects.append(ns_sts)
        objects.append(_pdb(ns_name, namespace, "namesrv", name))
    else:
        objects.append(_service(name, namespace, "controller", name, CONTROLLER_PORTS[:1], headless=False))
    return objects


def render_all(resources: Sequence[AnyResource]) -> list[JSON]:
    """Every object for a set of manifests; BrokerGroups find their ControllerGroup among them."""
    controllers = {(namespace_of(r), r.metadata.name): r for r in resources if isinstance(r, ControllerGroup)}
    out: list[JSON] = []
    for r in resources:
        if isinstance(r, ControllerGroup):
            out.extend(render_controller_group(r))
    for r in resources:
        if isinstance(r, BrokerGroup):
            cg = controllers.get((namespace_of(r), _ref(r))) if r.spec.controller_ref else None
            out.extend(render_broker_group(r, cg))
    return out

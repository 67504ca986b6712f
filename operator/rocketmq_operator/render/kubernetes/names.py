"""Names, labels, images and addresses shared by every rendered object; where a group's replicas live."""

from __future__ import annotations

from typing import Any

from rocketmq_operator.api.models import DEFAULT_IMAGE_REPOSITORY, BrokerGroup, ControllerGroup, Proxy
from rocketmq_operator.render.config import (
    BROKER_PORT,
    CONTROLLER_PORT,
    NAMESRV_PORT,
    RAFT_PORT,
    BrokerPlacement,
    ControllerPlacement,
    ReplicaPlacement,
)
from rocketmq_operator.render.jvm import mutual_tls, tls_flags

JSON = dict[str, Any]

LABEL_GROUP = "rocketmq-operator.dev/group"
LABEL_ROLE = "rocketmq-operator.dev/role"
LABEL_BROKER_ID = "rocketmq-operator.dev/broker-id"
ANNOTATION_CONFIG_HASH = "rocketmq-operator.dev/config-hash"
READINESS_GATE_IN_SYNC = "rocketmq-operator.dev/in-sync"
# What a user (or `kubectl rocketmq`) asks of a BrokerGroup through annotations, read by the operator's group pass:
# a planned switchover to a replica (pod name) or broker id, cleared when done; the replicas to keep fenced
# (comma-separated pod names); and, on the StatefulSet's pod template, the time of a requested rolling restart (a
# new template revision: the roll restarts every pod, quorum-safe).
ANNOTATION_SWITCHOVER_TO = "rocketmq-operator.dev/switchover-to"
ANNOTATION_FENCE = "rocketmq-operator.dev/fence"
ANNOTATION_RESTARTED_AT = "rocketmq-operator.dev/restartedAt"
# The label the chart puts on the operator's pods (its Deployment's pod template): the NetworkPolicies admit the
# operator by it, from any namespace (charts/rocketmq-operator/templates/deployment.yaml; a test keeps both equal).
OPERATOR_POD_LABELS: dict[str, str] = {"rocketmq-operator.dev/operator": "true"}
DATA_DIR = "/data"
CONFIG_DIR = "/etc/rocketmq"
# A Secret volume whose *.properties files the images' entrypoint appends to the broker's copy of its config (the
# ConfigMap never holds a secret): the admin credentials of a group with spec.auth.enabled.
SECRET_CONFIG_DIR = "/etc/rocketmq-secret"
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


def group_of(object_name: str, component: str) -> str:
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


def raft_addresses(cg: ControllerGroup, namespace: str) -> list[str]:
    return [f"{pod_dns(cg.metadata.name, i, namespace)}:{RAFT_PORT}" for i in range(cg.spec.replicas)]


def namespace_of(resource: BrokerGroup | ControllerGroup | Proxy, default: str = "default") -> str:
    return resource.metadata.namespace or default


def broker_placement(
    bg: BrokerGroup, cg: ControllerGroup | None, namespace: str, count: int | None = None
) -> BrokerPlacement:
    """Where each of ``count`` replicas (default ``spec.replicas``) runs and what it connects to."""
    if bg.spec.name_servers:
        name_servers = list(bg.spec.name_servers)
    elif cg is not None:
        name_servers = name_server_addresses(cg, namespace)
    else:
        raise RenderError(
            f"BrokerGroup/{bg.metadata.name}: spec.controllerRef.name '{controller_ref_name(bg)}' was not found; "
            "fix: create that ControllerGroup (or pass its manifest to render), or set spec.nameServers"
        )
    controllers = controller_addresses(cg, namespace) if cg is not None else []
    replicas = [ReplicaPlacement(BROKER_PORT, f"{DATA_DIR}/store") for _ in range(count or bg.spec.replicas)]
    return BrokerPlacement(name_servers=name_servers, controllers=controllers, replicas=replicas)


def controller_ref_name(bg: BrokerGroup) -> str:
    return bg.spec.controller_ref.name if bg.spec.controller_ref else ""


def controller_placement(cg: ControllerGroup, namespace: str) -> ControllerPlacement:
    ns_count = (cg.spec.name_servers.replicas or cg.spec.replicas) if cg.spec.standalone else 0
    return ControllerPlacement(
        peers=controller_addresses(cg, namespace),
        replicas=[ReplicaPlacement(NAMESRV_PORT, DATA_DIR) for _ in range(cg.spec.replicas)],
        raft_peers=raft_addresses(cg, namespace) if cg.spec.type == "jraft" else [],
        name_server_replicas=[ReplicaPlacement(NAMESRV_PORT, DATA_DIR) for _ in range(ns_count)],
    )


def auth_config_secret_name(group: str) -> str:
    """The Secret the operator writes from spec.auth.adminSecret: the broker.conf keys that hold the admin."""
    return f"{group}-auth-config"


TLS_DIR = "/etc/rocketmq-tls"
"""Where a group with spec.tls mounts its certificate Secret (tls.crt, tls.key, ca.crt: cert-manager's keys)."""


def tls_secret_name(resource: BrokerGroup | ControllerGroup | Proxy) -> str | None:
    """The Secret a group (or a Proxy) with spec.tls mounts: spec.tls.secretName (e.g. a cert-manager
    Certificate's), else the one the operator issues, `<name>-tls`. None with TLS off."""
    tls = resource.spec.tls
    if not tls.enabled:
        return None
    return tls.secret_name or f"{resource.metadata.name}-tls"


TLS_AUTHORITY_SECRET = "rocketmq-operator-tls-ca"
"""A namespace's authority: ca.crt (the trust every certificate Secret carries), ca.key and, while a rotation's
overlap is open, bridge.crt (platforms.kubernetes.tls)."""
ANNOTATION_ROTATE_AUTHORITY = "rocketmq-operator.dev/rotate"
"""On the authority Secret: a rotation request, any new value (`kubectl rocketmq rotate-ca` writes the time)."""
ANNOTATION_AUTHORITY_OVERLAP = "rocketmq-operator.dev/overlap"
"""On the authority Secret: how long both authorities are trusted at least (a duration such as 24h)."""
ANNOTATION_ROTATED_FOR = "rocketmq-operator.dev/rotated-for"
"""On the authority Secret: the request the operator last carried out."""
ANNOTATION_AUTHORITY_STATE = "rocketmq-operator.dev/authority-state"
"""On the authority Secret: what the operator does with it now, and what it waits for."""

TLS_CERT_FILE = f"{TLS_DIR}/tls.crt"
TLS_KEY_FILE = f"{TLS_DIR}/tls.key"


def tls_java_flags(resource: BrokerGroup | ControllerGroup | Proxy) -> list[str]:
    """RocketMQ's TLS switches for every process of the group, on the mounted Secret's files (none with TLS off)."""
    if not resource.spec.tls.enabled:
        return []
    return tls_flags(TLS_CERT_FILE, TLS_KEY_FILE, f"{TLS_DIR}/ca.crt", **mutual_tls(resource))

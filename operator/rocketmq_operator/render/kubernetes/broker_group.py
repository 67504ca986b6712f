"""The objects of one BrokerGroup."""

from __future__ import annotations

from rocketmq_operator import __version__
from rocketmq_operator.api.models import DEFAULT_IMAGE_REPOSITORY, BrokerGroup, ControllerGroup, HAMode
from rocketmq_operator.core.config_change import group_revision, revision
from rocketmq_operator.core.lease import lease_agent_enabled
from rocketmq_operator.render.config import (
    BROKER_PORT,
    BrokerPlacement,
    auth_secret_keys,
    broker_config,
    prometheus_port,
    properties_text,
)
from rocketmq_operator.render.jvm import jvm_options
from rocketmq_operator.render.kubernetes.kinds import (
    config_map,
    master_disruption_budget,
    pod_disruption_budget,
    replica_disruption_budget,
    secret_config,
    secret_mount,
    service,
    sidecar,
    statefulset,
)
from rocketmq_operator.render.kubernetes.names import (
    DEFAULT_BROKER_HEAP,
    JSON,
    LABEL_ROLE,
    SECRET_CONFIG_DIR,
    TLS_CERT_FILE,
    TLS_DIR,
    TLS_KEY_FILE,
    auth_config_secret_name,
    broker_image,
    broker_placement,
    namespace_of,
    tls_java_flags,
    tls_secret_name,
)
from rocketmq_operator.render.kubernetes.network_policy import broker_network_policy

BROKER_PORTS: list[JSON] = [
    {"name": "remoting", "containerPort": BROKER_PORT, "protocol": "TCP"},
    {"name": "vip", "containerPort": BROKER_PORT - 2, "protocol": "TCP"},
    {"name": "ha", "containerPort": BROKER_PORT + 1, "protocol": "TCP"},
]
METRICS_PORT_NAME = "metrics"
"""The container port of RocketMQ's Prometheus exporter; the chart's PodMonitor scrapes the port of this name."""


def container_ports(bg: BrokerGroup, placement: BrokerPlacement) -> list[JSON]:
    """The broker ports, and the exporter's port when the rendered broker.conf runs one (spec.metrics, or the
    user's brokerConfig keys, which win: the port is read back from the config so the two always agree)."""
    port = prometheus_port(broker_config(bg, 0, placement))
    if port is None:
        return list(BROKER_PORTS)
    return [*BROKER_PORTS, {"name": METRICS_PORT_NAME, "containerPort": port, "protocol": "TCP"}]


DEFAULT_AGENT_IMAGE = f"{DEFAULT_IMAGE_REPOSITORY}/rocketmq-operator:{__version__}"
"""The lease agent's image: the operator's own (its `rocketmq-operator agent`). The operator passes the image it
runs from (the chart's `ROCKETMQ_OPERATOR_AGENT_IMAGE`), so an operator upgrade rolls the brokers onto its agent."""
LEASE_AGENT_RESOURCES: JSON = {"requests": {"cpu": "50m", "memory": "48Mi"}, "limits": {"memory": "128Mi"}}
"""The agent uses about 2 ms of CPU a second; its request is its weight under contention (cgroup cpu.shares), and it
adds to the pod's: at 10m a broker pod with no request of its own had 1/10 the weight of a neighbour requesting 100m,
and its agent fenced a live master (docs/fencing.md, "Starved, not hung")."""


def lease_agent(bg: BrokerGroup, image: str) -> JSON:
    """The `lease-agent` container of a controller-mode broker pod (`control.lease_agent`): it watches the broker
    on the pod's loopback and fences it when no controller leader confirms its mastership (docs/fencing.md, "The
    lease agent"). It shares the pod's network, so it is cut off exactly when the broker is. It signs as the group's
    admin and trusts the group's authority when the group has them."""
    args = ["agent", "--broker", f"127.0.0.1:{BROKER_PORT}"]
    mounts: list[JSON] = []
    if bg.spec.auth.enabled:
        args += ["--credentials-file", f"{SECRET_CONFIG_DIR}/auth.properties"]
        mounts.append(secret_mount("secret-config"))
    if bg.spec.tls.enabled:
        args += ["--tls-ca", f"{TLS_DIR}/ca.crt"]
        if bg.spec.tls.mutual:  # the broker asks every client for a certificate: the agent's is the group's own
            args += ["--tls-cert", TLS_CERT_FILE, "--tls-key", TLS_KEY_FILE]
        mounts.append(secret_mount("tls"))
    return sidecar("lease-agent", image, args, mounts, LEASE_AGENT_RESOURCES)


def broker_config_files(bg: BrokerGroup, placement: BrokerPlacement, pod_prefix: str) -> dict[str, str]:
    header = f"Rendered by rocketmq-operator for BrokerGroup {bg.metadata.name}; edit the BrokerGroup, not this."
    return {
        f"{pod_prefix}-{i}.conf": properties_text(broker_config(bg, i, placement), header)
        for i in range(len(placement.replicas))
    }


def restart_digest(bg: BrokerGroup, placement: BrokerPlacement, image: str, java: list[str]) -> str:
    """The pod template's config digest: image, JVM options and every replica's restart-only keys. Hot keys
    (`core.config_change.HOT_BROKER_KEYS`) are left out: a hot change keeps the pod template, so the StatefulSet
    gets no new revision and no pod is restarted; the operator applies it to the running brokers instead."""
    return group_revision([revision(broker_config(bg, i, placement), image, java) for i in range(bg.spec.replicas)])


def serving_replicas(bg: BrokerGroup, running: int | None) -> int:
    """The StatefulSet's replica count. A controller-mode group never shrinks it here: the roll removes the
    highest ordinals one at a time, after a switchover if one is master (`platforms.kubernetes.roll`), and lowers
    the count itself; until then the removed replicas keep running, with their configs. Classic modes keep the
    StatefulSet's own scale-in (the master is ordinal 0, never removed)."""
    if bg.spec.ha_mode != HAMode.CONTROLLER.value or running is None:
        return bg.spec.replicas
    return max(bg.spec.replicas, running)


def auth_config_secret(bg: BrokerGroup, username: str, password: str) -> JSON:
    """The Secret the brokers of a group with spec.auth.enabled mount: the broker.conf keys that hold its admin
    (from spec.auth.adminSecret, which the operator reads). Not part of `render_broker_group`, which renders
    from the spec alone and never holds a secret."""
    name = bg.metadata.name
    text = properties_text(auth_secret_keys(username, password))
    return secret_config(auth_config_secret_name(name), namespace_of(bg), "broker", name, {"auth.properties": text})


def render_broker_group(
    bg: BrokerGroup,
    cg: ControllerGroup | None,
    running: int | None = None,
    agent_image: str = DEFAULT_AGENT_IMAGE,
) -> list[JSON]:
    """Every object of the group; ``running``: the StatefulSet's current replica count, if it exists;
    ``agent_image``: the lease agent's (controller mode, with the `core.lease.LEASE_AGENT_ANNOTATION` opt-in)."""
    name = bg.metadata.name
    namespace = namespace_of(bg)
    serving = serving_replicas(bg, running)
    placement = broker_placement(bg, cg, namespace, serving)
    files = broker_config_files(bg, placement, name)
    heap = bg.spec.jvm.heap or DEFAULT_BROKER_HEAP
    java = [*jvm_options("broker", heap, bg.spec.jvm.direct_memory), *tls_java_flags(bg), *bg.spec.jvm.extra_options]
    ports = container_ports(bg, placement)
    return [
        config_map(f"{name}-config", namespace, "broker", name, files),
        service(f"{name}-headless", namespace, "broker", name, BROKER_PORTS, headless=True),
        service(name, namespace, "broker", name, BROKER_PORTS[:1], headless=False),
        # Follows the master: the operator labels pods with their role from the controller's SyncStateSet.
        service(
            f"{name}-master",
            namespace,
            "broker",
            name,
            BROKER_PORTS[:1],
            headless=False,
            extra_selector={LABEL_ROLE: "master"},
        ),
        statefulset(
            name=name,
            namespace=namespace,
            component="broker",
            replicas=serving,
            image=broker_image(bg),
            pull_policy=bg.spec.image_pull_policy,
            role_arg="broker",
            java_opts=java,
            ports=ports,
            probe_port=BROKER_PORT,
            config_map=f"{name}-config",
            config_digest=restart_digest(bg, placement, broker_image(bg), java),
            storage_size=bg.spec.storage.size,
            storage_class=bg.spec.storage.storage_class_name,
            reclaim_policy=bg.spec.storage.reclaim_policy,
            resources=bg.spec.resources,
            node_selector=bg.spec.node_selector,
            tolerations=bg.spec.tolerations,
            affinity=bg.spec.affinity,
            spread=bg.spec.topology_spread_constraints,
            readiness_gate=True,
            priority_class=bg.spec.priority_class_name,
            ordered=bg.spec.ha_mode != HAMode.CONTROLLER.value,
            secret_config=auth_config_secret_name(name) if bg.spec.auth.enabled else None,
            tls_secret=tls_secret_name(bg),
            sidecars=[lease_agent(bg, agent_image)]
            if bg.spec.ha_mode == HAMode.CONTROLLER.value and lease_agent_enabled(bg.metadata.annotations)
            else None,
        ),
        # Controller mode can move the master before its pod is evicted (a drain's switchover): a budget for the
        # master and one for the rest, disjoint; a classic master cannot move, and a budget on it would only hang
        # the drain: one budget over the group.
        *(
            [
                replica_disruption_budget(name, namespace, name, LABEL_ROLE, bg.spec.replicas),
                master_disruption_budget(f"{name}-master", namespace, name, LABEL_ROLE),
            ]
            if bg.spec.ha_mode == HAMode.CONTROLLER.value
            else [pod_disruption_budget(name, namespace, "broker", name)]
        ),
        *([broker_network_policy(bg, cg, ports)] if bg.spec.network_policy.enabled else []),
    ]

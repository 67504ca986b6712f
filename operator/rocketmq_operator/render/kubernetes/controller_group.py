"""The objects of one ControllerGroup (controllers, and name servers when standalone)."""

from __future__ import annotations

from rocketmq_operator.api.models import ControllerGroup
from rocketmq_operator.render.config import (
    CONTROLLER_PORT,
    NAMESRV_PORT,
    RAFT_PORT,
    controller_config,
    namesrv_config,
    properties_text,
)
from rocketmq_operator.render.jvm import jvm_options
from rocketmq_operator.render.kubernetes.kinds import (
    config_hash,
    config_map,
    pod_disruption_budget,
    service,
    statefulset,
)
from rocketmq_operator.render.kubernetes.names import (
    DEFAULT_CONTROLLER_HEAP,
    JSON,
    controller_addresses,
    controller_image,
    controller_placement,
    name_server_addresses,
    namespace_of,
    tls_java_flags,
    tls_secret_name,
)
from rocketmq_operator.render.kubernetes.network_policy import controller_network_policies

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
    tls = tls_java_flags(cg)
    java = [*jvm_options(role, heap, cg.spec.jvm.direct_memory), *tls, *cg.spec.jvm.extra_options]
    ctl_ports = CONTROLLER_PORTS[1:] if standalone else CONTROLLER_PORTS
    if cg.spec.type == "jraft":
        ctl_ports = [*ctl_ports, {"name": "raft", "containerPort": RAFT_PORT, "protocol": "TCP"}]
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
        spread=cg.spec.topology_spread_constraints,
        readiness_gate=False,
        tls_secret=tls_secret_name(cg),
    )
    objects: list[JSON] = []
    if standalone:
        ns_name = f"{name}-namesrv"
        for i in range(len(placement.name_server_replicas)):
            files[f"{ns_name}-{i}.conf"] = properties_text(namesrv_config(cg, i, placement), header)
    objects.append(config_map(f"{name}-config", namespace, "controller", name, files))
    objects.append(
        config_map(
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
    objects.append(service(f"{name}-headless", namespace, "controller", name, ctl_ports, headless=True))
    objects.append(
        statefulset(
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
    objects.append(pod_disruption_budget(name, namespace, "controller", name))
    if standalone:
        ns_name = f"{name}-namesrv"
        ns_java = [*jvm_options("namesrv", heap, cg.spec.jvm.direct_memory), *tls, *cg.spec.jvm.extra_options]
        objects.append(service(f"{ns_name}-headless", namespace, "namesrv", name, CONTROLLER_PORTS[:1], headless=True))
        objects.append(service(name, namespace, "namesrv", name, CONTROLLER_PORTS[:1], headless=False))
        ns_sts = statefulset(
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
        objects.append(pod_disruption_budget(ns_name, namespace, "namesrv", name))
    else:
        objects.append(service(name, namespace, "controller", name, CONTROLLER_PORTS[:1], headless=False))
    if cg.spec.network_policy.enabled:
        objects.extend(controller_network_policies(cg, ctl_ports, CONTROLLER_PORTS[:1] if standalone else []))
    return objects

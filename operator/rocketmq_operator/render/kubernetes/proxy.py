"""The objects of one Proxy: rmq-proxy.json in a ConfigMap, a Deployment, the Service clients connect to and a
PodDisruptionBudget.

Proxies in cluster mode keep no state (routes come from the name servers, messages go straight to the brokers),
so they are a Deployment that a change rolls one pod at a time, a new one Ready first. They run from the broker
image, which holds the whole distribution (`rocketmq-entrypoint.sh proxy`). The Service is the one address
clients use: ClusterIP inside the cluster, NodePort or LoadBalancer outside it.

With spec.tls the pods mount the certificate Secret (`<proxy>-tls` or spec.tls.secretName) at TLS_DIR and run
`render.jvm.tls_flags` on it; rmq-proxy.json names the same files. Only the paths are in the ConfigMap, so a
renewed Secret changes no config hash and rolls nothing: kubelet updates the volume and the proxy reloads it.
"""

from __future__ import annotations

import json

from rocketmq_operator.api.models import (
    DEFAULT_IMAGE_REPOSITORY,
    DEFAULT_PROXY_GRPC_PORT,
    DEFAULT_PROXY_REMOTING_PORT,
    ControllerGroup,
    Proxy,
)
from rocketmq_operator.render.config import PROXY_CONFIG_FILE, auth_secret_keys, proxy_config, proxy_config_text
from rocketmq_operator.render.jvm import jvm_options
from rocketmq_operator.render.kubernetes.kinds import (
    config_hash,
    config_map,
    deployment,
    pod_disruption_budget,
    pod_template_spec,
    secret_config,
    service,
)
from rocketmq_operator.render.kubernetes.names import (
    JSON,
    TLS_CERT_FILE,
    TLS_KEY_FILE,
    RenderError,
    auth_config_secret_name,
    name_server_addresses,
    namespace_of,
    tls_java_flags,
    tls_secret_name,
)

COMPONENT = "proxy"
DEFAULT_PROXY_HEAP = "512Mi"
# The file of the proxies' secret settings (spec.auth: the admin they sign with): one JSON object, which the
# entrypoint merges into its copy of rmq-proxy.json (`rocketmq-entrypoint.sh`).
PROXY_SECRET_CONFIG_FILE = "auth.json"


def proxy_auth_config_secret(proxy: Proxy, username: str, password: str) -> JSON:
    """The Secret the proxies of a Proxy with spec.auth.enabled mount: the admin they sign their requests to the
    brokers with (from spec.auth.adminSecret, which the operator reads). Not part of `render_proxy`, which
    renders from the spec alone and never holds a secret."""
    name = proxy.metadata.name
    text = json.dumps(auth_secret_keys(username, password), separators=(",", ":")) + "\n"
    return secret_config(
        auth_config_secret_name(name), namespace_of(proxy), COMPONENT, name, {PROXY_SECRET_CONFIG_FILE: text}
    )


def proxy_image(proxy: Proxy) -> str:
    return proxy.spec.image or f"{DEFAULT_IMAGE_REPOSITORY}/rocketmq-broker:{proxy.spec.version}"


def proxy_remoting_port(proxy: Proxy) -> int:
    """The port the proxies serve remoting clients on: spec.service.remotingNodePort when set (RocketMQ's route
    names one host:port, so the port a client outside reaches must be the one the proxy listens on), else 8080."""
    return proxy.spec.service.remoting_node_port or DEFAULT_PROXY_REMOTING_PORT


def proxy_ports(proxy: Proxy) -> list[JSON]:
    ports: list[JSON] = [
        {"name": "grpc", "containerPort": DEFAULT_PROXY_GRPC_PORT, "protocol": "TCP"},
        {"name": "remoting", "containerPort": proxy_remoting_port(proxy), "protocol": "TCP"},
    ]
    if proxy.spec.metrics.enabled:
        ports.append({"name": "metrics", "containerPort": proxy.spec.metrics.port, "protocol": "TCP"})
    return ports


def proxy_name_servers(proxy: Proxy, cg: ControllerGroup | None) -> list[str]:
    if proxy.spec.name_servers:
        return list(proxy.spec.name_servers)
    if cg is None:
        ref = proxy.spec.controller_ref.name if proxy.spec.controller_ref else ""
        raise RenderError(
            f"Proxy {proxy.metadata.name}: spec.controllerRef.name: ControllerGroup '{ref}' not found in namespace "
            f"{namespace_of(proxy)}; rule: a Proxy reads routes from its ControllerGroup's name servers; fix: "
            "create that ControllerGroup or list spec.nameServers"
        )
    return name_server_addresses(cg, namespace_of(cg))


def proxy_endpoint_of(name: str, namespace: str) -> str:
    """The gRPC endpoint clients inside the cluster use: the proxies' Service's DNS name and port."""
    return f"{name}.{namespace}.svc:{DEFAULT_PROXY_GRPC_PORT}"


def proxy_endpoint(proxy: Proxy) -> str:
    return proxy_endpoint_of(proxy.metadata.name, namespace_of(proxy))


def _service(proxy: Proxy, namespace: str, ports: list[JSON]) -> JSON:
    svc = service(proxy.metadata.name, namespace, COMPONENT, proxy.metadata.name, ports, headless=False)
    spec = proxy.spec.service
    svc["spec"]["type"] = spec.type
    if spec.grpc_node_port is not None:
        next(p for p in svc["spec"]["ports"] if p["name"] == "grpc")["nodePort"] = spec.grpc_node_port
    if spec.remoting_node_port is not None:
        # The Service port, the node port and the proxy's listen port are one number: a LoadBalancer forwards its
        # port, a NodePort its node port, and the route the client gets names that port.
        next(p for p in svc["spec"]["ports"] if p["name"] == "remoting")["nodePort"] = spec.remoting_node_port
    if spec.load_balancer_source_ranges:
        svc["spec"]["loadBalancerSourceRanges"] = list(spec.load_balancer_source_ranges)
    if spec.annotations:
        svc["metadata"]["annotations"] = dict(sorted(spec.annotations.items()))
    return svc


def render_proxy(proxy: Proxy, cg: ControllerGroup | None) -> list[JSON]:
    name = proxy.metadata.name
    namespace = namespace_of(proxy)
    ports = proxy_ports(proxy)
    tls_files = (TLS_CERT_FILE, TLS_KEY_FILE) if proxy.spec.tls.enabled else None
    conf = proxy_config(
        proxy,
        proxy_name_servers(proxy, cg),
        DEFAULT_PROXY_GRPC_PORT,
        proxy_remoting_port(proxy),
        tls_files,
        advertised_host=proxy.spec.service.advertised_host,
    )
    files = {PROXY_CONFIG_FILE: proxy_config_text(conf)}
    java = [
        *jvm_options("proxy", proxy.spec.jvm.heap or DEFAULT_PROXY_HEAP, proxy.spec.jvm.direct_memory),
        *tls_java_flags(proxy),
        *proxy.spec.jvm.extra_options,
    ]
    pod = pod_template_spec(
        name=name,
        component=COMPONENT,
        image=proxy_image(proxy),
        pull_policy=proxy.spec.image_pull_policy,
        role_arg="proxy",
        java_opts=java,
        ports=ports,
        probe_port=DEFAULT_PROXY_GRPC_PORT,
        config_map=f"{name}-config",
        resources=proxy.spec.resources,
        node_selector=proxy.spec.node_selector,
        tolerations=proxy.spec.tolerations,
        affinity=proxy.spec.affinity,
        readiness_gate=False,
        spread=proxy.spec.topology_spread_constraints,
        data_volume={"emptyDir": {}},  # logs only: a proxy keeps no state
        secret_config=auth_config_secret_name(name) if proxy.spec.auth.enabled else None,
        tls_secret=tls_secret_name(proxy),
    )
    client_ports = [p for p in ports if p["name"] != "metrics"]
    return [
        config_map(f"{name}-config", namespace, COMPONENT, name, files),
        deployment(
            name=name,
            namespace=namespace,
            component=COMPONENT,
            replicas=proxy.spec.replicas,
            config_digest=config_hash(files),  # the image and JVM flags are in the template already
            pod_spec=pod,
            min_ready_seconds=proxy.spec.min_ready_seconds,
        ),
        _service(proxy, namespace, client_ports),
        pod_disruption_budget(name, namespace, COMPONENT, name),
    ]

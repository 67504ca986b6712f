"""The NetworkPolicies of a BrokerGroup and of a ControllerGroup (ingress only; egress is left open).

Each port is opened to the peers that use it and no wider: a port whose clients the spec leaves open (the
default) has a rule without `from` (anyone); a narrowed one also admits what the operator and RocketMQ itself
need there (the operator's pods, the namespace's broker and proxy pods, the group's controllers). Ports are read
from the same lists the StatefulSets expose, never restated. Policies add up in Kubernetes: a user's own NetworkPolicy
selecting the same pods can only open more.
"""

from __future__ import annotations

from collections.abc import Sequence

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, NetworkPeer
from rocketmq_operator.render.kubernetes.names import JSON, OPERATOR_POD_LABELS, labels, namespace_of, selector

BROKER_POD_LABELS: dict[str, str] = {
    "app.kubernetes.io/name": "rocketmq",
    "app.kubernetes.io/component": "broker",
    "app.kubernetes.io/managed-by": "rocketmq-operator",
}
"""Every broker pod the operator runs (any group): a controller's brokers, and a broker's peers across groups."""

PROXY_POD_LABELS: dict[str, str] = {**BROKER_POD_LABELS, "app.kubernetes.io/component": "proxy"}
"""Every proxy pod the operator runs: a proxy reads routes from the name servers and sends to the brokers."""


def operator_peer() -> JSON:
    """The operator's pods in any namespace, by the label the chart puts on them (rocketmq-operator.dev/operator)."""
    return {"namespaceSelector": {}, "podSelector": {"matchLabels": dict(OPERATOR_POD_LABELS)}}


def namespace_brokers_peer() -> JSON:
    return {"podSelector": {"matchLabels": dict(BROKER_POD_LABELS)}}


def namespace_proxies_peer() -> JSON:
    return {"podSelector": {"matchLabels": dict(PROXY_POD_LABELS)}}


def group_peer(group: str, component: str) -> JSON:
    return {"podSelector": {"matchLabels": selector(group, component)}}


def peer(p: NetworkPeer) -> JSON:
    """A spec peer as a NetworkPolicyPeer, leaving out what is empty (an empty selector stays `{}`: all)."""
    out: JSON = {}
    for key, sel in (("podSelector", p.pod_selector), ("namespaceSelector", p.namespace_selector)):
        if sel is None:
            continue
        rendered: JSON = {}
        if sel.match_labels:
            rendered["matchLabels"] = dict(sorted(sel.match_labels.items()))
        if sel.match_expressions:
            rendered["matchExpressions"] = [
                {"key": e.key, "operator": e.operator, **({"values": list(e.values)} if e.values else {})}
                for e in sel.match_expressions
            ]
        out[key] = rendered
    if p.ip_block is not None:
        out["ipBlock"] = {
            "cidr": p.ip_block.cidr,
            **({"except": list(p.ip_block.except_)} if p.ip_block.except_ else {}),
        }
    return out


def ingress(ports: Sequence[JSON], sources: list[JSON] | None) -> JSON:
    """One ingress rule: `ports` (container port entries) from `sources`; None: from anywhere."""
    rule: JSON = {"ports": [{"protocol": p.get("protocol", "TCP"), "port": p["containerPort"]} for p in ports]}
    if sources is not None:
        rule["from"] = sources
    return rule


def clients_or_anyone(clients: Sequence[NetworkPeer], always: list[JSON]) -> list[JSON] | None:
    """The spec's client peers plus what must always get in, or None (anyone) when the spec names none."""
    if not clients:
        return None
    return [*(peer(c) for c in clients), *always]


def network_policy(name: str, namespace: str, component: str, group: str, rules: list[JSON]) -> JSON:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": labels(group, component)},
        "spec": {
            "podSelector": {"matchLabels": selector(group, component)},
            "policyTypes": ["Ingress"],
            "ingress": rules,
        },
    }


def port_named(ports: Sequence[JSON], name: str) -> list[JSON]:
    return [p for p in ports if p["name"] == name]


def broker_network_policy(bg: BrokerGroup, cg: ControllerGroup | None, ports: Sequence[JSON]) -> JSON:
    """``ports``: the broker container's ports (remoting, vip, ha, and metrics when the exporter runs)."""
    name = bg.metadata.name
    spec = bg.spec.network_policy
    # A slave reads topics and offsets from its master's remoting port, a slave acting as master sends to other
    # groups' brokers, the operator administers every broker there, controllers notify role changes there, and the
    # namespace's proxies send and pull there for their gRPC clients.
    always = [operator_peer(), namespace_brokers_peer(), namespace_proxies_peer()]
    if cg is not None:
        always.append(group_peer(cg.metadata.name, "controller"))
    rules = [
        ingress([*port_named(ports, "remoting"), *port_named(ports, "vip")], clients_or_anyone(spec.clients, always)),
        ingress(port_named(ports, "ha"), [group_peer(name, "broker")]),
    ]
    metrics = port_named(ports, "metrics")
    if metrics:
        rules.append(ingress(metrics, [peer(m) for m in spec.metrics] or None))
    return network_policy(name, namespace_of(bg), "broker", name, rules)


def controller_network_policies(
    cg: ControllerGroup, ports: Sequence[JSON], namesrv_ports: Sequence[JSON]
) -> list[JSON]:
    """``ports``: the controller container's (namesrv when embedded, controller, raft for JRaft);
    ``namesrv_ports``: the standalone name servers' (empty when embedded)."""
    name = cg.metadata.name
    namespace = namespace_of(cg)
    spec = cg.spec.network_policy
    name_server_sources = clients_or_anyone(
        spec.clients, [operator_peer(), namespace_brokers_peer(), namespace_proxies_peer()]
    )
    rules: list[JSON] = []
    if port_named(ports, "namesrv"):
        rules.append(ingress(port_named(ports, "namesrv"), name_server_sources))
    # DLedger's peers talk on the controller port itself; JRaft's on a port of their own.
    controller_sources = [operator_peer(), namespace_brokers_peer(), group_peer(name, "controller")]
    rules.append(ingress(port_named(ports, "controller"), controller_sources))
    if port_named(ports, "raft"):
        rules.append(ingress(port_named(ports, "raft"), [group_peer(name, "controller")]))
    out = [network_policy(name, namespace, "controller", name, rules)]
    if namesrv_ports:
        out.append(
            network_policy(f"{name}-namesrv", namespace, "namesrv", name, [ingress(namesrv_ports, name_server_sources)])
        )
    return out


def network_policy_names(resource: BrokerGroup | ControllerGroup) -> list[str]:
    """The names the resource's policies have when spec.networkPolicy is on (what to delete when it is off)."""
    name = resource.metadata.name
    if isinstance(resource, ControllerGroup) and resource.spec.standalone:
        return [name, f"{name}-namesrv"]
    return [name]

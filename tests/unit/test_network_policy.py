"""The NetworkPolicies rendered for BrokerGroups and ControllerGroups (spec.networkPolicy).

What a policy must never do is cut a port the pods serve: once a pod is selected by a NetworkPolicy, every port
no rule names is closed. So every example's policies are checked against the StatefulSets they select (same pod
selector, every container port in some rule, no port that is not a container port), and each port's sources are
checked rule by rule.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup
from rocketmq_operator.api.validation import validate_document, validate_file
from rocketmq_operator.render.kubernetes import render_all, render_broker_group, render_controller_group
from rocketmq_operator.render.kubernetes.names import OPERATOR_POD_LABELS, selector

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
JSON = dict[str, Any]

OPERATOR = {"namespaceSelector": {}, "podSelector": {"matchLabels": OPERATOR_POD_LABELS}}
NAMESPACE_BROKERS = {
    "podSelector": {
        "matchLabels": {
            "app.kubernetes.io/name": "rocketmq",
            "app.kubernetes.io/component": "broker",
            "app.kubernetes.io/managed-by": "rocketmq-operator",
        }
    }
}
# The namespace's proxies (RocketMQ 5's gRPC front door) read routes from the name servers and send to the brokers.
NAMESPACE_PROXIES = {
    "podSelector": {
        "matchLabels": {
            "app.kubernetes.io/name": "rocketmq",
            "app.kubernetes.io/component": "proxy",
            "app.kubernetes.io/managed-by": "rocketmq-operator",
        }
    }
}


def _parse(doc: JSON) -> Any:
    report = validate_document(doc)
    assert report.ok, [str(p) for p in report.errors]
    return report.resource


def _cg(**spec: Any) -> ControllerGroup:
    doc = {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ControllerGroup", "metadata": {"name": "ctl"}}
    cg = _parse({**doc, "spec": {"replicas": 3, **spec}})
    assert isinstance(cg, ControllerGroup)
    return cg


def _bg(**spec: Any) -> BrokerGroup:
    doc = {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup", "metadata": {"name": "broker-a"}}
    bg = _parse({**doc, "spec": {"replicas": 3, "controllerRef": {"name": "ctl"}, **spec}})
    assert isinstance(bg, BrokerGroup)
    return bg


def _policies(objects: list[JSON]) -> dict[str, JSON]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "NetworkPolicy"}


def _sources(policy: JSON) -> dict[int, list[JSON] | None]:
    """port → the `from` of the rule naming it (None: anyone)."""
    out: dict[int, list[JSON] | None] = {}
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            assert port["port"] not in out, f"port {port['port']} in two rules"
            out[port["port"]] = rule.get("from")
    return out


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_every_policy_selects_its_pods_and_keeps_every_port_they_serve(example: Path) -> None:
    objects = render_all([r.resource for r in validate_file(example) if r.resource is not None])
    statefulsets = [o for o in objects if o["kind"] == "StatefulSet"]
    policies = list(_policies(objects).values())
    assert len(policies) == len(statefulsets)  # every example leaves spec.networkPolicy at its default: on
    for sts in statefulsets:
        pod_labels = sts["spec"]["selector"]["matchLabels"]
        selecting = [p for p in policies if p["spec"]["podSelector"]["matchLabels"] == pod_labels]
        assert len(selecting) == 1, sts["metadata"]["name"]
        policy = selecting[0]
        assert policy["metadata"]["namespace"] == sts["metadata"]["namespace"]
        assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays open (DNS, name servers, peers)
        served = {p["containerPort"] for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
        assert set(_sources(policy)) == served


def test_broker_defaults_open_client_and_metrics_ports_and_keep_ha_in_the_group() -> None:
    policy = _policies(render_broker_group(_bg(), _cg()))["broker-a"]
    sources = _sources(policy)
    assert sources[10911] is None and sources[10909] is None  # clients: anyone by default
    assert sources[5557] is None  # metrics: anyone by default
    assert sources[10912] == [{"podSelector": {"matchLabels": selector("broker-a", "broker")}}]


def test_broker_metrics_rule_follows_the_exporter_port() -> None:
    assert 9100 in _sources(_policies(render_broker_group(_bg(metrics={"port": 9100}), _cg()))["broker-a"])
    assert set(_sources(_policies(render_broker_group(_bg(metrics={"enabled": False}), _cg()))["broker-a"])) == {
        10911,
        10909,
        10912,
    }


def test_narrowed_broker_clients_still_admit_the_operator_the_brokers_the_proxies_and_the_controllers() -> None:
    clients = [
        {"namespaceSelector": {"matchLabels": {"team": "orders"}}},
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
    ]
    monitoring = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    bg = _bg(networkPolicy={"clients": clients, "metrics": monitoring})
    sources = _sources(_policies(render_broker_group(bg, _cg()))["broker-a"])
    controllers = {"podSelector": {"matchLabels": selector("ctl", "controller")}}
    assert sources[10911] == [*clients, OPERATOR, NAMESPACE_BROKERS, NAMESPACE_PROXIES, controllers]
    assert sources[10909] == sources[10911]
    assert sources[5557] == monitoring
    # Without a ControllerGroup (classic modes with spec.nameServers) there are no controllers to admit.
    classic = _bg(haMode="sync", controllerRef=None, nameServers=["ns:9876"], networkPolicy={"clients": clients})
    assert _sources(_policies(render_broker_group(classic, None))["broker-a"])[10911] == [
        *clients,
        OPERATOR,
        NAMESPACE_BROKERS,
        NAMESPACE_PROXIES,
    ]


def test_a_selector_is_rendered_as_written_without_empty_parts() -> None:
    clients = [
        {"podSelector": {}},
        {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}},
    ]
    sources = _sources(_policies(render_broker_group(_bg(networkPolicy={"clients": clients}), _cg()))["broker-a"])
    assert sources[10911][:2] == clients  # type: ignore[index]


def test_disabled_renders_no_policy() -> None:
    assert _policies(render_broker_group(_bg(networkPolicy={"enabled": False}), _cg())) == {}
    assert _policies(render_controller_group(_cg(networkPolicy={"enabled": False}))) == {}


@pytest.mark.parametrize("consensus", ["dledger", "jraft"])
def test_controller_port_only_from_brokers_operator_and_peers(consensus: str) -> None:
    sources = _sources(_policies(render_controller_group(_cg(type=consensus)))["ctl"])
    peers = {"podSelector": {"matchLabels": selector("ctl", "controller")}}
    assert sources[9876] is None  # the embedded name server: anyone by default
    # DLedger's peers talk on the controller port itself, so the controllers are admitted there too.
    assert sources[9878] == [OPERATOR, NAMESPACE_BROKERS, peers]
    if consensus == "jraft":
        assert sources[9880] == [peers]
    else:
        assert 9880 not in sources


def test_standalone_name_servers_get_their_own_policy() -> None:
    clients = [{"namespaceSelector": {"matchLabels": {"team": "orders"}}}]
    policies = _policies(render_controller_group(_cg(standalone=True, networkPolicy={"clients": clients})))
    assert set(policies) == {"ctl", "ctl-namesrv"}
    assert 9876 not in _sources(policies["ctl"])
    namesrv = policies["ctl-namesrv"]
    assert namesrv["spec"]["podSelector"]["matchLabels"] == selector("ctl", "namesrv")
    assert _sources(namesrv) == {9876: [*clients, OPERATOR, NAMESPACE_BROKERS, NAMESPACE_PROXIES]}


def test_rendering_does_not_share_objects_between_rules() -> None:
    """YAML anchors in `render` output (a dict reused in two places) would be a surprise; and an apply that
    mutated one rule's peer would change another's."""
    policy = _policies(render_controller_group(_cg(type="jraft")))["ctl"]
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict | list):
            assert id(node) not in seen
            seen.add(id(node))
            for child in node.values() if isinstance(node, dict) else node:
                walk(child)

    walk(copy.copy(policy))


# --- the operator applies them, and deletes them when they are turned off ---


def _reconcile(fake: Any, kind: str, name: str) -> Any:
    from rocketmq_operator.platforms.kubernetes.reconcile import reconcile

    current = asyncio.run(fake.get(kind, "ns", name))
    assert current is not None
    return asyncio.run(reconcile(fake, current))


def test_the_reconciler_applies_the_policies_and_deletes_only_its_own_when_turned_off() -> None:
    from kube_fake import FakeApi

    docs = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "examples" / "quickstart.yaml").read_text())}
    fake = FakeApi()
    for kind in ("ControllerGroup", "BrokerGroup"):
        fake.put(docs[kind])
    _reconcile(fake, "ControllerGroup", "rocketmq-ctl")
    _reconcile(fake, "BrokerGroup", "broker-a")
    assert ("NetworkPolicy", "broker-a") in fake.writes_of("apply")
    assert ("NetworkPolicy", "rocketmq-ctl") in fake.writes_of("apply")
    policy = asyncio.run(fake.get("NetworkPolicy", "ns", "broker-a"))
    assert policy is not None and policy["metadata"]["ownerReferences"][0]["uid"] == "uid-broker-a"

    bg = asyncio.run(fake.get("BrokerGroup", "ns", "broker-a"))
    assert bg is not None
    bg["spec"]["networkPolicy"] = {"enabled": False}
    fake.objects[("BrokerGroup", "ns", "broker-a")] = bg
    outcome = _reconcile(fake, "BrokerGroup", "broker-a")
    assert outcome.deleted == ["NetworkPolicy/broker-a"]
    assert asyncio.run(fake.get("NetworkPolicy", "ns", "broker-a")) is None
    conditions = fake.objects[("BrokerGroup", "ns", "broker-a")]["status"]["conditions"]
    reconciled = next(c for c in conditions if c["type"] == "Reconciled")
    assert "deleted NetworkPolicy/broker-a" in reconciled["message"]
    # Off and gone: the next pass writes nothing.
    before = fake.writes
    assert _reconcile(fake, "BrokerGroup", "broker-a").deleted == []
    assert fake.writes == before

    # A policy of that name that the group does not own (the user's) is left alone.
    fake.put({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "broker-a", "namespace": "ns"}, "spec": {"podSelector": {}}})  # fmt: skip
    assert _reconcile(fake, "BrokerGroup", "broker-a").deleted == []
    assert asyncio.run(fake.get("NetworkPolicy", "ns", "broker-a")) is not None


def test_the_chart_labels_the_operator_pods_as_the_policies_expect() -> None:
    import re

    template = (ROOT / "charts" / "rocketmq-operator" / "templates" / "deployment.yaml").read_text()
    pod_labels = template.split("template:", 1)[1].split("spec:", 1)[0]
    for key, value in OPERATOR_POD_LABELS.items():
        assert re.search(rf"^\s+{re.escape(key)}: \"{value}\"$", pod_labels, re.M), (key, value)


def test_the_reconciler_warns_of_a_downgrade_from_what_the_brokers_run() -> None:
    """The Kubernetes path has no old spec: a spec.version older than the versions the brokers report running is
    a downgrade, said in the status and as a Warning Event with the change (docs: issue 35, defect 9)."""
    from kube_fake import FakeApi

    docs = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "examples" / "quickstart.yaml").read_text())}
    fake = FakeApi()
    for kind in ("ControllerGroup", "BrokerGroup"):
        fake.put(docs[kind])
    _reconcile(fake, "ControllerGroup", "rocketmq-ctl")

    def with_version(version: str) -> Any:
        bg = asyncio.run(fake.get("BrokerGroup", "ns", "broker-a"))
        assert bg is not None
        bg.setdefault("status", {})["replicas"] = [
            {"name": "broker-a-0", "version": "V5_5_0"},
            {"name": "broker-a-1", "version": None},
        ]
        bg["spec"]["version"] = version
        fake.objects[("BrokerGroup", "ns", "broker-a")] = bg
        return _reconcile(fake, "BrokerGroup", "broker-a")

    assert with_version("5.5.0").downgrade is None
    outcome = with_version("5.4.0")
    assert outcome.downgrade is not None and "spec.version 5.5.0 -> 5.4.0 is a downgrade" in outcome.downgrade
    assert "StatefulSet/broker-a" in outcome.applied  # the roll starts with it: the Event is said then, once
    conditions = fake.objects[("BrokerGroup", "ns", "broker-a")]["status"]["conditions"]
    reconciled = next(c for c in conditions if c["type"] == "Reconciled")
    assert "is a downgrade" in reconciled["message"]

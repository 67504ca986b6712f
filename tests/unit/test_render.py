"""Golden renderings of every example, CRD files in sync, and the quorum keys per mode in broker.conf.

Regenerate goldens after an intended change with: UPDATE_GOLDEN=1 make test (then review the diff).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from rocketmq_operator.api.crd import all_crds, crd_file_name, crds_yaml, dump_yaml
from rocketmq_operator.api.validation import validate_file
from rocketmq_operator.render.kubernetes import LABEL_ROLE, render_all

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
# Every example, and the manifests of kinds no example shows yet (tests/golden/inputs).
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml")) + sorted((GOLDEN / "inputs").glob("*.yaml"))


def _render(path: Path) -> str:
    resources = [r.resource for r in validate_file(path) if r.resource is not None]
    return "---\n".join(dump_yaml(o) for o in render_all(resources))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_golden(example: Path) -> None:
    reports = validate_file(example)
    assert all(r.ok for r in reports), [str(p) for r in reports for p in r.errors]
    rendered = _render(example)
    golden = GOLDEN / example.name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden for {example.name}: run UPDATE_GOLDEN=1 pytest {__file__}"
    assert rendered == golden.read_text(encoding="utf-8")


def test_render_is_deterministic() -> None:
    assert _render(EXAMPLES[0]) == _render(EXAMPLES[0])


def test_crd_files_match_generator() -> None:
    for crd in all_crds():
        path = ROOT / "crds" / crd_file_name(crd)
        assert path.read_text(encoding="utf-8") == dump_yaml(crd), "regenerate: rocketmq-operator crds --write crds"
    assert crds_yaml() == "---\n".join(dump_yaml(c) for c in all_crds())


def _objects(example: str) -> list[dict[str, object]]:
    return list(yaml.safe_load_all(_render(ROOT / "examples" / example)))


def _conf(objects: list[dict[str, object]], cm_name: str) -> dict[str, dict[str, str]]:
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cm_name)  # type: ignore[index]
    out: dict[str, dict[str, str]] = {}
    for key, text in cm["data"].items():  # type: ignore[index, union-attr]
        out[key] = dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return out


def test_slave_acting_master_keys() -> None:
    files = _conf(_objects("slave-acting-master.yaml"), "broker-sam-config")
    roles = sorted(c["brokerRole"] for c in files.values())
    assert roles == ["SLAVE", "SYNC_MASTER"]
    for c in files.values():
        assert c["totalReplicas"] == "2"
        assert c["inSyncReplicas"] == "2"
        assert c["minInSyncReplicas"] == "1"
        assert c["enableAutoInSyncReplicas"] == "true"
        assert c["enableSlaveActingMaster"] == "true"
        assert c["haMaxGapNotInSync"] == str(256 * 1024 * 1024)
        assert "clientCloseSocketIfTimeout" not in c  # no controller to mislead


def test_quickstart_controller_mode() -> None:
    objects = _objects("quickstart.yaml")
    files = _conf(objects, "broker-a-config")
    assert sorted(files) == ["broker-a-0.conf", "broker-a-1.conf", "broker-a-2.conf"]
    for c in files.values():
        assert c["enableControllerMode"] == "true"
        assert c["inSyncReplicas"] == "2" and c["minInSyncReplicas"] == "2"
        assert c["controllerAddr"] == "rocketmq-ctl-0.rocketmq-ctl-headless.default.svc:9878"
        assert "enableAutoInSyncReplicas" not in c and "haMaxGapNotInSync" not in c
        # A timed-out request to a partitioned controller leader must not close the connection: the controller
        # reads the close as the broker gone and elects away from a serving master (docs/chaos.md).
        assert c["clientCloseSocketIfTimeout"] == "false"
    sts = next(o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "broker-a")  # type: ignore[index]
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}  # type: ignore[index]
    pod = sts["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["readinessGates"] == [{"conditionType": "rocketmq-operator.dev/in-sync"}]
    java = next(e["value"] for e in pod["containers"][0]["env"] if e["name"] == "JAVA_OPTS")
    assert "-Xmx1g" in java and "-XX:MaxDirectMemorySize=1g" in java
    ctl = next(o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "rocketmq-ctl")  # type: ignore[index]
    ctl_env = ctl["spec"]["template"]["spec"]["containers"][0]["env"]  # type: ignore[index]
    # The controller (hosted by the name server) needs java.lang opened for Hessian on JDK 17.
    assert "--add-opens=java.base/java.lang=ALL-UNNAMED" in next(
        e["value"] for e in ctl_env if e["name"] == "JAVA_OPTS"
    )
    kinds = sorted(str(o["kind"]) for o in objects)
    assert kinds.count("PodDisruptionBudget") == 3  # the controllers', the brokers', and the master's
    master_pdb = next(
        o for o in objects if o["metadata"]["name"] == "broker-a-master" and o["kind"] == "PodDisruptionBudget"
    )  # type: ignore[index]
    # No voluntary eviction of the master's pod: a drain waits until the operator has switched the master away.
    assert master_pdb["spec"]["minAvailable"] == 1  # type: ignore[index]
    assert master_pdb["spec"]["selector"]["matchLabels"][LABEL_ROLE] == "master"  # type: ignore[index]
    # The rest of the group in a budget of its own: the eviction API refuses a pod two budgets select (a 500 that
    # `kubectl drain` does not retry). Every pod not labelled master (NotIn also takes a pod not labelled yet), one
    # at a time: an integer minAvailable (with maxUnavailable the controller would expect the whole StatefulSet).
    replica_pdb = next(o for o in objects if o["metadata"]["name"] == "broker-a" and o["kind"] == "PodDisruptionBudget")  # type: ignore[index]
    assert LABEL_ROLE not in replica_pdb["spec"]["selector"]["matchLabels"]  # type: ignore[index]
    assert replica_pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in replica_pdb["spec"]  # type: ignore[index]
    assert replica_pdb["spec"]["selector"]["matchExpressions"] == [  # type: ignore[index]
        {"key": LABEL_ROLE, "operator": "NotIn", "values": ["master"]}
    ]
    conn = next(o for o in objects if o["metadata"]["name"] == "rocketmq-ctl-connection")  # type: ignore[index]
    assert conn["data"]["nameServers"] == "rocketmq-ctl-0.rocketmq-ctl-headless.default.svc:9876"  # type: ignore[index]


# --- broker metrics (spec.metrics): RocketMQ's own Prometheus exporter ------------------------------------------


def _broker_pod_ports(objects: list[dict[str, object]], name: str) -> dict[str, int]:
    sts = next(o for o in objects if o["kind"] == "StatefulSet" and o["metadata"]["name"] == name)  # type: ignore[index]
    container = sts["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    return {p["name"]: p["containerPort"] for p in container["ports"]}


@pytest.mark.parametrize(
    ("example", "group"),
    [("quickstart.yaml", "broker-a"), ("slave-acting-master.yaml", "broker-sam")],
    ids=["controller mode", "classic (slaveActingMaster)"],
)
def test_every_broker_runs_the_prometheus_exporter(example: str, group: str) -> None:
    objects = _objects(example)
    files = _conf(objects, f"{group}-config")
    assert files
    for c in files.values():
        # BrokerConfig (RocketMQ 5.5.0): metricsExporterType PROM starts BrokerMetricsManager's PrometheusHttpServer
        # on metricsPromExporterHost:metricsPromExporterPort (default 5557; a blank host would bind brokerIP1 only).
        assert c["metricsExporterType"] == "PROM"
        assert c["metricsPromExporterHost"] == "0.0.0.0"
        assert c["metricsPromExporterPort"] == "5557"
    # The pod exposes it as the named port the chart's PodMonitor scrapes.
    assert _broker_pod_ports(objects, group)["metrics"] == 5557


def _render_docs(*docs: dict[str, object]) -> list[dict[str, object]]:
    from rocketmq_operator.api.validation import validate_document

    resources = []
    for doc in docs:
        report = validate_document(doc)
        assert report.resource is not None, [str(p) for p in report.errors]
        resources.append(report.resource)
    return list(render_all(resources))


def _broker_doc(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "rocketmq-operator.dev/v1alpha1",
        "kind": "BrokerGroup",
        "metadata": {"name": "bg", "namespace": "mq"},
        "spec": {"replicas": 2, "haMode": "sync", "nameServers": ["ns-0:9876"], **spec},
    }


def test_metrics_port_and_switch() -> None:
    objects = _render_docs(_broker_doc(metrics={"port": 9100}))
    assert all(c["metricsPromExporterPort"] == "9100" for c in _conf(objects, "bg-config").values())
    assert _broker_pod_ports(objects, "bg")["metrics"] == 9100

    objects = _render_docs(_broker_doc(metrics={"enabled": False}))
    for c in _conf(objects, "bg-config").values():
        assert c["metricsExporterType"] == "DISABLE"
        assert "metricsPromExporterPort" not in c and "metricsPromExporterHost" not in c
    assert "metrics" not in _broker_pod_ports(objects, "bg")


def test_the_pod_port_follows_user_broker_config() -> None:
    # brokerConfig wins over spec.metrics; the container port is read back from the rendered broker.conf.
    objects = _render_docs(_broker_doc(brokerConfig={"metricsPromExporterPort": 9200}))
    assert _broker_pod_ports(objects, "bg")["metrics"] == 9200
    objects = _render_docs(_broker_doc(brokerConfig={"metricsExporterType": "LOG"}))
    assert "metrics" not in _broker_pod_ports(objects, "bg")

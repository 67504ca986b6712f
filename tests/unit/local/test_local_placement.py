"""The local placement renders through render.config: only addresses, ports and paths differ from Kubernetes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketmq_operator.api.models import BrokerGroup, ConsumerGroup, ControllerGroup, Topic
from rocketmq_operator.api.validation import validate_document, validate_file
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import (
    BROKER_PLATFORM_DEFAULTS,
    PlacementError,
    build_state,
    check_names,
    load_resources,
    manifest_digest,
    port_needs,
    render_configs,
)
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.render.jvm import MAIN_CLASSES, TLS_DISABLED_FLAGS

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
STATE = Path("/state")
BASE = 22900

Resource = BrokerGroup | ControllerGroup


def resources_of(path: Path) -> list[Resource]:
    reports = validate_file(path)
    assert all(r.ok for r in reports)
    return [r.resource for r in reports if r.resource is not None]


def resources(*docs: dict[str, Any]) -> list[Resource]:
    out = []
    for doc in docs:
        report = validate_document(doc)
        assert report.resource is not None, [str(p) for p in report.errors]
        out.append(report.resource)
    return out


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def cg_doc(name: str = "ctl", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "ControllerGroup",
            "metadata": {"name": name}, "spec": {"replicas": 1, **spec}}  # fmt: skip


def bg_doc(name: str = "bg", **spec: Any) -> dict[str, Any]:
    base = {"replicas": 2, "controllerRef": {"name": "ctl"}}
    return {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup",
            "metadata": {"name": name}, "spec": {**base, **spec}}  # fmt: skip


def quickstart() -> tuple[list[Resource], dict[str, int], dict[str, dict[str, str]]]:
    res = resources_of(QUICKSTART)
    ports = pack(port_needs(res), BASE)
    confs = {name: props(text) for name, text in render_configs(res, ports, StateLayout(STATE)).items()}
    return res, ports, confs


def test_quickstart_port_needs() -> None:
    res = resources_of(QUICKSTART)
    assert [(n.key, n.offsets) for n in port_needs(res)] == [
        ("rocketmq-ctl-0.namesrv", (0,)),
        ("rocketmq-ctl-0.controller", (0,)),
        ("broker-a-0.listen", (-2, -1, 0, 1)),
        ("broker-a-1.listen", (-2, -1, 0, 1)),
        ("broker-a-2.listen", (-2, -1, 0, 1)),
    ]


def test_quickstart_broker_configs_point_at_local_ports() -> None:
    _, ports, confs = quickstart()
    assert sorted(confs) == ["broker-a-0", "broker-a-1", "broker-a-2", "rocketmq-ctl-0"]
    for i in range(3):
        conf = confs[f"broker-a-{i}"]
        listen = ports[f"broker-a-{i}.listen"]
        assert conf["namesrvAddr"] == f"127.0.0.1:{BASE}"
        assert conf["controllerAddr"] == f"127.0.0.1:{BASE + 1}"  # the DLedger peer port, not the namesrv port
        assert conf["brokerIP1"] == conf["brokerIP2"] == "127.0.0.1"
        assert (conf["listenPort"], conf["haListenPort"]) == (str(listen), str(listen + 1))
        assert conf["storePathRootDir"] == f"/state/data/broker-a-{i}/store"
        assert conf["storePathCommitLog"] == f"/state/data/broker-a-{i}/store/commitlog"
        # what the operator decides, unchanged by the platform
        assert (conf["brokerId"], conf["brokerRole"], conf["enableControllerMode"]) == ("-1", "SLAVE", "true")
        assert (conf["inSyncReplicas"], conf["minInSyncReplicas"]) == ("2", "2")
        for key, value in BROKER_PLATFORM_DEFAULTS.items():
            assert conf[key] == value
    assert int(BROKER_PLATFORM_DEFAULTS["mappedFileSizeConsumeQueue"]) % 20 == 0


def test_quickstart_controller_config() -> None:
    _, _, confs = quickstart()
    ctl = confs["rocketmq-ctl-0"]
    assert ctl["listenPort"] == str(BASE)
    assert ctl["enableControllerInNamesrv"] == "true"
    assert ctl["controllerDLegerPeers"] == f"n0-127.0.0.1:{BASE + 1}"
    assert ctl["controllerDLegerSelfId"] == "n0"
    assert ctl["controllerStorePath"] == "/state/data/rocketmq-ctl-0/controller"
    assert int(ctl["mappedFileSize"]) <= 16 * 1024 * 1024


def test_only_addresses_ports_and_paths_differ_from_kubernetes() -> None:
    from rocketmq_operator.render.config import broker_config
    from rocketmq_operator.render.kubernetes import broker_placement

    res, _ports, confs = quickstart()
    bg = next(r for r in res if isinstance(r, BrokerGroup))
    cg = next(r for r in res if isinstance(r, ControllerGroup))
    k8s = broker_config(bg, 0, broker_placement(bg, cg, "default"))
    local = confs["broker-a-0"]
    placement_keys = {"namesrvAddr", "controllerAddr", "listenPort", "haListenPort", "storePathRootDir",
                      "storePathCommitLog", "brokerIP1", "brokerIP2",
                      "metricsPromExporterHost", "metricsPromExporterPort"}  # fmt: skip
    differing = {k for k in set(k8s) | set(local) if k8s.get(k) != local.get(k)}
    assert differing <= placement_keys | set(BROKER_PLATFORM_DEFAULTS)
    assert k8s["metricsExporterType"] == local["metricsExporterType"] == "PROM"


def test_each_local_broker_has_its_own_metrics_port() -> None:
    """Several brokers on one host: each exporter on 127.0.0.1 at its listen port - 1, reserved in its block."""
    res = resources(cg_doc(), bg_doc("bg", replicas=3), bg_doc("other", replicas=2))
    ports = pack(port_needs(res), BASE)
    confs = {name: props(text) for name, text in render_configs(res, ports, StateLayout(STATE)).items()}
    brokers = {name: c for name, c in confs.items() if "brokerName" in c}
    assert len(brokers) == 5
    metrics_ports = [int(c["metricsPromExporterPort"]) for c in brokers.values()]
    assert len(set(metrics_ports)) == len(metrics_ports)
    taken = {int(c["listenPort"]) + o for c in brokers.values() for o in (-2, 0, 1)} | {
        int(c["listenPort"]) for name, c in confs.items() if name not in brokers
    }
    assert not taken & set(metrics_ports)
    for c in brokers.values():
        assert c["metricsExporterType"] == "PROM" and c["metricsPromExporterHost"] == "127.0.0.1"
        assert int(c["metricsPromExporterPort"]) == int(c["listenPort"]) - 1


def test_local_metrics_can_be_switched_off() -> None:
    res = resources(cg_doc(), bg_doc(metrics={"enabled": False}))
    confs = render_configs(res, pack(port_needs(res), BASE), StateLayout(STATE))
    conf = props(confs["bg-0"])
    assert conf["metricsExporterType"] == "DISABLE" and "metricsPromExporterPort" not in conf


def test_user_broker_config_wins_over_platform_defaults() -> None:
    res = resources(cg_doc(), bg_doc(brokerConfig={"mappedFileSizeCommitLog": 134217728}))
    confs = render_configs(res, pack(port_needs(res), BASE), StateLayout(STATE))
    assert props(confs["bg-0"])["mappedFileSizeCommitLog"] == "134217728"


def test_standalone_controllers_and_name_servers() -> None:
    res = resources(cg_doc(replicas=3, standalone=True, nameServers={"replicas": 2}), bg_doc())
    ports = pack(port_needs(res), BASE)
    state = build_state(res, ports, StateLayout(STATE), files=["f"], distribution="/dist", rocketmq_version="5.5.0")
    roles = [(r.name, r.role, r.phase) for r in state.replicas]
    assert roles == [
        ("ctl-0", "controller", 0), ("ctl-1", "controller", 0), ("ctl-2", "controller", 0),
        ("ctl-namesrv-0", "namesrv", 0), ("ctl-namesrv-1", "namesrv", 0),
        ("bg-0", "broker", 1), ("bg-1", "broker", 1),
    ]  # fmt: skip
    ctl = state.group("ctl")
    assert ctl is not None and len(ctl.controllers) == 3 and len(ctl.name_servers) == 2
    assert state.controllers == ctl.controllers and state.name_servers == ctl.name_servers
    confs = {k: props(v) for k, v in render_configs(res, ports, StateLayout(STATE)).items()}
    peers = ";".join(f"n{i}-{a}" for i, a in enumerate(ctl.controllers))
    assert all(confs[f"ctl-{i}"]["controllerDLegerPeers"] == peers for i in range(3))
    assert "enableControllerInNamesrv" not in confs["ctl-0"]
    assert confs["ctl-namesrv-1"]["listenPort"] == ctl.name_servers[1].rpartition(":")[2]
    assert confs["bg-0"]["controllerAddr"] == ";".join(ctl.controllers)
    assert confs["bg-0"]["namesrvAddr"] == ";".join(ctl.name_servers)


def test_classic_mode_ids_and_roles() -> None:
    res = resources(cg_doc(), bg_doc(haMode="slaveActingMaster"))
    confs = {k: props(v) for k, v in render_configs(res, pack(port_needs(res), BASE), StateLayout(STATE)).items()}
    assert (confs["bg-0"]["brokerId"], confs["bg-0"]["brokerRole"]) == ("0", "SYNC_MASTER")
    assert (confs["bg-1"]["brokerId"], confs["bg-1"]["brokerRole"]) == ("1", "SLAVE")
    assert "controllerAddr" not in confs["bg-0"]


def test_build_state_argv_and_paths() -> None:
    res, ports, _ = quickstart()
    state = build_state(res, ports, StateLayout(STATE), files=["/x/q.yaml"], distribution="/dist",
                        rocketmq_version="5.5.0")  # fmt: skip
    broker = state.replica("broker-a-1")
    assert broker is not None
    assert broker.argv[-3:] == [MAIN_CLASSES["broker"], "-c", "/state/data/broker-a-1/conf/broker-a-1.conf"]
    assert "-Xmx256m" in broker.argv and "-XX:MaxDirectMemorySize=256m" in broker.argv
    assert "-Duser.home=/state/data/broker-a-1" in broker.argv
    assert "-Drocketmq.home.dir=/dist" in broker.argv
    assert set(TLS_DISABLED_FLAGS) <= set(broker.argv)
    assert broker.ports == {"listen": ports["broker-a-1.listen"], "vip": ports["broker-a-1.listen"] - 2,
                            "ha": ports["broker-a-1.listen"] + 1}  # fmt: skip
    assert (broker.config, broker.log) == ("/state/conf/broker-a-1.conf", "/state/logs/broker-a-1.log")
    assert (broker.group, broker.kind, broker.ordinal, broker.phase) == ("broker-a", "BrokerGroup", 1, 1)
    ctl = state.replica("rocketmq-ctl-0")
    assert ctl is not None and ctl.role == "namesrv" and "-Xmx192m" in ctl.argv
    assert ctl.argv[ctl.argv.index("-cp") + 2] == MAIN_CLASSES["namesrv"]
    group = state.group("broker-a")
    assert group is not None and group.controller_mode and group.controller_group == "rocketmq-ctl"
    assert group.replicas == ["broker-a-0", "broker-a-1", "broker-a-2"]
    assert state.ports() == {f"{k}": v for k, v in {
        **{f"rocketmq-ctl-0.{k}": v for k, v in {"namesrv": BASE, "controller": BASE + 1}.items()},
        **{f"broker-a-{i}.{k}": p for i in range(3)
           for k, p in (("listen", ports[f"broker-a-{i}.listen"]), ("vip", ports[f"broker-a-{i}.listen"] - 2),
                        ("ha", ports[f"broker-a-{i}.listen"] + 1))},
    }.items()}  # fmt: skip
    assert [type(r) for r in load_resources(state)] == [ControllerGroup, BrokerGroup, Topic, ConsumerGroup]


def test_digest_is_about_meaning_not_text(tmp_path: Path) -> None:
    res = resources_of(QUICKSTART)
    copy = tmp_path / "q.yaml"
    docs = list(yaml.safe_load_all(QUICKSTART.read_text()))
    copy.write_text(yaml.safe_dump_all(list(reversed(docs))))  # other order, no comments
    assert manifest_digest(resources_of(copy)) == manifest_digest(res)
    docs[1]["spec"]["replicas"] = 5
    copy.write_text(yaml.safe_dump_all(docs))
    assert manifest_digest(resources_of(copy)) != manifest_digest(res)


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        ([bg_doc()], "is not a ControllerGroup in these manifests"),
        ([cg_doc(), cg_doc()], "given twice"),
        ([cg_doc("x"), bg_doc("x", controllerRef={"name": "x"})], "clashes"),
    ],
)
def test_unrunnable_manifests(docs: list[dict[str, Any]], message: str) -> None:
    res = resources(*docs)
    with pytest.raises(PlacementError, match=message):
        check_names(res)
        render_configs(res, pack(port_needs(res), BASE), StateLayout(STATE))


def test_explicit_name_servers_without_controller_group() -> None:
    res = resources(bg_doc(haMode="sync", controllerRef=None, nameServers=["10.0.0.1:9876"]))
    confs = render_configs(res, pack(port_needs(res), BASE), StateLayout(STATE))
    assert props(confs["bg-0"])["namesrvAddr"] == "10.0.0.1:9876"


@pytest.mark.parametrize("standalone", [False, True])
def test_jraft_controllers_get_a_raft_port_and_the_jraft_keys(standalone: bool) -> None:
    res = resources(cg_doc(replicas=3, type="jraft", standalone=standalone), bg_doc())
    ports = pack(port_needs(res), BASE)
    confs = {name: props(text) for name, text in render_configs(res, ports, StateLayout(STATE)).items()}
    raft = [f"127.0.0.1:{ports[f'ctl-{i}.raft']}" for i in range(3)]
    rpc = [f"127.0.0.1:{ports[f'ctl-{i}.controller']}" for i in range(3)]
    assert len(set(ports.values())) == len(ports)  # the Raft port is a port of its own
    for i in range(3):
        conf = confs[f"ctl-{i}"]
        assert conf["controllerType"] == "jRaft"
        assert (conf["jRaftGroupId"], conf["jRaftServerId"]) == ("ctl", raft[i])
        assert conf["jRaftInitConf"] == ",".join(raft)
        assert conf["jRaftControllerRPCAddr"] == ",".join(rpc)
        # finding 7: no inactive-broker scan until every live broker was heard after a restart (default 1 s)
        assert int(conf["jRaftScanWaitTimeoutMs"]) > 10_000
        assert not any(k.startswith("controllerDLeger") for k in conf)
    # brokers talk to the controllers' RPC addresses, whichever consensus runs behind them
    assert confs["bg-0"]["controllerAddr"] == ";".join(rpc)


def test_the_kubernetes_jraft_controllers_expose_the_raft_port() -> None:
    from rocketmq_operator.render.kubernetes import render_controller_group

    (cg,) = resources(cg_doc(replicas=3, type="jraft"))
    assert isinstance(cg, ControllerGroup)
    objects = render_controller_group(cg)
    sts = next(o for o in objects if o["kind"] == "StatefulSet")
    ports = {p["name"]: p["containerPort"] for p in sts["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert ports["raft"] == 9880
    conf = props(next(o for o in objects if o["kind"] == "ConfigMap")["data"]["ctl-1.conf"])
    assert conf["jRaftServerId"] == "ctl-1.ctl-headless.default.svc:9880"
    assert conf["jRaftControllerRPCAddr"].split(",")[1] == "ctl-1.ctl-headless.default.svc:9878"


def test_tls_groups_get_enforcing_flags_over_the_state_directory_files() -> None:
    from rocketmq_operator.platforms.local.tls import check_tls

    res = resources(cg_doc(tls={"enabled": True}), bg_doc(tls={"enabled": True}))
    check_tls(res)
    state = build_state(res, pack(port_needs(res), BASE), StateLayout(STATE), files=["f"], distribution="/dist",
                        rocketmq_version="5.5.0")  # fmt: skip
    for r in state.replicas:
        assert "-Dtls.server.mode=enforcing" in r.argv and TLS_DISABLED_FLAGS[0] not in r.argv
        assert f"-Dtls.server.certPath=/state/tls/{r.name}.crt" in r.argv
        assert "-Dtls.client.trustCertPath=/state/tls/ca.crt" in r.argv
        # after the standard flags, before the main class: the user's jvm.extraOptions cannot be overridden by them
        assert r.argv.index("-Dtls.enable=true") < r.argv.index(MAIN_CLASSES[r.role])


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        (
            [cg_doc(tls={"enabled": True}), cg_doc(name="ctl2")],
            "spec.tls.enabled is true in ControllerGroup/ctl and false in ControllerGroup/ctl2; rule: one local "
            "cluster speaks TLS everywhere or nowhere",
        ),
        (
            [cg_doc(tls={"enabled": True, "secretName": "my-tls"})],
            "ControllerGroup/ctl: spec.tls.secretName 'my-tls' names a Kubernetes Secret; rule: the local platform "
            "issues its certificates from its own authority; fix: remove secretName",
        ),
    ],
)
def test_tls_the_local_platform_cannot_run(docs: list[dict[str, Any]], message: str) -> None:
    from rocketmq_operator.platforms.local.tls import TlsConfigError, check_tls

    with pytest.raises(TlsConfigError) as info:
        check_tls(resources(*docs))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_kubernetes_mounts_the_certificate_secret_and_runs_every_listener_with_tls() -> None:
    from rocketmq_operator.render.kubernetes.broker_group import render_broker_group
    from rocketmq_operator.render.kubernetes.controller_group import render_controller_group

    cg, bg = resources(cg_doc(tls={"enabled": True}), bg_doc(tls={"enabled": True, "secretName": "bg-cert"}))
    assert isinstance(cg, ControllerGroup) and isinstance(bg, BrokerGroup)
    for objects, secret in ((render_controller_group(cg), "ctl-tls"), (render_broker_group(bg, cg), "bg-cert")):
        for sts in (o for o in objects if o["kind"] == "StatefulSet"):
            pod = sts["spec"]["template"]["spec"]
            assert {"name": "tls", "secret": {"secretName": secret, "defaultMode": 0o440}} in pod["volumes"]
            container = pod["containers"][0]
            assert {"name": "tls", "mountPath": "/etc/rocketmq-tls", "readOnly": True} in container["volumeMounts"]
            java = next(e["value"] for e in container["env"] if e["name"] == "JAVA_OPTS").split()
            assert "-Dtls.server.mode=enforcing" in java and "-Dtls.client.authServer=true" in java
            assert "-Dtls.server.keyPath=/etc/rocketmq-tls/tls.key" in java
            # Later flags win: enforcing comes after the default disabled mode.
            assert java.index("-Dtls.server.mode=enforcing") > max(
                (i for i, f in enumerate(java) if f == "-Dtls.server.mode=disabled"), default=-1
            )

"""The Kubernetes chaos executor's pure parts (bench.chaos_kubernetes), its discovery of a layout against a fake
API answer, and the CLI's refusals, on plain data."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rocketmq_operator.bench.chaos_kubernetes import (
    KubernetesChaos,
    drop_rule,
    freezer_file,
    group_healthy,
    pod_processes,
)
from rocketmq_operator.bench.chaos_plan import (
    FAMILIES,
    KUBERNETES_FAMILIES,
    OPERATOR_PROCESS,
    ChaosPlanError,
    Target,
    plan_campaign,
    resolve_targets,
)
from rocketmq_operator.cli import bench as bench_cli

UID = "ca8ccfc1-b620-40d2-b272-20fb76229efd"


def _proc(root: Path, pid: int, cmdline: str, cgroup: str) -> None:
    d = root / str(pid)
    d.mkdir()
    (d / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode())
    (d / "cgroup").write_text(cgroup)


def test_pod_processes_finds_the_jvm_and_the_sandbox_by_the_pods_uid(tmp_path: Path) -> None:
    pod = f"/rmq-n1/kubepods/burstable/pod{UID}"
    _proc(tmp_path, 10, "/pause", f"6:freezer:{pod}/aaa\n0::{pod}/aaa\n")
    _proc(tmp_path, 11, "java -server org.apache.rocketmq.broker.BrokerStartup -c x", f"6:freezer:{pod}/bbb\n")
    _proc(tmp_path, 12, "java org.apache.rocketmq.broker.BrokerStartup", "6:freezer:/kubepods/podother/ccc\n")
    (tmp_path / "self").mkdir()
    jvm, sandbox, cgroup = pod_processes(UID, tmp_path)
    assert (jvm, sandbox) == (11, 10)
    assert freezer_file(cgroup, Path("/sys/fs/cgroup")) == Path(f"/sys/fs/cgroup/freezer{pod}/bbb/freezer.state")
    assert pod_processes("no-such-uid", tmp_path) == (None, None, "")


def test_freezer_file_v2_when_there_is_no_v1_freezer() -> None:
    assert freezer_file("0::/kubepods/pod1/c1\n", Path("/c")) == Path("/c/kubepods/pod1/c1/cgroup.freeze")
    assert freezer_file("", Path("/c")) is None


def test_drop_rule_spares_loopback_and_is_tagged() -> None:
    assert drop_rule(1.0) == [
        "OUTPUT", "!", "-o", "lo", "-m", "comment", "--comment", "rocketmq-operator-chaos", "-j", "DROP",
    ]  # fmt: skip
    assert drop_rule(0.8)[4:9] == ["-m", "statistic", "--mode", "random", "--probability"]


HEALTHY = {
    "phase": "Ready",
    "writable": True,
    "master": {"replica": "broker-a-1", "address": "10.0.0.2:10911"},
    "syncStateSet": {"members": [1, 2, 3]},
    "replicas": [{"alive": True, "inSync": True}] * 3,
}


@pytest.mark.parametrize(
    ("change", "healthy"),
    [
        ({}, True),
        ({"phase": "Degraded"}, False),
        ({"writable": False}, False),
        ({"master": {}}, False),
        ({"syncStateSet": {"members": [1, 2]}}, False),
        ({"replicas": [{"alive": True, "inSync": True}] * 2 + [{"alive": False, "inSync": False}]}, False),
        ({"replicas": [{"alive": True, "inSync": True}] * 2 + [{"alive": True, "inSync": False}]}, False),
    ],
)
def test_group_healthy_needs_every_replica_in_sync(change: dict[str, object], healthy: bool) -> None:
    assert group_healthy({**HEALTHY, **change}, 3) is healthy


def test_pod_delete_is_offered_on_kubernetes_only_and_planned_on_brokers_only() -> None:
    plan = plan_campaign(40, 1, ["pod-delete", "kill"], 3, KUBERNETES_FAMILIES)
    assert {f.family for f in plan} == {"pod-delete", "kill"}
    assert {f.target for f in plan if f.family == "pod-delete"} == {Target.BROKER, Target.MASTER}
    assert len({f.target for f in plan if f.family == "kill"}) > 2  # the other families keep every target
    with pytest.raises(
        ChaosPlanError, match=r"--families pod-delete: each must be one of kill, suspend, loss, partition"
    ):
        plan_campaign(10, 1, ["pod-delete"], 3, FAMILIES)


def test_standalone_controllers_take_pod_delete_too() -> None:
    plan = plan_campaign(60, 1, ["pod-delete"], 3, KUBERNETES_FAMILIES, broker_only=frozenset())
    assert Target.CONTROLLERS_MAJORITY in {f.target for f in plan}


def test_the_operator_is_a_target_only_where_the_platform_offers_it() -> None:
    assert Target.MASTER_AND_OPERATOR not in {f.target for f in plan_campaign(80, 1, ["kill"], 3, KUBERNETES_FAMILIES)}
    plan = plan_campaign(80, 1, ["kill", "pod-delete"], 3, KUBERNETES_FAMILIES, operator=True)
    assert Target.MASTER_AND_OPERATOR in {f.target for f in plan if f.family == "kill"}
    assert {f.target for f in plan if f.family == "pod-delete"} == {
        Target.BROKER,
        Target.MASTER,
        Target.MASTER_AND_OPERATOR,
    }
    fault = next(f for f in plan if f.target is Target.MASTER_AND_OPERATOR)
    assert resolve_targets(fault, ["b-0", "b-1", "b-2"], ["c-0"], "b-1") == ("b-1", OPERATOR_PROCESS)
    assert resolve_targets(fault, ["b-0", "b-1", "b-2"], ["c-0"], None)[1] == OPERATOR_PROCESS


def _pod(name: str, component: str, namesrv: bool) -> dict[str, object]:
    ports = [{"containerPort": 9876}] if namesrv else [{"containerPort": 9878}]
    return {
        "metadata": {"name": name, "labels": {"app.kubernetes.io/component": component}},
        "spec": {"containers": [{"ports": ports}]},
        "status": {"podIP": f"10.0.0.{name[-1]}"},
    }


class _Kube:
    def __init__(self, pods: list[dict[str, object]], operators: int) -> None:
        self.pods, self.operators = pods, operators

    async def list(self, kind: str, namespace: str | None, selector: str | None = None) -> list[dict[str, object]]:
        if selector == "rocketmq-operator.dev/operator=true":
            return [{"metadata": {"name": f"op-{i}", "namespace": "ops"}} for i in range(self.operators)]
        return self.pods


@pytest.mark.parametrize(
    ("pods", "controllers", "name_servers", "broker_only"),
    [
        (  # the default layout: the controllers host the name servers
            [_pod("ctl-0", "controller", True), _pod("ctl-1", "controller", True)],
            ["ctl-0", "ctl-1"],
            ["10.0.0.0:9876", "10.0.0.1:9876"],
            {"pod-delete"},
        ),
        (  # standalone: the name servers are pods of their own, not controllers
            [_pod("ctl-0", "controller", False), _pod("ctl-1", "controller", False), _pod("ns-0", "namesrv", True)],
            ["ctl-0", "ctl-1"],
            ["10.0.0.0:9876"],
            set(),
        ),
    ],
)
async def test_discovery_tells_the_layouts_apart(
    pods: list[dict[str, object]], controllers: list[str], name_servers: list[str], broker_only: set[str]
) -> None:
    chaos = KubernetesChaos(_Kube(pods, 1), "ns", "b", "ctl", 3)  # type: ignore[arg-type]
    await chaos.discover()
    assert (chaos.controllers, chaos.name_servers) == (controllers, name_servers)
    assert chaos.broker_only_families == broker_only and chaos.faults_operator


def _args(**changes: object) -> argparse.Namespace:
    base: dict[str, object] = dict(
        files=None, platform="kubernetes", group=None, namespace="rocketmq", families="kill", plot=None, faults=1,
        seed=1, hold=1.0, recover=1.0, rate=1.0, keep=False, json=False, state_dir=None, spare_operator=False,
        journal=None,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({}, "error: chaos --platform kubernetes needs --group NAME (a controller-mode BrokerGroup); fix: --group"),
        ({"group": "broker-a", "files": ["x.yaml"]}, "error: -f FILE is for --platform local;"),
        ({"platform": "local"}, "error: chaos --platform local needs -f FILE (the manifests to bring up); fix:"),
    ],
)
def test_chaos_cli_refuses_with_one_line(
    changes: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench_cli.cmd_chaos(_args(**changes)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err, err

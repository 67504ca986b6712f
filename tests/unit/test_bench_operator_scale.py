"""`bench operator-scale`, the parts with no API server: the simulated RocketMQ's answers read by the project's own
remoting client and observer, the figures and verdicts, the arguments and their one-line refusals."""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from real_parts import missing
from rocketmq_operator.bench.operator_scale import (
    broker_group_manifest,
    controller_group_manifest,
    controller_hosts,
    fully_observed,
    kubelet_status,
    summary_lines,
)
from rocketmq_operator.bench.operator_scale_launch import install_hosts
from rocketmq_operator.bench.operator_scale_plan import (
    ScaleBenchError,
    WindowCounts,
    apiserver_total,
    check_passes,
    lag_bound,
    lag_summary,
    linear_until,
    memory_slopes,
    parse_group_sizes,
    window_figures,
)
from rocketmq_operator.bench.operator_sim import SimPorts, SimulatedRocketMQ, broker_host, controller_host
from rocketmq_operator.cli.main import main
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.remoting.codec import RemotingCommand
from rocketmq_operator.remoting.codes import RequestCode

# ------------------------------------------------------------------ the simulated RocketMQ over real sockets


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class SteppedClock:
    """The simulator's clock, moved only by the test: offsets read at one instant compare exactly, however loaded
    the machine (a real clock let a slave read 1 ms after its master come out ahead of it)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def sim() -> AsyncIterator[SimulatedRocketMQ]:
    # Ports other than RocketMQ's, so the test never meets a broker running on this machine.
    ports = SimPorts(
        broker=_free_port(broker_host(0, 0)),
        name_server=_free_port(controller_host(0)),
        controller=_free_port(controller_host(0)),
    )
    simulated = SimulatedRocketMQ(["g-a", "g-b"], controllers=3, ports=ports, clock=SteppedClock())
    await simulated.start()
    yield simulated
    await simulated.stop()


def _endpoints(sim: SimulatedRocketMQ, group: str) -> list[ReplicaEndpoint]:
    return [ReplicaEndpoint(r.name, r.address) for r in sim.groups[group].replicas]


async def test_the_observer_reads_a_master_and_two_in_sync_slaves(sim: SimulatedRocketMQ) -> None:
    async with RemotingClient(connect_timeout=5.0, request_timeout=10.0) as client:
        states = await observe_groups(
            client,
            sim.controller_addresses,
            {"g-a": _endpoints(sim, "g-a"), "g-b": _endpoints(sim, "g-b")},
            {"g-a": True, "g-b": True},
            timeout=10.0,  # a loaded machine answers late; the test is of what is answered
        )
    state = states["g-a"]
    assert state.controller_reachable and state.controller_leader == sim.controller_addresses[0]
    assert state.master_broker_id == 1 and state.master_address == sim.groups["g-a"].replicas[0].address
    assert state.sync_state_set == (1, 2, 3)
    assert [r.is_master for r in state.replicas] == [True, False, False]
    assert all(r.reachable and r.controller_alive for r in state.replicas)
    assert [r.broker_id for r in state.replicas] == [1, 2, 3]
    master, slave = state.replicas[0], state.replicas[1]
    assert master.ha_connections == 2
    assert slave.ha_master_address == sim.groups["g-a"].replicas[0].ha_address
    assert master.max_offset is not None and slave.max_offset is not None and slave.max_offset <= master.max_offset
    assert master.version == "V5_5_0"
    # One SyncStateSet read per group per observation, one metadata request per controller.
    assert sim.sync_state_reads == {"g-a": 1, "g-b": 1}
    assert sim.requests["CONTROLLER_GET_METADATA_INFO"] == 3
    assert sim.requests["GET_BROKER_RUNTIME_INFO"] == 6 and sim.requests["GET_BROKER_HA_STATUS"] == 6
    assert not sim.unsupported
    # The pass is whole only once the next one has begun.
    assert sim.whole_pass_requests("g-a", 0, 1) is None
    assert sim.whole_pass_requests("g-a", 0, 0) == {}


async def test_offsets_grow_and_an_election_moves_the_master(sim: SimulatedRocketMQ) -> None:
    master = sim.groups["g-b"].replicas[0]
    async with RemotingClient(connect_timeout=5.0, request_timeout=10.0) as client:
        first = int((await client.get_runtime_info(master.address))["commitLogMaxOffset"])
        new_id, elected_at = sim.elect("g-b", now=12.5)
        assert (new_id, elected_at) == (2, 12.5)
        leader = (await client.find_controller_leader(sim.controller_addresses)).leader_address
        assert leader is not None
        info = (await client.get_sync_state_data(leader, ["g-b"]))["g-b"]
        assert (info.master_broker_id, info.master_epoch, info.sync_state_set_epoch) == (2, 2, 2)
        assert info.master_address == sim.groups["g-b"].replicas[1].address
        old = await client.get_ha_status(master.address)
        assert not old.master and old.client is not None
        assert old.client.master_addr == sim.groups["g-b"].replicas[1].ha_address
        assert isinstance(sim.clock, SteppedClock)
        sim.clock.now += 1.0  # a second on: the deposed master, now a slave 1 KiB behind, has grown past its read
        second = int((await client.get_runtime_info(master.address))["commitLogMaxOffset"])
        assert second > first
        cluster = await client.get_cluster_info(namesrv=sim.name_server_addresses[1])
        assert cluster.broker_addr_table["g-b"].broker_addrs[0] == sim.groups["g-b"].replicas[1].address
        assert set(cluster.broker_addr_table) == {"g-a", "g-b"}
        assert cluster.cluster_addr_table == {"DefaultCluster": ("g-a", "g-b")}
        # One group's members, as a name server has them: the new master at id 0, the slaves at their ids.
        members = await client.get_broker_member_group("DefaultCluster", "g-b", namesrv=sim.name_server_addresses[2])
        replicas = sim.groups["g-b"].replicas
        assert dict(members.broker_addrs) == {0: replicas[1].address, 1: replicas[0].address, 3: replicas[2].address}
        assert (members.cluster, members.broker_name) == ("DefaultCluster", "g-b")
        unknown = await client.get_broker_member_group("DefaultCluster", "g-x", namesrv=sim.name_server_addresses[0])
        assert unknown.broker_addrs == {} and unknown.broker_name == "g-x"
    assert sim.first_read_after("g-b", 0.0) is not None


async def test_config_ha_info_and_the_controller_refusals(sim: SimulatedRocketMQ) -> None:
    group = sim.groups["g-a"]
    master, slave = group.replicas[0], group.replicas[2]
    async with RemotingClient(connect_timeout=5.0, request_timeout=10.0) as client:
        await client.update_broker_config(master.address, {"brokerPermission": 6, "inSyncReplicas": 2})
        assert await client.get_broker_config(master.address) == {"brokerPermission": "6", "inSyncReplicas": "2"}
        ha = await client.get_ha_info(master.address)
        assert ha.master_ha_address == master.ha_address and ha.master_address == master.address
        await client.set_ha_master(slave.address, ha)
        assert slave.ha_master == master.ha_address
        replica_info = await client.get_replica_info(sim.controller_addresses[0], "g-a")
        assert replica_info.sync_state_set == frozenset({1, 2, 3})
        elected = await client.elect_master(sim.controller_addresses[0], "DefaultCluster", "g-a", 3, designate=True)
        assert elected.master_broker_id == 3 and elected.broker_addrs[3] == slave.address
        from rocketmq_operator.remoting import RemotingError

        with pytest.raises(RemotingError) as refused:  # a follower controller refuses leader-only requests
            await client.get_sync_state_data(sim.controller_addresses[1], ["g-a"])
        assert refused.value.code == 2007
        # An admin request the simulation does not have: REQUEST_CODE_NOT_SUPPORTED, counted by name.
        with pytest.raises(RemotingError) as unsupported:
            await client.delete_expired_commitlog(master.address)
        assert unsupported.value.code == 3
    assert sim.unsupported == {"DELETE_EXPIRED_COMMITLOG": 1}


def test_answers_without_sockets_and_the_addresses() -> None:
    sim = SimulatedRocketMQ(["x"], controllers=1)
    assert sim.pod_ip("x-2") == broker_host(0, 2) == "127.77.0.3"
    assert sim.pod_ip("x-3") is None and sim.pod_ip("other-0") is None
    assert sim.controller_addresses == ["127.76.0.1:9878"] and sim.name_server_addresses == ["127.76.0.1:9876"]
    oneway = RemotingCommand(code=RequestCode.GET_BROKER_RUNTIME_INFO, flag=2)
    assert sim.answer(sim.groups["x"].replicas[0].address, oneway) is None
    bad = RemotingCommand(code=RequestCode.CONTROLLER_GET_SYNC_STATE_DATA, body=b"not json")
    answer = sim.answer(sim.controller_addresses[0], bad)
    assert answer is not None and answer.code == 1
    # GET_BROKER_MEMBER_GROUP without clusterName: answered, the field left out (as RocketMQ 5.5.0 answers it).
    no_cluster = RemotingCommand(code=RequestCode.GET_BROKER_MEMBER_GROUP, ext_fields={"brokerName": "x"})
    answer = sim.answer(sim.name_server_addresses[0], no_cluster)
    replicas = sim.groups["x"].replicas
    assert answer is not None and answer.code == 0
    assert answer.body.decode() == (
        f'{{"brokerMemberGroup":{{"brokerAddrs":{{0:"{replicas[0].address}",2:"{replicas[1].address}",'
        f'3:"{replicas[2].address}"}},"brokerName":"x"}}}}'
    )
    with pytest.raises(ValueError, match="at least one controller"):
        SimulatedRocketMQ(["x"], controllers=0)


def test_a_group_is_settled_once_its_status_names_the_master_and_every_replica_alive() -> None:
    def group(master: int | None, alive: list[bool]) -> dict[str, Any]:
        replicas = [{"name": f"g-{i}", "alive": a} for i, a in enumerate(alive)]
        return {"status": {"master": {"brokerId": master}, "replicas": replicas}}

    assert fully_observed(group(1, [True, True, True]), 1, 3)
    assert not fully_observed(group(1, [True, False, True]), 1, 3)  # a pod without its address yet
    assert not fully_observed(group(1, [True, True]), 1, 3)  # the StatefulSet has not made the third pod
    assert not fully_observed(group(2, [True, True, True]), 1, 3)  # another master
    assert not fully_observed(group(None, []), 1, 3) and not fully_observed(None, 1, 3)


# ------------------------------------------------------------------ the figures


def _counts(at: float, cpu: float, api: float, reads: dict[str, int], remoting: dict[str, int]) -> WindowCounts:
    return WindowCounts(at, cpu, api, remoting, reads, {"PATCH brokergroups/status": api / 2})


def test_window_figures_per_pass_with_the_baseline_subtracted() -> None:
    start = _counts(100.0, 5.0, 1000.0, {"a": 3, "b": 4}, {"GET_BROKER_RUNTIME_INFO": 10})
    end = _counts(130.0, 8.0, 1400.0, {"a": 18, "b": 19}, {"GET_BROKER_RUNTIME_INFO": 100, "X": 5})
    figures = window_figures(start, end, 2, baseline_requests=50.0, baseline_seconds=15.0)
    assert figures["passes"] == 30
    assert (figures["passes_per_group_min"], figures["passes_per_group_max"]) == (15, 15)
    assert figures["mean_pass_interval_s"] == 2.0
    assert figures["cpu_s_per_pass"] == 0.1
    assert figures["apiserver_requests_baseline"] == 100.0  # 50 over 15 s, scaled to the 30 s window
    assert figures["apiserver_requests_operator"] == 300.0
    assert figures["apiserver_requests_per_pass"] == 10.0
    assert figures["remoting_requests"] == 95 and figures["remoting_requests_per_pass"] == 3.166667
    assert figures["remoting_requests_by_code_per_pass"] == {"GET_BROKER_RUNTIME_INFO": 3.0, "X": 0.166667}
    assert figures["apiserver_requests_by_kind"] == {"PATCH brokergroups/status": 200.0}
    assert figures["group_requests_per_whole_pass"] is None and figures["group_requests_by_code_per_whole_pass"] is None
    exact = window_figures(
        start, end, 2, baseline_requests=0.0, baseline_seconds=0.0, whole_pass_requests={"GET_BROKER_RUNTIME_INFO": 90}
    )
    assert exact["group_requests_per_whole_pass"] == 3.0
    assert exact["group_requests_by_code_per_whole_pass"] == {"GET_BROKER_RUNTIME_INFO": 3.0}


def test_window_figures_with_no_pass_say_none() -> None:
    same = _counts(1.0, 1.0, 10.0, {"a": 1}, {})
    figures = window_figures(same, same, 1, baseline_requests=0.0, baseline_seconds=0.0)
    assert figures["passes"] == 0
    assert figures["cpu_s_per_pass"] is None and figures["mean_pass_interval_s"] is None


def test_apiserver_total_sums_the_request_counter() -> None:
    text = "\n".join(
        [
            "# HELP apiserver_request_total Counter of apiserver requests",
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",'
            'scope="namespace",subresource="",verb="LIST",version="v1"} 7',
            'apiserver_request_total{code="200",component="apiserver",dry_run="",group="rocketmq-operator.dev",'
            'resource="brokergroups",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 3',
            'apiserver_request_total{code="200",component="",dry_run="",group="",resource="",scope="",'
            'subresource="/metrics",verb="GET",version=""} 2',
            'apiserver_request_duration_seconds_bucket{le="0.1"} 99',
        ]
    )
    total, by_kind = apiserver_total(text)
    assert total == 12.0
    assert by_kind == {"LIST pods": 7.0, "PATCH brokergroups/status": 3.0, "GET (non-resource)//metrics": 2.0}


@pytest.mark.parametrize(
    ("sizes", "costs", "expected"),
    [
        ([10, 50, 200], [1.0, 1.1, 1.2], 200),
        ([10, 50, 200], [1.0, 1.1, 1.3], 50),
        ([10, 50, 200], [1.0, 2.0, 1.0], 10),  # the first size past the tolerance ends the linear range
        ([10, 50], [None, 1.0], None),
        ([10, 50], [1.0, None], 10),
        ([], [], None),
    ],
)
def test_linear_until(sizes: list[int], costs: list[float | None], expected: int | None) -> None:
    assert linear_until(sizes, costs) == expected


def test_memory_slopes_between_consecutive_sizes() -> None:
    assert memory_slopes([10, 50, 200], [80.0, 100.0, 160.0]) == [
        {"from": 10, "to": 50, "mib_per_group": 0.5},
        {"from": 50, "to": 200, "mib_per_group": 0.4},
    ]
    assert memory_slopes([10, 50], [None, 100.0]) == [{"from": 10, "to": 50, "mib_per_group": None}]
    assert memory_slopes([10], [80.0]) == []


def test_lag_summary_and_bound() -> None:
    assert lag_summary([]) == {"count": 0, "p50_s": None, "p99_s": None, "max_s": None}
    assert lag_summary([0.5, 1.5, 1.0, 2.0]) == {"count": 4, "p50_s": 1.0, "p99_s": 2.0, "max_s": 2.0}
    assert lag_bound(2.0, 3.9) == {"met": True, "ratio": 1.95, "factor": 2.0}
    assert lag_bound(1.0, 2.5)["met"] is False
    assert lag_bound(None, 1.0)["met"] is None


# ------------------------------------------------------------------ arguments and manifests


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10,50,200", [10, 50, 200]), (" 200, 10 ,10", [10, 200]), ("1", [1]), ("1000", [1000])],
)
def test_parse_group_sizes(text: str, expected: list[int]) -> None:
    assert parse_group_sizes(text) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("abc", "'abc' is not a whole number"),
        ("0", "0 is outside 1..1000"),
        ("-5", "'-5' is not a whole number"),
        ("10,,50", "no empty item"),
        ("", "no empty item"),
        ("1001", "outside 1..1000"),
    ],
)
def test_parse_group_sizes_refuses(text: str, says: str) -> None:
    with pytest.raises(ScaleBenchError) as refused:
        parse_group_sizes(text)
    message = str(refused.value)
    assert says in message and message.startswith(f"--groups {text!r}") and "fix: e.g. --groups 10,50,200" in message
    assert "\n" not in message


def test_check_passes() -> None:
    assert check_passes(3) == 3
    with pytest.raises(ScaleBenchError, match="--passes 0"):
        check_passes(0)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--groups", "abc"], "error: --groups 'abc': 'abc' is not a whole number of BrokerGroups"),
        (["--groups", "0"], "error: --groups '0': 0 is outside 1..1000"),
        (["--passes", "0"], "error: --passes 0:"),
        (["--changes", "0"], "error: --changes 0:"),
    ],
)
def test_cli_refuses_in_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "operator-scale", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1 and "Traceback" not in err


def test_manifests_are_valid_resources() -> None:
    from rocketmq_operator.platforms.kubernetes.resources import validated

    for manifest in (controller_group_manifest("ns"), broker_group_manifest("g-0001", "ns")):
        report = validated(manifest)  # as the operator's passes judge them
        assert report.resource is not None and not report.errors, report.errors
    assert controller_hosts("ns") == {
        "sim-ctl-0.sim-ctl-headless.ns.svc": "127.76.0.1",
        "sim-ctl-1.sim-ctl-headless.ns.svc": "127.76.0.2",
        "sim-ctl-2.sim-ctl-headless.ns.svc": "127.76.0.3",
    }


def test_kubelet_status_names_every_container_running() -> None:
    pod = {"spec": {"containers": [{"name": "broker"}, {"name": "agent"}]}}
    status = kubelet_status(pod, "127.77.0.2", "2026-12-01T00:00:00Z")
    assert status["phase"] == "Running" and status["podIP"] == "127.77.0.2"
    assert [c["name"] for c in status["containerStatuses"]] == ["broker", "agent"]
    assert all(c["state"]["running"]["startedAt"] == "2026-12-01T00:00:00Z" for c in status["containerStatuses"])
    assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {"Ready", "ContainersReady"}


def test_install_hosts_answers_only_its_names() -> None:
    original = install_hosts({"sim-ctl-0.sim-ctl-headless.ns.svc": "127.76.0.1"})
    try:
        answers = socket.getaddrinfo("sim-ctl-0.sim-ctl-headless.ns.svc.", 9878, type=socket.SOCK_STREAM)
        assert {a[4][0] for a in answers} == {"127.76.0.1"}
        assert {a[4][0] for a in socket.getaddrinfo("127.0.0.1", 80, type=socket.SOCK_STREAM)} == {"127.0.0.1"}
    finally:
        socket.getaddrinfo = original


def test_summary_lines_one_per_size() -> None:
    size = {
        "groups": 10,
        "passes": 150,
        "mean_pass_interval_s": 2.01,
        "cpu_s_per_pass": 0.004,
        "apiserver_requests_per_pass": 3.5,
        "remoting_requests_per_pass": 12.0,
        "rss_mib": 80.0,
        "observation_lag": {"p50_s": 1.0, "p99_s": 2.0},
    }
    doc = {
        "started_at": "a",
        "ended_at": "b",
        "observe_interval_s": 2.0,
        "machine": {"cpus": 2, "load_average_at_end": [1.0, 1.0, 1.0]},
        "sizes": [size],
        "linear_until": {"cpu_s_per_pass": 10},
        "lag_p99_bound": {"smallest": 10, "largest": 10, "ratio": 1.0, "factor": 2.0, "met": True},
    }
    lines = summary_lines(doc)
    assert len(lines) == 5 and lines[2].split()[0] == "10" and "met" in lines[-1]


# ------------------------------------------------------------------ the operator's own pass against the simulation


async def test_an_operator_pass_gets_every_answer_it_asks_and_sees_an_election(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Kubernetes group pass itself (`observe_pass`, on the in-memory API) against the simulated RocketMQ at
    RocketMQ's ports: nothing it asks is unsupported, and a simulated election reaches the status."""
    import kopf
    from kube_fake import FakeApi

    from rocketmq_operator.platforms.kubernetes import group_pass
    from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
    from rocketmq_operator.platforms.kubernetes.metrics import OperatorMetrics
    from rocketmq_operator.platforms.kubernetes.reconcile import reconcile
    from rocketmq_operator.render.kubernetes import LABEL_GROUP

    namespace = "ns"
    sim = SimulatedRocketMQ(["g-0000", "g-0001"], controllers=3)
    try:
        await sim.start()
    except OSError as exc:
        missing(f"a RocketMQ port on 127.76/127.77.x is taken on this machine: {exc.strerror}")  # CI: a failure
    original = install_hosts(controller_hosts(namespace))
    monkeypatch.setattr(kopf, "event", lambda *a, **k: None)
    monkeypatch.setattr(kopf, "info", lambda *a, **k: None)
    monkeypatch.setattr(kopf, "warn", lambda *a, **k: None)
    fake = FakeApi()
    fake.put(controller_group_manifest(namespace))
    for name in sim.groups:
        fake.put(broker_group_manifest(name, namespace))
        for i in range(3):
            pod_name = f"{name}-{i}"
            labels = {LABEL_GROUP: name, "app.kubernetes.io/component": "broker"}
            pod: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod_name, "namespace": namespace, "labels": labels},
                "spec": {"containers": [{"name": "broker"}]},
            }
            pod["status"] = kubelet_status(pod, str(sim.pod_ip(pod_name)), "2026-12-01T00:00:00Z")
            fake.put(pod)
    client = RemotingClient(connect_timeout=5.0, request_timeout=10.0)
    memory = {name: GroupMemory() for name in sim.groups}
    logger = logging.getLogger("test")

    async def one_round() -> None:
        for name in sim.groups:
            body = await fake.get("BrokerGroup", namespace, name)
            assert body is not None
            await group_pass.observe_pass(fake, client, OperatorMetrics(), kopf.Body(body), memory[name], logger)  # type: ignore[arg-type]

    try:
        for name in sim.groups:
            body = await fake.get("BrokerGroup", namespace, name)
            await reconcile(fake, body)  # type: ignore[arg-type]
        await one_round()
        await one_round()
        new_id, _ = sim.elect("g-0001")
        await one_round()
    finally:
        socket.getaddrinfo = original
        await client.close()
        await sim.stop()
    assert sim.unsupported == {}
    assert sim.sync_state_reads == {"g-0000": 3, "g-0001": 3}
    # The two whole passes of g-0000: each read its SyncStateSet once and asked each of its three brokers.
    whole = sim.whole_pass_requests("g-0000", 0, 2)
    assert whole is not None
    assert whole["CONTROLLER_GET_SYNC_STATE_DATA"] == 2 and whole["GET_BROKER_RUNTIME_INFO"] == 6
    # The route check: each of the three name servers asked for this group's members alone, never the whole cluster.
    assert whole["GET_BROKER_MEMBER_GROUP"] == 6 and sim.requests["GET_BROKER_CLUSTER_INFO"] == 0
    status = (await fake.get("BrokerGroup", namespace, "g-0001") or {})["status"]
    assert status["master"]["brokerId"] == new_id == 2 and status["writable"] is True
    assert [h["toBrokerId"] for h in status["history"]][-1:] == [2]
    assert (await fake.get("BrokerGroup", namespace, "g-0000") or {})["status"]["master"]["brokerId"] == 1

"""The remoting client against real RocketMQ processes on 127.0.0.1.

One namesrv hosting the DLedger controller (``enableControllerInNamesrv=true``) and a two-replica
controller-mode broker group (facts §1.5 (a), §6). Checks route, cluster info, controller metadata,
sync state data, replica info, broker admin calls, and a send (PUT_OK) / pull round trip.

Needs JDK 17 and the pinned distribution (``platforms.local.distribution``). Outside CI a missing
distribution or java skips; under ``CI=true`` the distribution is built if missing and anything
missing fails.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from rocketmq_operator.remoting import (
    RemotingClient,
    RemotingException,
    SyncStateInfo,
)

pytestmark = pytest.mark.integration

CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
CLUSTER = "remoting-it"
GROUP = "remoting-it-bg"
STARTUP_TIMEOUT = 150.0

T = TypeVar("T")


def _missing(reason: str) -> None:
    if CI:
        pytest.fail(f"{reason} (CI=true: the integration environment must be complete)")
    pytest.skip(reason)


def _distribution_home() -> Path:
    try:
        from rocketmq_operator.platforms.local import distribution
    except ImportError as exc:
        _missing(f"rocketmq_operator.platforms.local.distribution is not importable: {exc}")
        raise
    home = distribution.dist_dir()
    if not distribution.is_complete(home):
        if not CI:
            _missing(f"RocketMQ distribution not built at {home} (run ensure_distribution())")
        home = distribution.ensure_distribution()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _missing("no java on PATH and JAVA_HOME unset (JDK 17 needed)")
    return home


def _free_port_block(width: int, avoid: set[int]) -> int:
    """A port p with p-2 .. p+width-1 all free (a broker also binds listenPort-2 and listenPort+1)."""
    for _ in range(200):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            base = sock.getsockname()[1]
        candidates = range(base - 2, base + width)
        if base < 1100 or base + width > 65000 or avoid.intersection(candidates):
            continue
        try:
            for port in candidates:
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        avoid.update(candidates)
        return base
    raise RuntimeError("no free port block found")


@dataclass
class Cluster:
    namesrv: str
    controller: str
    brokers: list[str]
    processes: list[subprocess.Popen[bytes]]
    logs: list[Path]

    def log_tails(self, lines: int = 30) -> str:
        out = []
        for path in self.logs:
            text = path.read_text(errors="replace").splitlines()[-lines:] if path.exists() else []
            out.append(f"--- {path.name}\n" + "\n".join(text))
        for proc in self.processes:
            if proc.poll() is not None:
                out.append(f"--- process {proc.args[-1]!r} exited with {proc.returncode}")
        return "\n".join(out)


def _write_conf(path: Path, values: dict[str, object]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from rocketmq_operator.platforms.local.distribution import java_command

    home = _distribution_home()
    root = tmp_path_factory.mktemp("remoting-real")
    used: set[int] = set()
    ns_port = _free_port_block(1, used)
    ctl_port = _free_port_block(1, used)
    broker_ports = [_free_port_block(2, used) for _ in range(2)]

    ns_dir = root / "namesrv"
    ns_dir.mkdir()
    ns_conf = _write_conf(
        ns_dir / "namesrv.conf",
        {
            "listenPort": ns_port,
            "enableControllerInNamesrv": "true",
            "controllerDLegerGroup": "remoting-it",
            "controllerDLegerPeers": f"n0-127.0.0.1:{ctl_port}",
            "controllerDLegerSelfId": "n0",
            "controllerStorePath": ns_dir / "controller",
            "mappedFileSize": 4 * 1024 * 1024,
            "enableElectUncleanMaster": "false",
            "notifyBrokerRoleChanged": "true",
        },
    )
    commands: list[tuple[str, list[str], Path]] = [
        ("namesrv", java_command("namesrv", ns_conf, heap="192m", home=home), ns_dir)
    ]
    for index, port in enumerate(broker_ports):
        broker_dir = root / f"broker-{index}"
        broker_dir.mkdir()
        conf = _write_conf(
            broker_dir / "broker.conf",
            {
                "brokerClusterName": CLUSTER,
                "brokerName": GROUP,
                "brokerId": -1,
                "brokerRole": "SLAVE",
                "enableControllerMode": "true",
                "controllerAddr": f"127.0.0.1:{ctl_port}",
                "namesrvAddr": f"127.0.0.1:{ns_port}",
                "brokerIP1": "127.0.0.1",
                "brokerIP2": "127.0.0.1",
                "listenPort": port,
                "haListenPort": port + 1,
                "storePathRootDir": broker_dir / "store",
                "storePathCommitLog": broker_dir / "store" / "commitlog",
                "mappedFileSizeCommitLog": 32 * 1024 * 1024,
                "mappedFileSizeConsumeQueue": 300_000 * 20 // 100,
                "messageIndexEnable": "false",
                "timerWheelEnable": "false",
                "syncBrokerMetadataPeriod": 1000,
                "brokerHeartbeatInterval": 1000,
                "slaveReadEnable": "true",
            },
        )
        argv = java_command("broker", conf, heap="256m", direct_memory="256m", home=home)
        commands.append((f"broker-{index}", argv, broker_dir))

    processes: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    state = Cluster(f"127.0.0.1:{ns_port}", f"127.0.0.1:{ctl_port}", [], processes, logs)
    try:
        for name, argv, cwd in commands:
            log_path = root / f"{name}.out"
            logs.append(log_path)
            with log_path.open("wb") as log_file:
                processes.append(
                    subprocess.Popen(argv, cwd=cwd, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
                )
            if name == "namesrv":
                _wait_port(ns_port, processes[-1], state)
        state.brokers = [f"127.0.0.1:{p}" for p in broker_ports]
        yield state
    finally:
        for proc in processes:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 20
        for proc in processes:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def _wait_port(port: int, proc: subprocess.Popen[bytes], state: Cluster) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"process exited before listening on {port}\n{state.log_tails()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"nothing listens on {port} after {STARTUP_TIMEOUT:g}s\n{state.log_tails()}")


async def _eventually(what: str, probe: Callable[[], Awaitable[T]], check: Callable[[T], bool], state: Cluster) -> T:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    last: object = None
    while time.monotonic() < deadline:
        try:
            value = await probe()
            if check(value):
                return value
            last = value
        except RemotingException as exc:
            last = exc
        if any(p.poll() is not None for p in state.processes):
            break
        await asyncio.sleep(0.5)
    pytest.fail(f"{what}: not reached; last answer: {last!r}\n{state.log_tails()}")


async def test_real_processes_round_trip(cluster: Cluster) -> None:
    async with RemotingClient([cluster.namesrv], request_timeout=5) as client:
        # Controller: the single DLedger node leads; controller metadata names it.
        leader = await _eventually(
            "controller leader",
            lambda: client.find_controller_leader([cluster.controller]),
            lambda m: m.is_leader,
            cluster,
        )
        assert leader.leader_address == cluster.controller
        assert dict(leader.peers) == {"n0": cluster.controller}
        assert leader.group == "remoting-it"

        # Both replicas registered: one master (id 0 in namesrv), one slave, and both in sync.
        info = await _eventually(
            "two replicas in namesrv",
            client.get_cluster_info,
            lambda i: GROUP in i.broker_addr_table and len(i.broker_addr_table[GROUP].broker_addrs) == 2,
            cluster,
        )
        assert info.cluster_addr_table[CLUSTER] == (GROUP,)
        addrs = dict(info.broker_addr_table[GROUP].broker_addrs)
        master = addrs[0]
        assert set(addrs.values()) == set(cluster.brokers)
        slave_id, slave = next((i, a) for i, a in addrs.items() if i != 0)

        def two_in_sync(state: dict[str, SyncStateInfo]) -> bool:
            group = state.get(GROUP)
            return group is not None and len(group.in_sync_replicas) == 2

        state = await _eventually(
            "SyncStateSet of two",
            lambda: client.get_sync_state_data(leader.addr, [GROUP]),
            two_in_sync,
            cluster,
        )
        group = state[GROUP]
        assert group.master_address == master and group.master_epoch >= 1
        assert group.sync_state_set == {group.master_broker_id, slave_id}
        assert all(r.alive for r in group.in_sync_replicas) and group.not_in_sync_replicas == ()

        replica = await client.get_replica_info(leader.addr, GROUP)
        assert replica.master_address == master and replica.master_broker_id == group.master_broker_id
        assert replica.sync_state_set == group.sync_state_set
        assert replica.sync_state_set_epoch == group.sync_state_set_epoch

        # Broker admin.
        runtime = await client.get_runtime_info(master)
        assert "brokerVersionDesc" in runtime and "commitLogMaxOffset" in runtime
        config = await client.get_broker_config(master)
        assert config["brokerName"] == GROUP and config["enableControllerMode"] == "true"
        assert config["brokerRole"] == "SYNC_MASTER"
        ha = await client.get_ha_status(master)
        assert ha.master and len(ha.connections) == 1 and ha.connections[0].in_sync
        slave_ha = await client.get_ha_status(slave)
        assert not slave_ha.master and slave_ha.client is not None

        # Topic, route, send, pull.
        topic = "remoting-it-topic"
        await client.create_topic(master, topic, 2, 2)
        route = await _eventually(
            "topic route",
            lambda: client.get_route(topic),
            lambda r: any(q.broker_name == GROUP and q.write_queue_nums == 2 for q in r.queue_datas),
            cluster,
        )
        broker_data = route.broker(GROUP)
        assert broker_data is not None and broker_data.master_addr == master

        base = await client.get_max_offset(master, topic, 1)
        sent = await client.send(master, topic, b"hello from python", 1, keys=["k1", "k2"], tags="tA")
        assert sent.status == "PUT_OK" and sent.stored and sent.code == 0, sent
        assert sent.queue_id == 1 and sent.queue_offset == base
        assert sent.offset_msg_id is not None and len(sent.offset_msg_id) == 32

        pulled = await _eventually(
            "pull the message back",
            lambda: client.pull(master, topic, 1, base, 8, "remoting-it-cg"),
            lambda p: p.status == "FOUND",
            cluster,
        )
        message = pulled.messages[0]
        assert message.body == b"hello from python" and message.topic == topic
        assert message.msg_id == sent.msg_id and message.offset_msg_id == sent.offset_msg_id
        assert message.keys == ("k1", "k2") and message.tags == "tA"
        assert message.queue_id == 1 and message.queue_offset == base
        assert message.store_host == master
        assert pulled.next_begin_offset == base + 1

        assert await client.get_max_offset(master, topic, 1) == base + 1
        assert await client.get_min_offset(master, topic, 1) == 0
        nothing = await client.pull(master, topic, 1, base + 1, 8, "remoting-it-cg")
        assert nothing.status == "NO_NEW_MSG"

        assert await client.query_consumer_offset(master, "remoting-it-cg", topic, 1) is None
        await client.update_consumer_offset(master, "remoting-it-cg", topic, 1, base + 1)
        assert await client.query_consumer_offset(master, "remoting-it-cg", topic, 1) == base + 1

        # Facts §2.2/§2.3: in controller mode a SyncStateSet smaller than minInSyncReplicas rejects the put
        # before the append, on the wire as SYSTEM_ERROR (1) "in-sync replicas not enough".
        await client.update_broker_config(master, {"minInSyncReplicas": 3})
        try:
            refused = await client.send(master, topic, b"refused", 1)
        finally:
            await client.update_broker_config(master, {"minInSyncReplicas": 1})
        assert (refused.status, refused.stored, refused.code) == ("IN_SYNC_REPLICAS_NOT_ENOUGH", False, 1)
        assert refused.remark == "in-sync replicas not enough"
        assert await client.get_max_offset(master, topic, 1) == base + 1
        again = await client.send(master, topic, b"accepted", 1)
        assert again.status == "PUT_OK" and again.queue_offset == base + 1

        # A slave refuses writes (observed: SYSTEM_BUSY "[REJECTREQUEST]...", not SERVICE_NOT_AVAILABLE).
        to_slave = await client.send(slave, topic, b"to slave", 0)
        assert not to_slave.stored and to_slave.code in (2, 14), to_slave

        # Controller calls are served on the controller (DLedger peer) port only, not the namesrv port.
        with pytest.raises(RemotingException, match="REQUEST_CODE_NOT_SUPPORTED"):
            await client.get_controller_metadata(cluster.namesrv)

"""The produce/consume tools against real RocketMQ processes on 127.0.0.1.

One namesrv hosting the DLedger controller and a two-replica controller-mode broker group
(``allAckInSyncStateSet=true``, slave read enabled), started the way ``test_remoting_real.py`` does.
Checks: 500 x 1 KiB messages produced (topic created through cluster info) are all PUT_OK and consumed
exactly once with equal digests, reading auto (suggestion-following) and master-only; the CLI's JSON;
IN_SYNC_REPLICAS_NOT_ENOUGH is retried and finally reported as a failure with exit code 1.

Needs JDK 17 and the pinned distribution. Outside CI a missing distribution or java skips; under
``CI=true`` the distribution is built if missing and anything missing fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools import consume, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
CLUSTER = "tools-it"
GROUP = "tools-it-bg"
STARTUP_TIMEOUT = 120.0


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


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from rocketmq_operator.platforms.local.distribution import java_command

    home = _distribution_home()
    root = tmp_path_factory.mktemp("tools-real")
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
            "controllerDLegerGroup": "tools-it",
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
                "allAckInSyncStateSet": "true",
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
    state = Cluster(f"127.0.0.1:{ns_port}", f"127.0.0.1:{ctl_port}", processes, logs)
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
        asyncio.run(_wait_ready(state))
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


async def _wait_ready(state: Cluster) -> None:
    """Both replicas registered in namesrv, and the master's SyncStateSet holds both."""
    last: object = None
    deadline = time.monotonic() + STARTUP_TIMEOUT
    async with RemotingClient([state.namesrv], request_timeout=5) as client:
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in state.processes):
                break
            try:
                info = await client.get_cluster_info()
                broker = info.broker_addr_table.get(GROUP)
                if broker is not None and len(broker.broker_addrs) == 2 and broker.master_addr:
                    leader = await client.find_controller_leader([state.controller])
                    sync = await client.get_sync_state_data(leader.leader_address or leader.addr, [GROUP])
                    if len(sync[GROUP].in_sync_replicas) == 2:
                        return
                    last = sync
                else:
                    last = info
            except (RemotingException, KeyError) as exc:
                last = exc
            await asyncio.sleep(0.5)
    pytest.fail(f"cluster not ready: last answer {last!r}\n{state.log_tails()}")


async def test_produce_then_consume_all_exactly_once(cluster: Cluster) -> None:
    topic = "tools-it-roundtrip"
    report = await produce(cluster.namesrv, topic, 500, size=1024, concurrency=16, timeout=5)
    assert report.ok, report.to_json()
    assert report.sent == report.acknowledged == 500
    assert report.statuses == {"PUT_OK": 500}
    assert report.failures == {} and report.attempt_failures == {}
    assert report.digest == report.acknowledged_digest == report.sent_digest
    assert {r.queue_id for r in report.records} == {0, 1, 2, 3}  # created 4/4, round-robin
    print(f"\nproduce 500 x 1 KiB: {report.msgs_per_s} msgs/s, latency {report.latency_ms}")

    auto = await consume(cluster.namesrv, topic, idle_timeout=1.0, read_from="auto")
    assert auto.count == 500 and auto.unique == 500 and auto.duplicates == 0, auto.to_json()
    assert auto.digest == report.acknowledged_digest
    assert auto.body_mismatches == 0 and auto.without_key == 0
    assert auto.keys == {r.key for r in report.records}
    assert set(auto.served_by) <= {f"{GROUP}/{i}" for i in range(0, 8)}
    assert sum(auto.served_by.values()) == 500
    assert sorted(auto.per_queue) == [f"{GROUP}:{i}" for i in range(4)]
    assert all(q.caught_up and q.next_offset == q.max_offset for q in auto.per_queue.values())

    master = await consume(cluster.namesrv, topic, idle_timeout=0.5, read_from="master", commit=True)
    assert master.digest == report.acknowledged_digest and master.duplicates == 0
    assert master.served_by == {f"{GROUP}/0": 500} and master.committed

    latest = await consume(cluster.namesrv, topic, start="latest", idle_timeout=0.3)
    assert latest.count == 0 and latest.digest == "0" * 64


def test_cli_produce_consume_json(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    from rocketmq_operator.cli import main

    topic = "tools-it-cli"
    args = ["--namesrv", cluster.namesrv, "--topic", topic]
    assert main(["produce", *args, "--count", "40", "--size", "100", "--key-prefix", "cli-", "--json"]) == 0
    produced = json.loads(capsys.readouterr().out)
    assert produced["sent"] == produced["acknowledged"] == 40 and produced["statuses"] == {"PUT_OK": 40}
    assert main(["consume", *args, "--idle-timeout", "0.5", "--json"]) == 0
    consumed = json.loads(capsys.readouterr().out)
    assert consumed["count"] == 40 and consumed["duplicates"] == 0
    assert consumed["digest"] == produced["digest"] == produced["acknowledged_digest"]

    assert main(["consume", *args, "--max-messages", "7", "--idle-timeout", "0.5"]) == 0
    human = capsys.readouterr().out
    assert "7 (7 unique, 0 duplicates)" in human


async def test_in_sync_replicas_not_enough_is_retried_then_failed(cluster: Cluster) -> None:
    topic = "tools-it-isr"
    async with RemotingClient([cluster.namesrv], request_timeout=5) as client:
        first = await produce(None, topic, 1, client=client)
        assert first.ok
        route = await client.get_route(topic)
        master = route.broker_datas[0].master_addr
        assert master is not None
        await client.update_broker_config(master, {"minInSyncReplicas": 3})
        try:
            refused = await produce(None, topic, 5, retries=1, concurrency=1, client=client)
        finally:
            await client.update_broker_config(master, {"minInSyncReplicas": 1})
    assert refused.acknowledged == 0 and not refused.ok
    assert refused.failures == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 5}
    assert refused.attempt_failures == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 10}
    assert refused.acknowledged_digest == "0" * 64 and refused.sent_digest != "0" * 64
    # Nothing of the refused messages was appended: only the first message is there.
    read = await consume(cluster.namesrv, topic, idle_timeout=0.3)
    assert read.count == 1 and read.digest == first.digest

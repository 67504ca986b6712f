"""examples/proxy.yaml on the local platform: real RocketMQ proxies in cluster mode in front of the quickstart
group, and RocketMQ 5's own gRPC client (rocketmq-python-client, default settings) through them.

What a user does: `local up -f examples/proxy.yaml`, `eval "$(rocketmq-operator local env)"`, send and receive
through ROCKETMQ_PROXY_ENDPOINT; then the master is SIGKILLed, and later SIGSTOPped (a hung master, woken once the
client is writable again), each while a default gRPC producer sends through the proxy. Checked as the client sees
it: every acknowledged key is read back through the proxy, and the producer is writable again after each fault
(the figures are a benchmark's, `bench proxy-failover --fault kill|stop`; here they are only printed).
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import pytest

import java_grpc
from rocketmq_operator.bench.failover import write_pause
from rocketmq_operator.tools.grpc_client import SteadyGrpcProducer, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "proxy.yaml"
GROUP = "broker-a"
TOPIC = "orders"
CONSUMER_GROUP = "orders-readers"


def _env(cluster: Any) -> dict[str, str]:
    """`local env`, parsed as the shell's eval would."""
    out: dict[str, str] = {}
    for line in cluster.cli("env").stdout.splitlines():
        words = shlex.split(line)
        assert words[0] == "export", line
        name, _, value = words[1].partition("=")
        out[name] = value
    return out


def _master(cluster: Any, doc: dict[str, Any]) -> str | None:
    master = cluster.group(GROUP, doc).get("master") or {}
    replica = master.get("replica")
    return str(replica) if replica else None


def test_grpc_clients_through_local_proxies_a_master_kill_and_a_hung_master(
    local_platform: Any, tmp_path: Path
) -> None:
    java_classpath = java_grpc.compile_clients(tmp_path / "java")  # before the cluster: Maven's fetch, once
    with local_platform.up(EXAMPLE, name="proxy") as cluster:
        doc = cluster.status()
        proxies = doc["proxies"]
        assert [p["name"] for p in proxies] == ["proxy-0", "proxy-1"], proxies
        assert all(p["ready"] for p in proxies), proxies
        env = _env(cluster)
        endpoint = env["ROCKETMQ_PROXY_ENDPOINT"]
        assert endpoint == proxies[0]["endpoint"], env
        assert env["NAMESRV_ADDR"]
        other = proxies[1]["endpoint"]

        # Send through one proxy, receive through the other (they share nothing but the name servers and brokers):
        # every key acknowledged comes back to a SimpleConsumer.
        keys = [f"proxy-basic-{i}" for i in range(50)]
        failed = [(s.key, s.status, s.error) for s in send_keys(endpoint, TOPIC, keys) if not s.ok]
        assert not failed, failed
        got = receive_keys(other, CONSUMER_GROUP, TOPIC, keys, idle_s=20)
        assert not missing_acknowledged(set(keys), got), sorted(set(keys) - got)[:10]

        # RocketMQ 5's Java gRPC clients with their defaults, as a Java application sends and reads: every key its
        # Producer got acknowledged comes back to its SimpleConsumer (which acks each) through the other proxy.
        java = java_grpc.produce(java_classpath, endpoint, TOPIC, "proxy-java", 50)
        print(f"\nJava gRPC client (rocketmq-client-java {java_grpc.JAVA_GRPC_CLIENT_VERSION}, defaults): "
              f"{len(java.acknowledged)} acknowledged, failures {java.failures[:3]}")  # fmt: skip
        assert len(java.acknowledged) == 50 and not java.failures, java.output[-3000:]
        read = java_grpc.receive(java_classpath, other, TOPIC, CONSUMER_GROUP, java.acknowledged, idle_s=20)
        assert not missing_acknowledged(java.acknowledged, read.keys), sorted(java.acknowledged - read.keys)[:10]

        # A master SIGKILL, then a hung master (SIGSTOP), each under a default gRPC producer through the proxies.
        acked = _fault_under_producer(cluster, endpoint, "KILL") | _fault_under_producer(cluster, endpoint, "STOP")
        got = receive_keys(other, CONSUMER_GROUP, TOPIC, acked, idle_s=20)
        lost = missing_acknowledged(acked, got)
        assert not lost, f"{len(lost)} acknowledged keys not read back: {sorted(lost)[:10]}"


def _full_set(cluster: Any, doc: dict[str, Any]) -> bool:
    group = cluster.group(GROUP, doc)
    return _master(cluster, doc) is not None and len((group.get("syncStateSet") or {}).get("members") or []) == 3


def _fault_under_producer(cluster: Any, endpoint: str, signal: str) -> set[str]:
    """SIG`signal` to the master while a default gRPC producer sends through the proxy at `endpoint`; returns the
    keys it got acknowledged. A stopped master gets SIGCONT once the client is writable again (if the supervisor
    has not fenced it by then): a woken master that acknowledged what the election discarded would lose a key."""
    before = _master(cluster, cluster.wait_for("a full SyncStateSet", lambda d: _full_set(cluster, d), timeout=180))
    assert before is not None
    producer = SteadyGrpcProducer(endpoint, TOPIC, rate=50.0, key_prefix=f"proxy-{signal.lower()}-")
    producer.start()
    try:
        cluster.wait_for(f"acknowledged sends before the SIG{signal}", lambda _d: len(producer.acknowledged()) >= 50)
        faulted_at = time.time()
        cluster.cli("kill", before, "--signal", signal)
        cluster.wait_for(
            "another master, named by the controller", lambda d: _master(cluster, d) not in (None, before), timeout=120
        )
        cluster.wait_for(
            f"acknowledged sends after the SIG{signal}",
            lambda _d: any(r.ok and r.start > faulted_at for r in producer.records),
            timeout=120,
        )
        if signal == "STOP":
            woken_at = time.time()
            woke = cluster.cli("kill", before, "--signal", "CONT", check=False)
            print(f"\nSIGCONT {before}: exit {woke.returncode} {woke.stdout.strip()} {woke.stderr.strip()}")
            cluster.wait_for(
                "acknowledged sends after the SIGCONT",
                lambda _d: any(r.ok and r.start > woken_at for r in producer.records),
                timeout=120,
            )
    finally:
        records = producer.stop()
    acked = {r.key for r in records if r.ok}
    failed = sum(1 for r in records if not r.ok)
    # The write pause (the longest gap between acknowledgements) around the fault: the CLI's start delays the
    # signal by a fraction of a second after `faulted_at`, so "the first acknowledgement after it" says little.
    pause = write_pause(records, faulted_at, time.time())
    print(
        f"\ngRPC producer through the proxy, SIG{signal} of {before}: {len(records)} sends, {len(acked)} "
        f"acknowledged, {failed} failed; longest gap between acknowledgements {pause:.2f}s"
    )
    return acked

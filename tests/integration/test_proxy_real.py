"""examples/proxy.yaml on the local platform: real RocketMQ proxies in cluster mode in front of the quickstart
group, and RocketMQ 5's own gRPC client (rocketmq-python-client, default settings) through them.

What a user does: `local up -f examples/proxy.yaml`, `eval "$(rocketmq-operator local env)"`, send and receive
through ROCKETMQ_PROXY_ENDPOINT; then the master is SIGKILLed, and later SIGSTOPped (a hung master, woken once the
client is writable again), each while a default gRPC producer sends through the proxy. Checked as the client sees
it: every acknowledged key is read back through the proxy, and the producer is writable again after each fault
(the figures are a benchmark's, `bench proxy-failover --fault kill|stop`; here they are only printed).

Then, on the same cluster once its SyncStateSet is full again (`local_platform.shared`: a cluster start with
two proxies is about a minute of both cores here), `local apply` of the example with another
`routeRefreshSeconds` under a gRPC producer through each proxy: the proxies roll one at a time, never both down,
and no acknowledged key is lost. A first test that fails takes the cluster down, so the second starts its own.
"""

from __future__ import annotations

import shlex
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

import java_grpc
from rocketmq_operator.api.models import DEFAULT_PROXY_MIN_READY_SECONDS
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
    cluster = local_platform.shared(EXAMPLE, name="proxy")
    with local_platform.down_on_failure():
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


def _settled(cluster: Any, doc: dict[str, Any]) -> bool:
    return _full_set(cluster, doc) and all(p["ready"] for p in doc["proxies"])


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


def _log_times(state_dir: Path, after: float) -> list[tuple[float, str]]:
    """The supervisor's log lines written after `after` (epoch seconds), each with its time (the log's asctime is
    local time, as `datetime.timestamp` reads a naive one)."""
    out: list[tuple[float, str]] = []
    for line in (state_dir / "supervisor.log").read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            at = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        except ValueError:
            continue
        if at >= after:
            out.append((at, line[24:]))
    return out


def _first(lines: list[tuple[float, str]], text: str) -> float:
    found = [at for at, line in lines if text in line]
    assert found, f"no supervisor.log line with {text!r} in:\n" + "\n".join(line for _, line in lines[-60:])
    return found[0]


def test_a_changed_proxy_rolls_one_proxy_at_a_time_under_grpc_producers(local_platform: Any, tmp_path: Path) -> None:
    """`local apply` of examples/proxy.yaml with another routeRefreshSeconds, while a default gRPC producer sends
    through each proxy: both proxies restart on the new revision one after the other (the second only once the
    first serves again), the other proxy acknowledges sends while one is down, and every acknowledged key is read
    back."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if d]
    proxy_doc = next(d for d in docs if d["kind"] == "Proxy")
    proxy_doc["spec"]["routeRefreshSeconds"] = 2
    edited = tmp_path / "proxy-route-refresh-2.yaml"
    edited.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")

    cluster = local_platform.shared(EXAMPLE, name="proxy")
    with local_platform.down_on_failure():
        doc = cluster.wait_for("a full SyncStateSet, both proxies ready", lambda d: _settled(cluster, d), timeout=180)
        proxies = doc["proxies"]
        assert [p["name"] for p in proxies] == ["proxy-0", "proxy-1"] and all(p["ready"] for p in proxies), proxies
        revisions = {p["name"]: p["revision"] for p in proxies}
        pids = {p["name"]: p["pid"] for p in doc["processes"] if p["role"] == "proxy"}
        producers = [
            SteadyGrpcProducer(p["endpoint"], TOPIC, rate=20.0, key_prefix=f"proxy-roll-{i}-")
            for i, p in enumerate(proxies)
        ]
        samples: list[dict[str, bool]] = []
        try:
            for producer in producers:
                producer.start()
            cluster.wait_for(
                "acknowledged sends through both proxies",
                lambda _d: all(len(p.acknowledged()) >= 20 for p in producers),
            )
            applied_at = time.time()
            applied = cluster.cli("apply", "-f", str(edited))
            assert (
                "proxy: rolling restart of 2 proxies, one at a time, each serving again before the next "
                "(rmq-proxy.json keys topicRouteServiceCacheRefreshSeconds)"
            ) in applied.stdout.splitlines(), applied.stdout

            def rolled(d: dict[str, Any]) -> bool:
                samples.append({p["name"]: p["ready"] for p in d["proxies"]})
                rollout = next(g for g in d["proxyGroups"] if g["name"] == "proxy").get("rollout") or {}
                return (
                    rollout.get("phase") == "Complete"
                    and rollout.get("started") is not None
                    and all(p["ready"] and p["rolled"] for p in d["proxies"])
                )

            done = cluster.wait_for("both proxies rolled and serving", rolled, timeout=300, interval=0.3)
            rolled_at = time.time()
            cluster.wait_for(
                "acknowledged sends through both proxies after the roll",
                lambda _d: all(any(r.ok and r.start > rolled_at for r in p.records) for p in producers),
                timeout=120,
            )
        finally:
            records = [p.stop() for p in producers]
        table = cluster.cli("status").stdout
        log = _log_times(cluster.state_dir, applied_at - 1)
        for kept in ("supervisor.log", "logs/proxy-0.log", "logs/proxy-1.log"):  # `local down --purge` deletes them
            shutil.copyfile(cluster.state_dir / kept, tmp_path / kept.replace("/", "-"))
        read_back = receive_keys(
            proxies[1]["endpoint"], CONSUMER_GROUP, TOPIC, {r.key for rs in records for r in rs if r.ok}, idle_s=20
        )

    rollout = next(g for g in done["proxyGroups"] if g["name"] == "proxy")["rollout"]
    assert (rollout["restarts"], rollout["replicasDone"]) == (2, ["proxy-0", "proxy-1"]), rollout
    assert "proxy: rollout Complete" in table, table
    after = {p["name"]: p for p in done["proxies"]}
    new_pids = {p["name"]: p["pid"] for p in done["processes"] if p["role"] == "proxy"}
    for name in ("proxy-0", "proxy-1"):
        assert after[name]["revision"] != revisions[name] and new_pids[name] != pids[name], (after, new_pids, pids)
    # One after the other: proxy-1 was sent SIGTERM only after proxy-0 had started again (and served: the roll's
    # rule, seen by `local status` too: never a sample with both proxies not ready).
    term0, start0 = _first(log, "sent SIGTERM to proxy-0"), _first(log, "started proxy-0")
    term1, start1 = _first(log, "sent SIGTERM to proxy-1"), _first(log, "started proxy-1")
    assert term0 < start0 < term1 < start1, "\n".join(line for _, line in log)
    # And proxy-1's SIGTERM came spec.minReadySeconds (the default) after the pass that first saw proxy-0 serve on
    # its new revision: time for proxy-0's clients to reconnect before the other proxy goes.
    settling = _first(log, "proxy-0 serves on revision")
    assert start0 < settling < term1, "\n".join(line for _, line in log)
    assert term1 - settling >= DEFAULT_PROXY_MIN_READY_SECONDS - 1, "\n".join(line for _, line in log)
    assert all(any(s.values()) for s in samples), samples
    # The client's view: while one proxy was down, the producer through the other one got acknowledgements.
    for (down_from, down_to), other in (((term0, start0), records[1]), ((term1, start1), records[0])):
        acked = [r for r in other if r.ok and down_from <= r.end <= down_to]
        assert acked, f"no acknowledgement through the other proxy between {down_from:.3f} and {down_to:.3f}"
    acked_keys = {r.key for rs in records for r in rs if r.ok}
    print(
        f"\nproxy roll: SIGTERM to the new start {start0 - term0:.1f}s (proxy-0) and {start1 - term1:.1f}s "
        f"(proxy-1); proxy-1's SIGTERM {term1 - start0:.1f}s after proxy-0 started, {term1 - settling:.1f}s after it "
        "was first seen serving"
    )
    for name, rs, (down_from, down_to) in (
        ("proxy-1", records[1], (term0, start0)),
        ("proxy-0", records[0], (term1, start1)),
    ):
        inside = [r for r in rs if down_from <= r.end <= down_to]
        print(
            f"producer through {name} while the other proxy was down ({down_to - down_from:.1f}s): "
            f"{sum(r.ok for r in inside)} acknowledged, {sum(not r.ok for r in inside)} failed "
            f"({sorted({r.status for r in inside if not r.ok})})"
        )
    for name, rs, term in (("proxy-0", records[0], term0), ("proxy-1", records[1], term1)):
        failed = [r for r in rs if not r.ok]
        span = (
            f", from {failed[0].start - term:+.1f}s to {failed[-1].end - term:+.1f}s of its SIGTERM" if failed else ""
        )
        print(
            f"producer through {name}: {len(rs)} sends, {sum(r.ok for r in rs)} acknowledged, {len(failed)} failed "
            f"({sorted({r.status for r in failed})}){span}"
        )
    lost = missing_acknowledged(acked_keys, read_back)
    assert not lost, f"{len(lost)} acknowledged keys not read back: {sorted(lost)[:10]}"

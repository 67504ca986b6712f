"""The Proxy's benchmarks on the local platform: `bench proxy-failover` (below) and `bench proxy` (what the proxy
costs a sender: throughput and send latency through it against straight to the brokers, with the same client and
the same load in one run; `run_proxy_bench`).

`bench proxy-failover`: a master fault N times under RocketMQ 5's own gRPC client, with its default settings,
sending through the local platform's proxies. Faults (`--fault`): `kill` (SIGKILL; the supervisor restarts it) and
`stop` (SIGSTOP, a hung master: held until the client through the proxy is writable again, then SIGCONT unless the
supervisor has fenced it by then; a master that woke and acknowledged a write the election had discarded would show
as a lost key at the read-back).

What an application on RocketMQ 5 sees during a failover: the client (`tools.grpc_client`, rocketmq-python-client)
sends synchronously, one message at a time, to the first proxy's endpoint (one proxy per client, as behind a
Service); the proxy reads routes from the name servers every `spec.routeRefreshSeconds` and sends to the
master. Per trial, on one wall clock:

* `writable_again_s`: the signal (as the supervisor sent it) → the first acknowledgement of a send that started
  after it (what issue 31 measured for a default remoting client straight to the brokers: 23.3 s p50 / 28.9 s
  p99, because it keeps its route for 30 s);
* `pause_s`: the longest gap between two acknowledgements around the kill (the write pause, retries included);
* `failed`: sends that failed after the client's own attempts.

At the end every acknowledged key is read back through the proxies by a SimpleConsumer (`lost`: keys not read
back). The manifests must hold a Proxy, a controller-mode BrokerGroup, and a Topic and ConsumerGroup it declares
(examples/proxy.yaml).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import ConsumerGroup, Topic
from rocketmq_operator.bench import phase
from rocketmq_operator.bench.failover import (
    Group,
    _signal,
    full_sync_state_set,
    percentile,
    retrying,
    run_cli,
    up_controller_group,
    wait_for,
    write_pause,
)
from rocketmq_operator.bench.load import load_average_1m
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState
from rocketmq_operator.tools.grpc_client import GrpcSend, SteadyGrpcProducer, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import ProduceReport, default_key_prefix, message_key, produce
from rocketmq_operator.tools.stats import latency_summary

RECOVERY_TIMEOUT_S = 120.0


def topic_and_group(state: LocalState, group: str) -> tuple[str, str]:
    """A Topic on `group` and a ConsumerGroup that reads it, declared in the manifests; SystemExit otherwise."""
    resources = load_resources(state)
    topics = [r.metadata.name for r in resources if isinstance(r, Topic) and group in r.spec.broker_groups]
    for cg in (r for r in resources if isinstance(r, ConsumerGroup)):
        for topic in topics:
            if topic in cg.spec.topics:
                return topic, cg.metadata.name
    raise SystemExit(
        f"error: bench proxy-failover needs a Topic on BrokerGroup {group} and a ConsumerGroup that reads it in the "
        "manifests (gRPC clients do not create topics); fix: declare both, as examples/proxy.yaml does"
    )


PROXY_FAULTS = ("kill", "stop")


async def run_proxy_failover(
    files: list[str], state_dir: Path, trials: int, rate: float, keep: bool, fault: str = "kill"
) -> dict[str, Any]:
    if fault not in PROXY_FAULTS:
        raise SystemExit(f"error: --fault {fault!r}: not one of {', '.join(PROXY_FAULTS)}")
    state, group = await up_controller_group(files, state_dir, "proxy-failover")
    if not state.proxy_endpoints:
        await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
        raise SystemExit("error: bench proxy-failover needs a Proxy in the manifests; fix: add one, as "
                         "examples/proxy.yaml does")  # fmt: skip
    # One proxy per client, as behind a Service (see `local env`); the read-back goes through the last proxy.
    endpoint, reader = state.proxy_endpoints[0], state.proxy_endpoints[-1]
    topic, consumer_group = topic_and_group(state, group)
    per_trial: list[dict[str, Any]] = []
    bench_group = Group(state, group)
    producer = SteadyGrpcProducer(endpoint, topic, rate)
    records: list[GrpcSend] = []
    try:
        async with state_client(state, connect_timeout=1.0, request_timeout=2.0) as client:
            await asyncio.to_thread(producer.start)
            for _ in range(trials):
                # One fault at a time: the faulted broker is back in the SyncStateSet before the next fault.
                await wait_for("a full SyncStateSet", lambda: full_sync_state_set(bench_group, client), 180, 0.2)
                phase.announce(f"steady traffic before the fault ({fault})")
                await asyncio.sleep(3.0)
                master_id, _, _ = await retrying(lambda: bench_group.controller_master(client))
                before = await _replica_of(bench_group, client, master_id)
                faulted_at = await _signal(state_dir, before, "STOP" if fault == "stop" else "KILL")

                async def acked_after(faulted_at: float = faulted_at) -> bool:
                    return any(r.ok and r.start > faulted_at for r in producer.records)

                await wait_for("an acknowledgement after the fault", acked_after, RECOVERY_TIMEOUT_S, interval=0.05)
                notes: list[str] = []
                if fault == "stop":
                    try:  # the hung master wakes while the client writes through the proxy to the new one
                        await _signal(state_dir, before, "CONT")
                        notes.append(f"SIGCONT {before} after the client was writable again")
                    except RuntimeError as exc:
                        notes.append(f"SIGCONT: {exc}")  # fenced (killed) by the supervisor before that
                await asyncio.sleep(1.0)  # a little steady traffic after the recovery
                records = list(producer.records)
                first = min(r.end for r in records if r.ok and r.start > faulted_at)
                around = [r for r in records if r.start >= faulted_at - 5]
                per_trial.append(
                    {
                        "fault": fault,
                        "faulted": before,
                        "writable_again_s": round(first - faulted_at, 3),
                        "pause_s": round(write_pause(records, faulted_at, time.time()), 3),
                        "failed": sum(1 for r in around if not r.ok),
                        "failed_statuses": sorted({r.status for r in around if not r.ok}),
                        "notes": notes,
                    }
                )
        records = list(await asyncio.to_thread(producer.stop))
        acked = {r.key for r in records if r.ok}
        phase.announce("reading every acknowledged key back through the proxies")
        got = await asyncio.to_thread(receive_keys, reader, consumer_group, topic, acked, idle_s=20.0)
        lost = missing_acknowledged(acked, got)
    finally:
        await asyncio.to_thread(producer.stop)  # a no-op once stopped; an interrupted run stops its thread here
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))

    def summary(key: str) -> dict[str, float | None]:
        values = [float(t[key]) for t in per_trial]
        return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values, default=None)}

    return {
        "bench": "proxy-failover",
        "client": "rocketmq-python-client (gRPC), default settings, synchronous sends",
        "fault": fault,
        "proxies": len(state.proxy_endpoints),
        "trials": len(per_trial),
        "rate": rate,
        "sent": len(records),
        "acknowledged": len(acked),
        "failed": sum(1 for r in records if not r.ok),
        "lost": len(lost),
        "lost_keys": sorted(lost)[:20],
        "writable_again_s": summary("writable_again_s"),
        "pause_s": summary("pause_s"),
        "per_trial": per_trial,
    }


async def _replica_of(group: Group, client: Any, broker_id: int | None) -> str:
    """The local replica name of the controller's master `broker_id` (from the brokers' own reports)."""
    states = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    for r in states[group.name].replicas:
        if broker_id is not None and r.broker_id == broker_id:
            return r.name
    raise RuntimeError(f"no replica of {group.name} reports broker id {broker_id} (the controller's master)")


# ------------------------------------------------------------------------------------------- bench proxy

WARMUP_MESSAGES = 2000  # per path, unrecorded: the JIT, the connections and the route caches warmed first


def proxy_remoting_address(state: LocalState) -> str:
    """The first proxy's remoting `host:port`: the proxy answers route queries there with its own address, so a
    remoting client that takes it as its name server sends every message through the proxy."""
    proxy = next(r for r in state.replicas if r.role == "proxy")
    host = proxy.address.rsplit(":", 1)[0]
    return f"{host}:{proxy.ports['remoting']}"


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator`` to three places; None when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return round(numerator / denominator, 3)


async def run_proxy_bench(
    files: list[str],
    state_dir: Path,
    *,
    count: int,
    concurrency: int,
    rate: float,
    seconds: float,
    rounds: int,
    size: int,
    grpc_count: int,
    keep: bool,
) -> dict[str, Any]:
    """Throughput and send latency through the proxy against straight to the brokers: the same remoting producer
    (`tools.produce`), the same topic, the same load, alternating paths within each round (ABBA over rounds) so
    that the machine's drift falls on both. Saturated: `count` messages with `concurrency` in flight, the
    throughput. Fixed rate: `rate` messages per second for `seconds`, the latency. Then, as an application on
    RocketMQ 5 sends, `grpc_count` synchronous sends of rocketmq-python-client through the proxy."""
    state, group = await up_controller_group(files, state_dir, "proxy")
    if not state.proxy_endpoints:
        await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
        raise SystemExit("error: bench proxy needs a Proxy in the manifests; fix: add one, as examples/proxy.yaml does")
    topic, _ = topic_and_group(state, group)
    paths: dict[str, list[str]] = {"direct": state.name_servers, "proxy": [proxy_remoting_address(state)]}
    saturated: dict[str, list[ProduceReport]] = {path: [] for path in paths}
    fixed: dict[str, list[ProduceReport]] = {path: [] for path in paths}
    grpc: list[GrpcSend] = []
    fixed_count = max(1, int(rate * seconds))
    try:
        for path, namesrv in paths.items():
            phase.announce(f"warming up the {path} path")
            await produce(namesrv, topic, WARMUP_MESSAGES, size=size, concurrency=concurrency, create_topic=False,
                          keep_records=False)  # fmt: skip
        for round_index in range(rounds):
            order = list(paths) if round_index % 2 == 0 else list(reversed(paths))
            for path in order:
                phase.announce(f"round {round_index + 1}/{rounds}: {path}, {count} messages, {concurrency} in flight")
                saturated[path].append(
                    await produce(paths[path], topic, count, size=size, concurrency=concurrency, create_topic=False)
                )
            for path in order:
                phase.announce(f"round {round_index + 1}/{rounds}: {path}, {rate:g} messages/s for {seconds:g} s")
                fixed[path].append(
                    await produce(
                        paths[path],
                        topic,
                        fixed_count,
                        size=size,
                        rate=rate,
                        concurrency=concurrency,
                        create_topic=False,
                    )
                )
        if grpc_count > 0:
            phase.announce(f"{grpc_count} synchronous sends of RocketMQ's gRPC client through the proxy")
            prefix = default_key_prefix()
            keys = [message_key(prefix, seq) for seq in range(grpc_count)]
            grpc = await asyncio.to_thread(send_keys, state.proxy_endpoints[0], topic, keys)
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
    return proxy_bench_document(
        saturated, fixed, grpc, concurrency=concurrency, rate=rate, seconds=seconds, size=size, topic=topic
    )


def proxy_bench_document(
    saturated: dict[str, list[ProduceReport]],
    fixed: dict[str, list[ProduceReport]],
    grpc: list[GrpcSend],
    *,
    concurrency: int,
    rate: float,
    seconds: float,
    size: int,
    topic: str,
) -> dict[str, Any]:
    """The JSON of `bench proxy` from its runs (pure: table-tested)."""

    def throughput(path: str) -> dict[str, Any]:
        per_round = [r.msgs_per_s for r in saturated[path]]
        return {
            "msgs_per_s": percentile(per_round, 0.5),
            "per_round": per_round,
            "latency_ms": latency_summary([r.latency_ms for report in saturated[path] for r in report.records if r.ok]),
        }

    def latency(path: str) -> dict[str, Any]:
        records = [r for report in fixed[path] for r in report.records if r.ok]
        elapsed = sum(report.elapsed_s for report in fixed[path])
        return {
            "latency_ms": latency_summary([r.latency_ms for r in records]),
            "achieved_msgs_per_s": round(len(records) / elapsed, 1) if elapsed > 0 else 0.0,
        }

    sat = {path: throughput(path) for path in saturated}
    lat = {path: latency(path) for path in fixed}
    grpc_ok = [s for s in grpc if s.ok]
    grpc_elapsed = (max(s.end for s in grpc) - min(s.start for s in grpc)) if grpc else 0.0
    reports = [r for runs in (*saturated.values(), *fixed.values()) for r in runs]
    return {
        "bench": "proxy",
        "client": "this project's remoting producer (tools.produce), the same on both paths; through the proxy it "
        "takes the proxy's remoting port as its name server",
        "topic": topic,
        "size": size,
        "rounds": len(saturated.get("direct", [])),
        "saturated": {
            "concurrency": concurrency,
            **sat,
            "proxy_over_direct_msgs_per_s": ratio(sat["proxy"]["msgs_per_s"], sat["direct"]["msgs_per_s"]),
        },
        "fixed_rate": {
            "rate": rate,
            "seconds": seconds,
            **lat,
            "proxy_over_direct_p50": ratio(lat["proxy"]["latency_ms"]["p50"], lat["direct"]["latency_ms"]["p50"]),
            "proxy_over_direct_p99": ratio(lat["proxy"]["latency_ms"]["p99"], lat["direct"]["latency_ms"]["p99"]),
        },
        "grpc_via_proxy": {
            "client": "rocketmq-python-client (gRPC), default settings, one synchronous send at a time",
            "sent": len(grpc),
            "acknowledged": len(grpc_ok),
            "latency_ms": latency_summary([s.latency_ms for s in grpc_ok]),
            "msgs_per_s": round(len(grpc_ok) / grpc_elapsed, 1) if grpc_elapsed > 0 else 0.0,
        },
        "sent": sum(r.sent for r in reports) + len(grpc),
        "failed": sum(r.sent - r.acknowledged for r in reports) + len(grpc) - len(grpc_ok),
        "failures": dict(
            sum((Counter(r.failures) for r in reports), Counter()) + Counter(s.status for s in grpc if not s.ok)
        ),
        "load_avg_1m": load_average_1m(),
    }

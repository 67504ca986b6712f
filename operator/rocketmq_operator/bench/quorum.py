"""`rocketmq-operator bench quorum`: what quorum writes buy (RIP-34), measured on real local brokers.

Contract: `run_quorum` brings up one local group per (replicas, mode) (`quorum_plan.manifest`), and on it runs
each condition in turn under the same load: a steady producer (fixed rate, 512-byte messages, a 5 s timeout
so that the broker's 3 s FLUSH_SLAVE_TIMEOUT reaches the client as a status, 2 retries as the Java client) for
``seconds``, after a warm-up that creates the topic. The condition is applied to one slave (the first by name
that the name server does not list as master) right before the measured window and lifted right after it:

* `stalled`: SIGSTOP through the supervisor (the process keeps its sockets and sends nothing), SIGCONT after;
* `slow`: a CFS quota of ``slow_share`` of one CPU (`platforms.local.netfault.CpuQuota`), lifted after.

Between conditions the group is given its health back: every process running, and in controller mode a full
SyncStateSet. Each cell is `quorum_plan.summarize_cell`; the group is taken down afterwards (unless ``keep``),
also on an error or Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from rocketmq_operator.bench.failover import Group, full_sync_state_set, run_cli, wait_for
from rocketmq_operator.bench.quorum_plan import (
    GROUP,
    CellGroup,
    SendOutcome,
    headline,
    manifest,
    plan_groups,
    quorum_params,
    summarize_cell,
)
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.netfault import CpuQuota
from rocketmq_operator.platforms.local.state import LocalState, read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools.produce import SteadyProducer

PRODUCER_TIMEOUT_S = 5.0
PRODUCER_RETRIES = 2
MESSAGE_SIZE = 512
WARM_UP_S = 3.0
HEALTH_TIMEOUT_S = 120.0
UP_TIMEOUT_S = 600  # JVMs start slowly on a loaded 2-core machine


async def _master_and_slave(state: LocalState, client: RemotingClient, topic: str) -> tuple[str, str]:
    """The replica the name server lists as master (broker id 0) and the first other one by name."""
    route = await client.get_route(topic, timeout=3.0)
    addresses = next(b.broker_addrs for b in route.broker_datas if b.broker_name == GROUP)
    master_address = addresses.get(0)
    by_address = {r.address: r.name for r in state.replicas if r.group == GROUP}
    if master_address not in by_address:
        raise RuntimeError(f"the name server lists no master for {GROUP} (addresses {addresses})")
    master = by_address[master_address]
    slave = sorted(name for name in by_address.values() if name != master)[0]
    return master, slave


async def _healthy(state_dir: Path, group: CellGroup, client: RemotingClient) -> bool:
    """Every replica running and the name server listing a master for the group: the controller names the master
    before that broker has registered as one, and a topic cannot be created meanwhile (a loaded machine stretched
    that gap past the producer's start: "cluster has no master broker")."""
    state = read_state(StateLayout(state_dir).state_file)
    if any(r.pid is None or r.suspended for r in state.replicas):
        return False
    try:
        info = await client.get_cluster_info(timeout=3.0)
    except (RemotingException, OSError):
        return False
    broker = info.broker_addr_table.get(GROUP)
    if broker is None or not broker.master_addr:
        return False
    if group.mode == "allAck":
        return await full_sync_state_set(Group(state, GROUP), client)
    return True


async def _measure(
    state_dir: Path,
    group: CellGroup,
    condition: str,
    client: RemotingClient,
    cpu: CpuQuota,
    *,
    seconds: float,
    rate: float,
    slow_share: float,
) -> dict[str, Any]:
    await wait_for("the group's health", lambda: _healthy(state_dir, group, client), HEALTH_TIMEOUT_S, 0.5)
    state = read_state(StateLayout(state_dir).state_file)
    topic = f"quorum-{group.replicas}-{group.mode}-{condition}-{int(time.time())}"
    common: dict[str, Any] = dict(
        namesrv=state.name_servers, size=MESSAGE_SIZE, timeout=PRODUCER_TIMEOUT_S, retries=PRODUCER_RETRIES
    )
    async with SteadyProducer(topic, rate, **common):  # creates the topic; warms the JVMs and the route
        await asyncio.sleep(WARM_UP_S)
    master, slave = await _master_and_slave(state, client, topic)
    layout = StateLayout(state_dir)
    if condition == "stalled":
        answer = await lifecycle.request(layout, "signal", replica=slave, signal="STOP", noRestart=False)
        if not answer.get("ok"):
            raise RuntimeError(f"could not SIGSTOP {slave}: {answer.get('message')}")
    elif condition == "slow":
        pid = next(r.pid for r in state.replicas if r.name == slave)
        if pid is None:
            raise RuntimeError(f"{slave} is not running")
        await cpu.limit(slave, pid, slow_share)
    try:
        producer = SteadyProducer(topic, rate, create_topic=False, **common)
        async with producer:
            await asyncio.sleep(seconds)
        records = producer.records
    finally:
        if condition == "stalled":
            await lifecycle.request(layout, "signal", replica=slave, signal="CONT", noRestart=False)
        elif condition == "slow":
            await cpu.lift(slave)
    sends = [SendOutcome(r.status, r.latency_ms, r.ok) for r in records]
    window = (max(r.end for r in records) - min(r.start for r in records)) if records else seconds
    cell = summarize_cell(group, condition, quorum_params(group), sends, window)
    cell["master"], cell["faulted_slave"] = master, (None if condition == "healthy" else slave)
    return cell


async def run_quorum(
    state_dir: Path,
    *,
    replicas: Sequence[int],
    modes: Sequence[str],
    conditions: Sequence[str],
    seconds: float = 15.0,
    rate: float = 200.0,
    slow_share: float = 0.05,
    keep: bool = False,
) -> dict[str, Any]:
    groups = plan_groups(replicas, modes, conditions)
    cells: list[dict[str, Any]] = []
    state_dir.mkdir(parents=True, exist_ok=True)
    async with CpuQuota(state_dir) as cpu:
        if "slow" in conditions:
            cpu.check()  # before any group is brought up
        for group in groups:
            directory = state_dir / f"{group.replicas}-{group.mode}"
            file = state_dir / f"{group.replicas}-{group.mode}.yaml"
            file.write_text(yaml.safe_dump_all(manifest(group), sort_keys=False), encoding="utf-8")
            try:
                await run_cli(
                    "local",
                    "up",
                    "--wait",
                    "--timeout",
                    str(UP_TIMEOUT_S),
                    "--state-dir",
                    str(directory),
                    "-f",
                    str(file),
                )
                state = read_state(StateLayout(directory).state_file)
                async with state_client(state, connect_timeout=1.0, request_timeout=3.0) as client:
                    for condition in conditions:
                        cells.append(
                            await _measure(
                                directory,
                                group,
                                condition,
                                client,
                                cpu,
                                seconds=seconds,
                                rate=rate,
                                slow_share=slow_share,
                            )
                        )
            finally:
                if not keep:
                    with contextlib.suppress(Exception):
                        await asyncio.shield(run_cli("local", "down", "--purge", "--state-dir", str(directory)))
    return {
        "rate_msgs_per_s": rate,
        "seconds": seconds,
        "message_size": MESSAGE_SIZE,
        "producer": {"timeout_s": PRODUCER_TIMEOUT_S, "retries": PRODUCER_RETRIES},
        "slow_share_of_a_cpu": slow_share,
        "cells": cells,
        "headline": headline(cells),
        "explain_agrees": all(c["explain_agrees"] for c in cells),
    }

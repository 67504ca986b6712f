"""`rocketmq-operator bench switchover`: N planned switchovers under a steady producer, on the local platform.

Each switchover is `control.switchover.switchover` (the one the CLI, the roll, the GitOps annotation and the drain run)
to the most caught-up other member of the SyncStateSet, while the project's producer sends at `--rate` (3 s
timeout, 2 retries, as the Java client) and a stale-route client (`bench.failover.StaleRouteClient`) sends
straight to the master of the moment every 20 ms, as a Java client with a cached route does. Per switchover:

* `client_pause_s`: the longest gap between two acknowledgements of the producer around it (what an application
  sees, retries and route refresh included);
* `reported_pause_s`: what the operation reports (fence → the new master stores puts again);
* `failed_sends`: the producer's sends that failed after their retries;
* `all_in_sync_after_s`: the controller's election → every replica back in the SyncStateSet;
* `stale_acks_after_election`: acknowledgements the stale-route client got from the old master after the
  controller's election answer (a fenced master must give none that a later truncation could take away; the
  final read decides: `deposed_acks`).

At the end every acknowledged message (the stale client's too) is read back: `lost` counts the producer's
acknowledged messages that are missing, `deposed_acks` every acknowledgement whose queue offset on the final
master holds another message.

`extra_elections`: each switchover is one election; any other bump of the controller's master epoch (sampled all
along, `bench.elections`) from a switchover to the next (after the last one: to the end of the read-back) is an
election nobody asked for. Per switchover: `extra_elections` and `epochs`, the [epoch, master] pairs seen.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rocketmq_operator.bench.elections import EpochWatch, Window, epochs_seen, extra_elections, watching
from rocketmq_operator.bench.failover import (
    Group,
    StaleRouteClient,
    delivery,
    full_sync_state_set,
    percentile,
    read_back,
    run_cli,
    up_controller_group,
    wait_for,
)
from rocketmq_operator.bench.upgrade import longest_gap
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.control.switchover import OperationRefused, OperationReport, switchover
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.tools.produce import SteadyProducer

SETTLE_S = 3.0  # steady traffic after each switchover, inside its measuring window


async def run_bench(files: list[str], state_dir: Path, switchovers: int, rate: float, keep: bool) -> dict[str, Any]:
    state, group_name = await up_controller_group(files, state_dir, "switchover")
    group = Group(state, group_name)
    topic = f"bench-switchover-{int(time.time())}"
    per: list[dict[str, Any]] = []
    stale_clients: list[StaleRouteClient] = []
    switched_at: list[float] = []  # each switchover's first sample of the controller's master
    try:
        async with (
            state_client(state, connect_timeout=1.0, request_timeout=3.0) as client,
            watching(EpochWatch(lambda: group.controller_master(client))) as watch,
        ):
            producer = SteadyProducer(topic, rate, namesrv=state.name_servers, size=512, timeout=3.0, retries=2)
            await producer.start()
            try:
                await asyncio.sleep(2.0)
                for _ in range(switchovers):
                    per.append(await _one_switchover(client, group, producer, watch, topic, stale_clients, switched_at))
            finally:
                await producer.stop()
            got, lost, deposed = await read_back(client, state, group, topic, producer, stale_clients)
            # The read-back above is the settle time after the last switchover: its elections are extra too.
            ended_at = time.time()
            await watch.sample()
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
    ends = [*switched_at[1:], ended_at] if switched_at else []
    windows = [Window(start, end, expected=1) for start, end in zip(switched_at, ends, strict=True)]
    for p, extra, start, end in zip(per, extra_elections(watch.samples, windows), switched_at, ends, strict=True):
        p["extra_elections"] = extra
        p["epochs"] = epochs_seen(watch.samples, start, end)
    client_pause = [p["client_pause_s"] for p in per]
    reported = [p["reported_pause_s"] for p in per if p["reported_pause_s"] is not None]
    return {
        "group": group.name,
        "switchovers": len(per),
        "refused_switchovers": sum(1 for p in per if p["refused"]),
        "rate_msgs_per_s": rate,
        **delivery(producer.report(), got.count, lost),
        "deposed_acks": deposed,
        "stale_route_acks_after_election": sum(p["stale_acks_after_election"] for p in per),
        "extra_elections": sum(p["extra_elections"] for p in per),
        "client_pause_s": _summary(client_pause),
        "reported_pause_s": _summary(reported),
        "all_in_sync_after_s": _summary([p["all_in_sync_after_s"] for p in per]),
        "per_switchover": per,
    }


async def _one_switchover(
    client: RemotingClient,
    group: Group,
    producer: SteadyProducer,
    watch: EpochWatch,
    topic: str,
    stale_clients: list[StaleRouteClient],
    switched_at: list[float],
) -> dict[str, Any]:
    """One switchover to the most caught-up member of the SyncStateSet under the producer, with a client that
    keeps sending to the old master (appended to ``stale_clients``); what the clients saw. Its start is appended
    to ``switched_at`` (the first sample of the controller's master for it)."""
    await wait_for("a full SyncStateSet", lambda: full_sync_state_set(group, client), timeout=180, interval=0.2)
    observed = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    st = observed[group.name]
    old = st.named_master
    assert old is not None and st.master_broker_id is not None
    targets = [r for r in st.replicas if r.broker_id in st.sync_state_set and r is not old]
    target = max(targets, key=lambda r: (r.max_offset or 0, -(r.broker_id or 0)))
    assert target.broker_id is not None
    stale = StaleRouteClient(client, old.address, group.name, topic)
    stale_clients.append(stale)
    stale_task = asyncio.create_task(stale.run())
    switched_at.append(time.time())
    await watch.sample()
    started = time.time()
    refused: str | None = None
    try:
        report: OperationReport | None = await switchover(
            client,
            group.controllers,
            group.spec.cluster_name,
            group.name,
            group.endpoints,
            target.broker_id,
            min_in_sync_replicas=effective_quorum(group.spec).min_in_sync_replicas,
        )
    except OperationRefused as exc:  # a finding of the bench, recorded; the next switchover waits for health
        report, refused = None, str(exc)
    elected = (report.elected_at if report else None) or started
    # Every replica back in the SyncStateSet: the third replica may have raced to the old master's HA port (its
    # name-server registration still named it) and waits for the policy.
    full_at = await wait_for(
        "a full SyncStateSet", lambda: full_sync_state_set(group, client), timeout=180, interval=0.1
    )
    await asyncio.sleep(SETTLE_S)
    stale.stop()
    await stale_task
    ended = time.time()
    records = [r for r in producer.records if started - 0.5 <= r.start <= ended]
    pause, _, _ = longest_gap(records, started - 0.5, ended)
    return {
        "from": st.master_broker_id,
        "to": report.new_master if report else None,
        "refused": refused,
        "client_pause_s": round(pause, 3),
        "reported_pause_s": None if report is None or report.write_pause_s is None else round(report.write_pause_s, 3),
        "fence_to_election_s": round(elected - ((report.fenced_at if report else None) or elected), 3),
        "failed_sends": sum(1 for r in records if not r.ok),
        "all_in_sync_after_s": round(full_at - elected, 3),
        "stale_sends": stale.sends,
        "stale_acks_after_election": sum(1 for _, _, k in stale.acks if _ack_time(k) > elected),
    }


def _summary(values: list[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values, default=None)}


def _ack_time(key: str) -> float:
    """The stale client's keys carry the wall time the send started (`stale-ADDR-NANOS-SEQ`)."""
    return int(key.split("-")[-2]) / 1e9

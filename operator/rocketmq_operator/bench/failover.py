"""`rocketmq-operator bench failover`: SIGKILL the master N times under a steady producer, on the local platform.

Per trial it measures, with one clock (wall time):

* `election_s`: the SIGKILL (as the supervisor sent it) → the controller leader names a new master (polled
  directly every 20 ms);
* `observe_lag_s`: the controller's election → the operator's status (observe + plan.status, polled every
  `observe_interval_s` like the operator's observer) shows the new master;
* `rto_s`: OpenChaos's client-visible recovery (first failed send → next acknowledged send; 0 when the
  producer's retries hid the failover). The trial waits until the producer is through the outage (at most
  `RECOVERY_TIMEOUT_S`; `recovered: false` otherwise, and then the open window counts up to that moment);
* `pause_s`: the longest gap between two acknowledgements around the kill (the write pause an application sees,
  retries included).

At the end every acknowledged message must be consumed: `lost` counts those that are not.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.observe import ReplicaEndpoint, observe_groups
from rocketmq_operator.plan.status import build_broker_status
from rocketmq_operator.platforms.local import control
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.produce import SendRecord, SteadyProducer

RECOVERY_TIMEOUT_S = 60.0


@dataclass
class Trial:
    killed_broker_id: int
    new_master: int | None
    election_s: float | None
    observe_lag_s: float | None
    rto_s: float
    pause_s: float
    failed_sends: int
    recovered: bool = True  # the producer got through within RECOVERY_TIMEOUT_S


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 3)


async def _cli(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rocketmq_operator.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    text = out.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"`rocketmq-operator {' '.join(args)}` failed ({proc.returncode}):\n{text}")
    return text


async def _sigkill(state_dir: Path, replica: str) -> float:
    """SIGKILL one replica through the supervisor (which restarts it after its back-off); returns when the
    signal was sent, by the supervisor's clock (the same machine's wall clock)."""
    answer = await control.request(StateLayout(state_dir), "signal", replica=replica, signal="KILL", noRestart=False)
    if not answer.get("ok"):
        raise RuntimeError(f"could not SIGKILL {replica}: {answer.get('message')}")
    return float(answer.get("signalledAt") or time.time())


class Group:
    """What the bench needs of one local controller-mode group."""

    def __init__(self, state: LocalState, name: str) -> None:
        info = state.group(name)
        if info is None or not info.controller_mode:
            raise SystemExit(f"error: {name} is not a controller-mode BrokerGroup of this local cluster")
        self.name = name
        self.state = state
        self.controllers = list(info.controllers)
        self.endpoints = [ReplicaEndpoint(r, rp.address) for r in info.replicas if (rp := state.replica(r))]
        self.spec = next(
            r.spec for r in load_resources(state) if isinstance(r, BrokerGroup) and r.metadata.name == name
        )

    async def controller_master(self, client: RemotingClient) -> tuple[int | None, int | None, int]:
        meta = await client.find_controller_leader(self.controllers, timeout=1.0)
        assert meta.leader_address is not None
        info = (await client.get_sync_state_data(meta.leader_address, [self.name], timeout=1.0))[self.name]
        return info.master_broker_id, info.master_epoch, len(info.in_sync_replicas)

    async def status_master(self, client: RemotingClient) -> int | None:
        states = await observe_groups(client, self.controllers, {self.name: self.endpoints}, {self.name: True})
        status = build_broker_status(self.spec, states[self.name], None, "")
        return status.master.broker_id if status.master else None


async def _wait(what: str, check: Any, timeout: float, interval: float = 0.02) -> float:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if await check():
                return time.time()
        except (RemotingException, OSError, AssertionError, KeyError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


async def _recovered(producer: SteadyProducer, killed_at: float, timeout: float) -> bool:
    """Wait until a send that started after the kill has been acknowledged and the last answer is one (the
    producer is through the outage); False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answers = [r for r in producer.records if r.start > killed_at]
        if answers and any(r.ok for r in answers) and max(answers, key=lambda r: r.end).ok:
            return True
        await asyncio.sleep(0.1)
    return False


def _pause(records: list[SendRecord], start: float, end: float) -> float:
    acks = sorted(r.end for r in records if r.ok and start - 5 <= r.end <= end)
    gaps = [b - a for a, b in itertools.pairwise(acks)]
    return max(gaps, default=0.0)


async def run_bench(
    files: list[str], state_dir: Path, trials: int, rate: float, observe_interval_s: float, keep: bool
) -> dict[str, Any]:
    up_args = ["local", "up", "--wait", "--state-dir", str(state_dir)]
    for f in files:
        up_args += ["-f", f]
    await _cli(*up_args)
    state = read_state(StateLayout(state_dir).state_file)
    group_names = [g.name for g in state.groups if g.kind == "BrokerGroup" and g.controller_mode]
    if not group_names:
        raise SystemExit("error: bench failover needs a controller-mode BrokerGroup")
    group = Group(state, group_names[0])
    by_id: dict[int, str] = {}
    results: list[Trial] = []
    topic = f"bench-failover-{int(time.time())}"
    try:
        async with RemotingClient(state.name_servers, connect_timeout=1.0, request_timeout=2.0) as client:
            producer = SteadyProducer(topic, rate, namesrv=state.name_servers, size=512, timeout=3.0, retries=2)
            await producer.start()
            try:
                for _ in range(trials):
                    await _wait("a full SyncStateSet", lambda: _full(group, client), timeout=180, interval=0.2)
                    states = await observe_groups(
                        client, group.controllers, {group.name: group.endpoints}, {group.name: True}
                    )
                    for r in states[group.name].replicas:
                        if r.broker_id is not None:
                            by_id[r.broker_id] = r.name
                    old, old_epoch, _ = await group.controller_master(client)
                    assert old is not None
                    await asyncio.sleep(2.0)  # steady traffic before the fault
                    killed_at = await _sigkill(state_dir, by_id[old])

                    async def elected(old: int = old, old_epoch: int | None = old_epoch) -> bool:
                        master, epoch, _ = await group.controller_master(client)
                        return master is not None and master != old and (epoch or 0) > (old_epoch or 0)

                    async def observed(old: int = old) -> bool:
                        master = await group.status_master(client)
                        return master is not None and master != old

                    elect_task = asyncio.create_task(_wait("the controller's election", elected, 60))
                    observe_task = asyncio.create_task(
                        _wait("the status to show it", observed, 60, interval=observe_interval_s)
                    )
                    elected_at = await elect_task
                    observed_at = await observe_task
                    recovered = await _recovered(producer, killed_at, RECOVERY_TIMEOUT_S)
                    await asyncio.sleep(1.0)  # a little steady traffic after the recovery
                    new_master, _, _ = await group.controller_master(client)
                    now = time.time()
                    recs = list(producer.records)
                    windows = [w for w in producer.recovery_windows() if killed_at - 5 <= w.start <= now]
                    # An unclosed window (no recovery yet) counts up to now: a lower bound, never 0.
                    worst = max(((w.end if w.end is not None else now) - w.start for w in windows), default=0.0)
                    results.append(
                        Trial(
                            killed_broker_id=old,
                            new_master=new_master,
                            election_s=round(elected_at - killed_at, 3),
                            observe_lag_s=round(max(0.0, observed_at - elected_at), 3),
                            rto_s=round(worst, 3),
                            pause_s=round(_pause(recs, killed_at, now), 3),
                            failed_sends=sum(w.failed for w in windows),
                            recovered=recovered,
                        )
                    )
            finally:
                await producer.stop()
            report = producer.report()
            acknowledged = {r.key for r in producer.records if r.ok}
            got = await consume(state.name_servers, topic, idle_timeout=5.0, read_from="master")
            lost = len(acknowledged - set(got.keys))
    finally:
        if not keep:
            await _cli("local", "down", "--purge", "--state-dir", str(state_dir))
    rto = [t.rto_s for t in results]
    lag = [t.observe_lag_s for t in results if t.observe_lag_s is not None]
    election = [t.election_s for t in results if t.election_s is not None]
    pause = [t.pause_s for t in results]
    return {
        "group": group.name,
        "trials": len(results),
        "rate_msgs_per_s": rate,
        "sent": report.sent,
        "acknowledged": report.acknowledged,
        "consumed": got.count,
        "statuses": report.statuses,
        "failures": report.failures,
        "lost": lost,
        "unrecovered_trials": sum(1 for t in results if not t.recovered),
        "rto_s": {"p50": percentile(rto, 0.5), "p99": percentile(rto, 0.99), "max": max(rto, default=None)},
        "pause_s": {"p50": percentile(pause, 0.5), "p99": percentile(pause, 0.99), "max": max(pause, default=None)},
        "election_s": {"p50": percentile(election, 0.5), "p99": percentile(election, 0.99)},
        "observe_lag_s": {"p50": percentile(lag, 0.5), "p99": percentile(lag, 0.99)},
        "observe_interval_s": observe_interval_s,
        "per_trial": [t.__dict__ for t in results],
        "mean_election_s": round(statistics.fmean(election), 3) if election else None,
    }


async def _full(group: Group, client: RemotingClient) -> bool:
    master, _, members = await group.controller_master(client)
    if master is None or members < group.spec.replicas:
        return False
    states = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    return all(r.reachable for r in states[group.name].replicas)

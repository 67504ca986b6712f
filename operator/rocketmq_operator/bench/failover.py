"""`rocketmq-operator bench failover`: a master fault N times under a steady producer, on the local platform.

Faults (`--fault`): `kill` (SIGKILL; the supervisor restarts it), `stop` (SIGSTOP, a hung master: held until the
controller names another master, while a client with a stale route keeps sending to the stopped one, then
SIGCONT). `--after-leader-change` first SIGKILLs the controller leader (with the name server it hosts) and waits
for another leader. `--detection-seconds` sets spec.failover.detectionSeconds on every BrokerGroup.

Per trial it measures, with one clock (wall time):

* `election_s`: the SIGKILL (as the supervisor sent it) → the controller leader names a new master (polled
  directly every 20 ms);
* `observe_lag_s`: the controller's election → the operator's status (observe + core.status, polled every
  `observe_interval_s` like the operator's observer) shows the new master;
* `rto_s`: OpenChaos's client-visible recovery (first failed send → next acknowledged send; 0 when the
  producer's retries hid the failover). The trial waits until the producer is through the outage (at most
  `RECOVERY_TIMEOUT_S`; `recovered: false` otherwise, and then the open window counts up to that moment);
* `pause_s`: the longest gap between two acknowledgements around the kill (the write pause an application sees,
  retries included).

At the end every acknowledged message must be consumed: `lost` counts those that are not. `deposed_acks` counts
acknowledgements a deposed master gave: every acknowledged message's (queue, offset) is read back from the final
master, and a different message (or none) there means the acknowledgement came from a master whose data was
truncated away; the stale-route client's acknowledgements after the election count too.

`extra_elections`: elections beyond the one per fault. The controller's master and epoch are sampled all along
(`bench.elections`); every epoch bump from a trial's recovery to the next fault (after the last trial: to the end
of the read-back) is an election nobody asked for. Per trial: `epoch_before`, `epoch_at_recovery`,
`extra_elections`, and `epochs`, the [epoch, master] pairs seen from right before the fault on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.api.validation import load_documents
from rocketmq_operator.bench import phase
from rocketmq_operator.bench.elections import EpochWatch, Sample, Window, epochs_seen, extra_elections, watching
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.core.status import build_broker_status
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import SubscriptionGroupInfo, TopicAdmin
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import ProduceReport, SteadyProducer
from rocketmq_operator.tools.stats import Answered

T = TypeVar("T")


def delivery(report: ProduceReport, consumed: int, lost: int) -> dict[str, Any]:
    """What the bench producer saw, and what a consumer read back afterwards (the JSON keys every bench shares)."""
    return {
        "sent": report.sent,
        "acknowledged": report.acknowledged,
        "consumed": consumed,
        "statuses": report.statuses,
        "failures": report.failures,
        "lost": lost,
    }


RECOVERY_TIMEOUT_S = 60.0
FAULTS = ("kill", "stop")
STALE_SEND_INTERVAL_S = 0.02
CHECK_GROUP = "rocketmq-operator-bench-check"  # the consumer group the deposed-ack check reads with


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
    fault: str = "kill"
    stale_sends: int = 0  # sends of the stale-route client to the deposed master after the election
    stale_acks: int = 0  # ... that it acknowledged (each one a write a deposed master took)
    leader_change_s: float | None = None  # controller leader SIGKILL -> another leader answers
    notes: list[str] = field(default_factory=list)
    epoch_before: int | None = None  # the master epoch right before the fault
    epoch_at_recovery: int | None = None  # ... once the producer was through the outage
    extra_elections: int = 0  # elections after the recovery, before the next fault (or the end of the run)
    epochs: list[list[int | None]] = field(default_factory=list)  # [epoch, master] seen from right before the fault


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 3)


async def run_cli(*args: str) -> str:
    phase.announce(phase.cli_phase(args))
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


async def up_controller_group(files: list[str], state_dir: Path, bench: str) -> tuple[LocalState, str]:
    """`local up --wait` of the manifests in ``state_dir``; the state and the first controller-mode BrokerGroup
    (a bench drives its SyncStateSet)."""
    up_args = ["local", "up", "--wait", "--state-dir", str(state_dir)]
    for f in files:
        up_args += ["-f", f]
    await run_cli(*up_args)
    state = read_state(StateLayout(state_dir).state_file)
    names = [g.name for g in state.groups if g.kind == "BrokerGroup" and g.controller_mode]
    if not names:
        raise SystemExit(f"error: bench {bench} needs a controller-mode BrokerGroup")
    return state, names[0]


async def _signal(state_dir: Path, replica: str, sig: str = "KILL") -> float:
    """Signal one replica through the supervisor (which restarts a killed one after its back-off); returns when
    the signal was sent, by the supervisor's clock (the same machine's wall clock)."""
    answer = await lifecycle.request(StateLayout(state_dir), "signal", replica=replica, signal=sig, noRestart=False)
    if not answer.get("ok"):
        raise RuntimeError(f"could not SIG{sig} {replica}: {answer.get('message')}")
    return float(answer.get("signalledAt") or time.time())


def edited_broker_groups(files: list[str], directory: Path, edit: Callable[[dict[str, Any]], None]) -> list[str]:
    """Copies of the manifests in ``directory`` with ``edit`` applied to the spec of every BrokerGroup."""
    out: list[str] = []
    for index, name in enumerate(files):
        docs = load_documents(name)
        for doc in docs:
            if doc.get("kind") == "BrokerGroup":
                edit(doc.setdefault("spec", {}))
        target = directory / f"{index}-{Path(name).name}"
        target.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
        out.append(str(target))
    return out


def with_detection(files: list[str], detection_s: float, directory: Path) -> list[str]:
    """Copies of the manifests with spec.failover.detectionSeconds set on every BrokerGroup."""
    return edited_broker_groups(
        files, directory, lambda spec: spec.setdefault("failover", {}).__setitem__("detectionSeconds", detection_s)
    )


class StaleRouteClient:
    """A client whose route still names the old master: it sends straight to that address (queue 0) from the
    election until it stops, as a producer with a 30 s route poll does. Any acknowledgement it gets came from a
    deposed master."""

    def __init__(self, client: RemotingClient, addr: str, broker_name: str, topic: str) -> None:
        self.client = client
        self.addr = addr
        self.broker_name = broker_name
        self.topic = topic
        self.sends = 0
        self.acks: list[tuple[int, int, str]] = []  # (queue id, queue offset, key)
        self._stop = asyncio.Event()

    async def run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            seq += 1
            key = f"stale-{self.addr}-{time.time_ns()}-{seq}"
            self.sends += 1
            with contextlib.suppress(RemotingException, OSError):
                result = await self.client.send(
                    self.addr, self.topic, b"stale", 0, keys=key, broker_name=self.broker_name, timeout=1.0
                )
                if result.stored:
                    self.acks.append((result.queue_id, result.queue_offset, key))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), STALE_SEND_INTERVAL_S)

    def stop(self) -> None:
        self._stop.set()


async def held_at_offsets(
    client: RemotingClient, master_addr: str, topic: str, wanted: dict[int, set[int]]
) -> dict[tuple[int, int], tuple[str, ...]]:
    """What the master holds at each wanted (queue, offset): the keys of the message there."""
    # Brokers render autoCreateSubscriptionGroup=false: a pull needs a group that exists on that master.
    admin = TopicAdmin(client)
    if CHECK_GROUP not in await admin.subscription_groups(master_addr, timeout=5.0):
        await admin.create_subscription_group(master_addr, SubscriptionGroupInfo(CHECK_GROUP), timeout=5.0)
    held: dict[tuple[int, int], tuple[str, ...]] = {}
    for queue_id, offsets in wanted.items():
        if not offsets:
            continue
        offset, last = min(offsets), max(offsets)
        while offset <= last:
            result = await client.pull(master_addr, topic, queue_id, offset, 32, CHECK_GROUP, timeout=5.0)
            if result.status != "FOUND" or not result.messages:
                break
            for message in result.messages:
                held[(queue_id, message.queue_offset)] = message.keys
            offset = result.next_begin_offset
    return held


async def count_deposed_acks(
    client: RemotingClient, group: str, topic: str, acks: list[tuple[str | None, int | None, int, str]], master: str
) -> int:
    """Acknowledged messages of ``group`` whose (queue, offset) on the final master holds another message, or
    none: each was acknowledged by a master whose data was truncated afterwards."""
    mine = [(q, o, k) for b, q, o, k in acks if b == group and q is not None and o >= 0]
    wanted: dict[int, set[int]] = {}
    for queue_id, offset, _ in mine:
        wanted.setdefault(queue_id, set()).add(offset)
    held = await held_at_offsets(client, master, topic, wanted)
    return sum(1 for q, o, k in mine if k not in held.get((q, o), ()))


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


async def wait_for(what: str, check: Any, timeout: float, interval: float = 0.02) -> float:
    phase.announce(f"waiting for {what}")
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


async def retrying(call: Callable[[], Awaitable[T]], timeout: float = 30.0) -> T:
    """A read of the controller that a loaded machine may time out once: tried again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return await call()
        except (RemotingException, OSError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


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


def write_pause(records: Sequence[Answered], start: float, end: float) -> float:
    """The longest gap between two acknowledgements from 5 s before `start` to `end` (the write pause)."""
    acks = sorted(r.end for r in records if r.ok and start - 5 <= r.end <= end)
    gaps = [b - a for a, b in itertools.pairwise(acks)]
    return max(gaps, default=0.0)


async def _controller_leader(state: LocalState, controllers: list[str], client: RemotingClient) -> str:
    meta = await client.find_controller_leader(controllers, timeout=1.0)
    if meta.leader_address is None:
        raise RemotingException("no controller leader")
    return meta.leader_address


def _process_of(state: LocalState, address: str) -> str:
    """The local process that serves a controller address (a controller, or a name server hosting one)."""
    port = address.rsplit(":", 1)[1]
    for r in state.replicas:
        if r.kind != "BrokerGroup" and str(port) in {str(p) for p in r.ports.values()}:
            return r.name
    raise RuntimeError(f"no local process serves controller {address}")


async def _change_leader(state_dir: Path, state: LocalState, group: Group, client: RemotingClient) -> float:
    """Move the controller leadership: SIGKILL the leader's process and keep it down until another controller
    leads (restarted at once, it usually wins again), then start it again. Returns the seconds from the kill
    to the new leader."""
    if len(group.controllers) < 3:
        raise SystemExit("error: --after-leader-change needs a ControllerGroup with 3 or more controllers")
    # Retried: the previous trial's leader may still be starting, and a loaded machine times a call out.
    leader = await retrying(lambda: _controller_leader(state, group.controllers, client), timeout=60.0)
    process = _process_of(state, leader)
    layout = StateLayout(state_dir)
    answer = await lifecycle.request(layout, "signal", replica=process, signal="KILL", noRestart=True)
    if not answer.get("ok"):
        raise RuntimeError(f"could not SIGKILL {process}: {answer.get('message')}")
    killed_at = float(answer.get("signalledAt") or time.time())

    async def moved() -> bool:
        return await _controller_leader(state, group.controllers, client) != leader

    try:
        return round(await wait_for("another controller leader", moved, 60, interval=0.05) - killed_at, 3)
    finally:
        await lifecycle.request(layout, "start", replica=process)


@dataclass
class _Timeline:
    """When each trial asked for the master, faulted it and saw writes recover: an election between a recovery
    and the next fault (or the end) is an extra one."""

    asked_at: list[float] = field(default_factory=list)
    faulted_at: list[float] = field(default_factory=list)
    recovered_at: list[float] = field(default_factory=list)


@dataclass
class _FailoverRun:
    """What every trial of one `bench failover` run shares."""

    state_dir: Path
    state: LocalState
    group: Group
    client: RemotingClient
    watch: EpochWatch
    producer: SteadyProducer
    topic: str
    fault: str
    after_leader_change: bool
    observe_interval_s: float
    by_id: dict[int, str] = field(default_factory=dict)
    stale_clients: list[StaleRouteClient] = field(default_factory=list)
    timeline: _Timeline = field(default_factory=_Timeline)


async def run_bench(
    files: list[str],
    state_dir: Path,
    trials: int,
    rate: float,
    observe_interval_s: float,
    keep: bool,
    *,
    fault: str = "kill",
    detection_s: float | None = None,
    after_leader_change: bool = False,
) -> dict[str, Any]:
    if fault not in FAULTS:
        raise SystemExit(f"error: --fault {fault!r}: not one of {', '.join(FAULTS)}")
    manifests = tempfile.TemporaryDirectory(prefix="bench-failover-")
    if detection_s is not None:
        files = with_detection(files, detection_s, Path(manifests.name))
    state, group_name = await up_controller_group(files, state_dir, "failover")
    group = Group(state, group_name)
    results: list[Trial] = []
    topic = f"bench-failover-{int(time.time())}"
    timeline = _Timeline()
    try:
        async with (
            state_client(state, connect_timeout=1.0, request_timeout=2.0) as client,
            # The master and its epoch all along the run: an election after a trial's recovery is an extra one.
            watching(EpochWatch(lambda: group.controller_master(client))) as watch,
        ):
            producer = SteadyProducer(topic, rate, namesrv=state.name_servers, size=512, timeout=3.0, retries=2)
            run = _FailoverRun(
                state_dir, state, group, client, watch, producer, topic, fault, after_leader_change,
                observe_interval_s, timeline=timeline,
            )  # fmt: skip
            await producer.start()
            try:
                for _ in range(trials):
                    await asyncio.sleep(2.0)  # steady traffic before the fault
                    results.append(await _trial(run))
            finally:
                await producer.stop()
            got, lost, deposed_acks = await read_back(client, state, group, topic, producer, run.stale_clients)
            # The read-back above is the settle time after the last trial: its elections are extra too.
            ended_at = time.time()
            await watch.sample()
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
        manifests.cleanup()
    ends = [*timeline.faulted_at[1:], ended_at] if timeline.faulted_at else []
    quiet = [Window(start, end, expected=0) for start, end in zip(timeline.recovered_at, ends, strict=True)]
    for t, extra, start, end in zip(
        results, extra_elections(watch.samples, quiet), timeline.asked_at, ends, strict=True
    ):
        t.extra_elections = extra
        t.epochs = epochs_seen(watch.samples, start, end)
    return _summary(run, results, rate, delivery(producer.report(), got.count, lost), deposed_acks)


async def _trial(run: _FailoverRun) -> Trial:
    """One fault of the master under the steady producer, and what the client saw until writes recovered."""
    group, client, timeline = run.group, run.client, run.timeline
    # The leadership moves first and the SyncStateSet is checked after it: on a loaded machine the seconds of a
    # controller election can drop a slave, and the master's kill must still find an eligible successor (else the
    # controller rightly elects no one).
    leader_change_s = await _change_leader(run.state_dir, run.state, group, client) if run.after_leader_change else None
    # Checked right before the fault: a loaded machine can drop a slave from the SyncStateSet at any time, and a
    # fault then has no eligible successor (correctly: no unclean election).
    await wait_for("a full SyncStateSet", lambda: full_sync_state_set(group, client), timeout=180, interval=0.2)
    states = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    for r in states[group.name].replicas:
        if r.broker_id is not None:
            run.by_id[r.broker_id] = r.name
    timeline.asked_at.append(time.time())
    old, old_epoch, _ = await retrying(lambda: group.controller_master(client))
    run.watch.samples.append(Sample(timeline.asked_at[-1], old, old_epoch, time.time()))
    assert old is not None
    old_addr = next(e.address for e in group.endpoints if e.name == run.by_id[old])
    killed_at = await _signal(run.state_dir, run.by_id[old], "STOP" if run.fault == "stop" else "KILL")
    timeline.faulted_at.append(killed_at)

    async def elected() -> bool:
        master, epoch, _ = await group.controller_master(client)
        return master is not None and master != old and (epoch or 0) > (old_epoch or 0)

    async def observed() -> bool:
        master = await group.status_master(client)
        return master is not None and master != old

    elect_task = asyncio.create_task(wait_for("the controller's election", elected, 60))
    observe_task = asyncio.create_task(wait_for("the status to show it", observed, 60, interval=run.observe_interval_s))
    try:
        elected_at = await elect_task
    except TimeoutError as exc:
        # Say what the controller shows, so that a failure under load can be told apart.
        now_master = await retrying(lambda: group.controller_master(client))
        raise TimeoutError(
            f"{exc}: broker {old} (epoch {old_epoch}) was faulted; the controller now names "
            f"master {now_master[0]} (epoch {now_master[1]}), SyncStateSet size {now_master[2]}"
        ) from exc
    notes: list[str] = []
    stale = await _stale_route_sends(run, old_addr, run.by_id[old], notes) if run.fault == "stop" else None
    observed_at = await observe_task
    recovered = await _recovered(run.producer, killed_at, RECOVERY_TIMEOUT_S)
    timeline.recovered_at.append(time.time())
    at_recovery = await run.watch.sample()
    await asyncio.sleep(1.0)  # a little steady traffic after the recovery
    new_master, _, _ = await retrying(lambda: group.controller_master(client))
    now = time.time()
    recs = list(run.producer.records)
    windows = [w for w in run.producer.recovery_windows() if killed_at - 5 <= w.start <= now]
    # An unclosed window (no recovery yet) counts up to now: a lower bound, never 0.
    worst = max(((w.end if w.end is not None else now) - w.start for w in windows), default=0.0)
    return Trial(
        killed_broker_id=old,
        new_master=new_master,
        election_s=round(elected_at - killed_at, 3),
        observe_lag_s=round(max(0.0, observed_at - elected_at), 3),
        rto_s=round(worst, 3),
        pause_s=round(write_pause(recs, killed_at, now), 3),
        failed_sends=sum(w.failed for w in windows),
        recovered=recovered,
        fault=run.fault,
        stale_sends=stale.sends if stale else 0,
        stale_acks=len(stale.acks) if stale else 0,
        leader_change_s=leader_change_s,
        notes=notes,
        epoch_before=old_epoch,
        epoch_at_recovery=at_recovery.epoch if at_recovery else None,
    )


async def _stale_route_sends(run: _FailoverRun, old_addr: str, old_replica: str, notes: list[str]) -> StaleRouteClient:
    """A client whose route still names the stopped master keeps sending to it while the master wakes up half a
    second later (if the platform has not fenced it); what it sent and what was acknowledged."""
    stale = StaleRouteClient(run.client, old_addr, run.group.name, run.topic)
    run.stale_clients.append(stale)
    stale_task = asyncio.create_task(stale.run())
    await asyncio.sleep(0.5)
    try:
        await _signal(run.state_dir, old_replica, "CONT")
    except RuntimeError as exc:
        notes.append(f"SIGCONT: {exc}")  # fenced (killed) before it could wake up
    await asyncio.sleep(2.0)
    stale.stop()
    await stale_task
    return stale


async def read_back(
    client: RemotingClient,
    state: LocalState,
    group: Group,
    topic: str,
    producer: SteadyProducer,
    stale_clients: list[StaleRouteClient],
) -> tuple[Any, int, int]:
    """Every acknowledged key read back from the masters: (the consume report, how many acknowledged keys are
    missing, acknowledged writes stored on a deposed master only: -1 when no master is left to ask)."""
    acked = [r for r in producer.records if r.ok]
    acknowledged = {r.key for r in acked}

    # The read-back goes through the name servers like a consumer's: after the last fault the new master
    # registers the topic again once the supervisor's topic pass re-asserts it (slow on a loaded machine).
    async def routed() -> bool:
        route = await client.get_route(topic, timeout=3.0)
        return bool(route.broker_datas)

    await wait_for(f"a route for topic {topic} after the last fault", routed, timeout=120, interval=0.5)
    got = await consume(state.name_servers, topic, idle_timeout=5.0, read_from="master", to_end=True)
    lost = len(missing_acknowledged(acknowledged, got.keys))
    final = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    master = final[group.name].named_master
    checked = [(r.broker_name, r.queue_id, r.queue_offset, r.key) for r in acked]
    checked += [(group.name, q, o, k) for c in stale_clients for q, o, k in c.acks]
    if master is None:
        return got, lost, -1  # unknown: no master at the end
    return got, lost, await count_deposed_acks(client, group.name, topic, checked, master.address)


def _summary(
    run: _FailoverRun, results: list[Trial], rate: float, delivered: dict[str, Any], deposed_acks: int
) -> dict[str, Any]:
    rto = [t.rto_s for t in results]
    lag = [t.observe_lag_s for t in results if t.observe_lag_s is not None]
    election = [t.election_s for t in results if t.election_s is not None]
    pause = [t.pause_s for t in results]
    leader = [t.leader_change_s for t in results if t.leader_change_s is not None]
    return {
        "group": run.group.name,
        "fault": run.fault,
        "after_leader_change": run.after_leader_change,
        "detection_s": run.group.spec.failover.detection_seconds,
        "trials": len(results),
        "rate_msgs_per_s": rate,
        **delivered,
        "deposed_acks": deposed_acks,
        "stale_route_sends": sum(t.stale_sends for t in results),
        "stale_route_acks": sum(t.stale_acks for t in results),
        "unrecovered_trials": sum(1 for t in results if not t.recovered),
        "extra_elections": sum(t.extra_elections for t in results),
        "rto_s": {"p50": percentile(rto, 0.5), "p99": percentile(rto, 0.99), "max": max(rto, default=None)},
        "pause_s": {"p50": percentile(pause, 0.5), "p99": percentile(pause, 0.99), "max": max(pause, default=None)},
        "election_s": {"p50": percentile(election, 0.5), "p99": percentile(election, 0.99)},
        "observe_lag_s": {"p50": percentile(lag, 0.5), "p99": percentile(lag, 0.99)},
        "leader_change_s": {"p50": percentile(leader, 0.5), "max": max(leader, default=None)} if leader else None,
        "observe_interval_s": run.observe_interval_s,
        "per_trial": [t.__dict__ for t in results],
        "mean_election_s": round(statistics.fmean(election), 3) if election else None,
    }


async def full_sync_state_set(group: Group, client: RemotingClient) -> bool:
    master, _, members = await group.controller_master(client)
    if master is None or members < group.spec.replicas:
        return False
    states = await observe_groups(client, group.controllers, {group.name: group.endpoints}, {group.name: True})
    return all(r.reachable for r in states[group.name].replicas)

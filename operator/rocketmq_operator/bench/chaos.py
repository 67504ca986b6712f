"""`rocketmq-operator chaos`: a seeded campaign of faults on a controller-mode group, under a producer.

Contract: `run_campaign` is the campaign, written once for both platforms: it runs a producer (3 s timeout, 2
retries, as the Java client's defaults) for the whole campaign, and injects the planned faults one at a time
through a `ChaosPlatform`: each held for ``hold_s`` and healed, then the group is given back its full health
(every process up, a full SyncStateSet) plus ``recover_s`` of steady traffic before the next. Afterwards every
acknowledged message is read back through the name servers, and every acknowledgement's queue offset is checked
on the final master (`deposed_acks`: writes a deposed master took). The pure half (schedule, targets, checker)
is `chaos_plan`; a platform only executes a fault and says whether the group is healthy and who is master.

`run_chaos` is the local platform's campaign: it brings the manifests up with fault injection (`local up
--fault-injection`: each process in a cgroup of its own) and executes a fault here (`LocalChaos`):

* kill: SIGKILL with no restart, started again at heal; suspend: SIGSTOP, SIGCONT at heal (a hung master is
  fenced by the supervisor meanwhile, and then there is nothing to continue);
* loss / partition: iptables drops 80% / all of what the process sends (`platforms.local.netfault`).

Every fault is healed and the cluster taken down (unless ``keep``) also on an error or Ctrl-C. With a plot,
every send is also written next to it (``*.sends.jsonl.gz``), so a fault can be traced after the cluster is gone.
The Kubernetes platform's executor is `bench.chaos_kubernetes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rocketmq_operator.bench.chaos_plan import (
    FAMILIES,
    LOSS_PROBABILITY,
    HeldFault,
    PlannedFault,
    Send,
    check_campaign,
    fault_entry,
    plan_campaign,
    resolve_targets,
    timeline_svg,
)
from rocketmq_operator.bench.failover import Group, count_deposed_acks, full_sync_state_set, retrying, run_cli, wait_for
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.netfault import NetFaults
from rocketmq_operator.platforms.local.state import LocalState, read_state
from rocketmq_operator.remoting import RemotingClient
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.produce import SendRecord, SteadyProducer

HEALTH_TIMEOUT_S = 240.0


@dataclasses.dataclass(frozen=True)
class Campaign:
    """What a campaign is asked for, on any platform: how many faults, the schedule's seed, the families, how long
    each fault is held, the steady traffic after the group is healthy again, the producer's rate, and where its
    timeline goes (None: nowhere)."""

    faults: int
    seed: int
    families: tuple[str, ...]
    hold_s: float = 5.0
    recover_s: float = 5.0
    rate: float = 200.0
    plot: Path | None = None
    spare_operator: bool = False
    """Never fault the operator (no `master+operator` target), e.g. when other work shares it."""
    journal: Path | None = None
    """A JSON-lines file written as the campaign goes (`CampaignJournal`): a campaign stopped half-way, or longer
    than anyone waits, leaves its faults on record."""

    @property
    def stop_file(self) -> Path | None:
        """The journal's name with ``.stop`` for ``.jsonl``: once that file exists, no further fault is injected and
        the campaign ends as if it had been planned that long (the group given back its health, every acknowledged
        key read back and checked); the record says how many of the planned faults ran (`stopped_early`)."""
        return self.journal.with_suffix(".stop") if self.journal is not None else None


class ChaosPlatform(Protocol):
    """What a campaign needs of a platform: the group's processes by name, its name servers, a fault executor, its
    health and its master. The campaign itself (`run_campaign`) is the same on every platform."""

    group: str
    brokers: list[str]
    controllers: list[str]
    name_servers: list[str]
    broker_only_families: frozenset[str]
    """Families injected on brokers only (`chaos_plan.BROKER_ONLY_FAMILIES` where controllers host name servers)."""
    faults_operator: bool
    """Whether a fault can hit the operator too (`chaos_plan.Target.MASTER_AND_OPERATOR`)."""

    async def inject(self, family: str, process: str) -> str | None:
        """Inject one fault on one process; a note when it could not be done."""
        ...

    async def heal(self, family: str, process: str) -> str | None: ...

    async def heal_all(self) -> None:
        """Heal every fault still open (on an error or Ctrl-C)."""
        ...

    async def healthy(self) -> bool:
        """Every process up and the SyncStateSet full."""
        ...

    async def master(self) -> tuple[str | None, str | None]:
        """The master's process name and its remoting address, as far as the platform knows now."""
        ...


class CampaignJournal:
    """The campaign's record as it goes, one JSON object a line, each flushed when written: first
    ``{"campaign": ...}`` (what was asked for), then ``{"fault": ...}`` for each fault once its window has closed
    (the same line as the record's ``per_fault``, `chaos_plan.fault_entry`, with the sends and acknowledgements
    counted so far), and last ``{"record": ...}`` (the whole record without ``per_fault``) once everything was
    read back. A journal without its last line is a campaign that did not finish: its faults are still facts, its
    loss count is not known."""

    def __init__(self, path: Path, campaign: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._out = path.open("w", encoding="utf-8")
        self._window_from = 0  # the producer's records are in answer order: the first the open window can hold
        self._acknowledged = 0
        self._write({"campaign": campaign})

    def _write(self, line: dict[str, Any]) -> None:
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._out.flush()

    def fault(self, fault: HeldFault, records: Sequence[SendRecord], end: float) -> None:
        """The line of ``fault``, whose window closed at ``end`` (the next fault's start, or the campaign's end);
        ``records``: every answer of the producer so far, in answer order (only the new ones are read)."""
        upto = self._window_from
        while upto < len(records) and records[upto].end < end:
            upto += 1
        window = _sends(records[self._window_from : upto])
        self._acknowledged += sum(1 for s in window if s.ok)
        self._window_from = upto
        line = {**fault_entry(fault, window, end), "sent": upto, "acknowledged": self._acknowledged}
        self._write({"fault": line})

    def record(self, doc: dict[str, Any]) -> None:
        self._write({"record": {k: v for k, v in doc.items() if k != "per_fault"}})

    def close(self) -> None:
        self._out.close()


def _sends(records: Sequence[SendRecord]) -> list[Send]:
    return [
        Send(r.key, r.start, r.end, r.ok, r.status, f"{r.broker_name}/{r.queue_id}@{r.queue_offset}") for r in records
    ]


def controller_processes(state: LocalState, group: Group) -> list[str]:
    """The processes hosting the group's controllers (standalone controllers, or name servers hosting one)."""
    info = state.group(group.name)
    owner = info.controller_group if info is not None else None
    return [
        r.name for r in state.replicas if r.kind == "ControllerGroup" and r.group == owner and "controller" in r.ports
    ]


class LocalChaos:
    """The local platform's executor: faults on the supervisor's processes, health from its state and the
    controller."""

    def __init__(
        self, state_dir: Path, state: LocalState, group: Group, net: NetFaults, client: RemotingClient
    ) -> None:
        self.layout = StateLayout(state_dir)
        self.net = net
        self.client = client
        self.local_group = group
        self.group = group.name
        self.brokers = [e.name for e in group.endpoints]
        self.controllers = controller_processes(state, group)
        self.name_servers = state.name_servers
        # No pods here, and the supervisor that owns the processes is the operator's executor: not a target.
        self.broker_only_families: frozenset[str] = frozenset()
        self.faults_operator = False
        self.open: list[tuple[str, str]] = []  # (family, process) not yet healed

    async def _request(self, op: str, **body: Any) -> dict[str, Any]:
        return await lifecycle.request(self.layout, op, **body)

    async def inject(self, family: str, process: str) -> str | None:
        if family == "kill":
            answer = await self._request("signal", replica=process, signal="KILL", noRestart=True)
        elif family == "suspend":
            answer = await self._request("signal", replica=process, signal="STOP", noRestart=False)
        elif family == "loss":
            await self.net.drop(process, LOSS_PROBABILITY)
            answer = {"ok": True}
        else:
            await self.net.drop(process)
            answer = {"ok": True}
        self.open.append((family, process))
        return None if answer.get("ok") else f"{family} {process}: {answer.get('message')}"

    async def heal(self, family: str, process: str) -> str | None:
        with contextlib.suppress(ValueError):
            self.open.remove((family, process))
        if family == "kill":
            answer = await self._request("start", replica=process)
        elif family == "suspend":
            answer = await self._request("signal", replica=process, signal="CONT", noRestart=False)
        else:
            await self.net.heal(process, LOSS_PROBABILITY if family == "loss" else 1.0)
            answer = {"ok": True}
        # A suspended master the supervisor fenced (SIGKILL, restart) has nothing left to continue.
        return None if answer.get("ok") else f"heal {family} {process}: {answer.get('message')}"

    async def heal_all(self) -> None:
        for family, process in list(self.open):
            with contextlib.suppress(Exception):
                await self.heal(family, process)

    async def healthy(self) -> bool:
        state = read_state(self.layout.state_file)
        if any(r.pid is None or r.suspended for r in state.replicas):
            return False
        return await full_sync_state_set(self.local_group, self.client)

    async def master(self) -> tuple[str | None, str | None]:
        group = self.local_group
        states = await observe_groups(self.client, group.controllers, {group.name: group.endpoints}, {group.name: True})
        named = states[group.name].named_master
        return (named.name, named.address) if named is not None else (None, None)


async def _settle(
    platform: ChaosPlatform, client: RemotingClient, recover_s: float, producer: SteadyProducer | None = None
) -> str | None:
    """Wait until every process is up and the SyncStateSet is full, every name server serves routes again (a
    restarted one answers "not ready" for its needWaitForService window: a master fault inside it would be two
    faults at once, the master's and the routes'), and the producer has a send acknowledged that it started
    after that (the client's view: an operator's status read just after a heal can still be the one from before
    the fault, and a client can still be failing on a stale route), then ``recover_s`` of steady traffic. A group
    that does not get there in HEALTH_TIMEOUT_S is a finding, noted on the fault, and the campaign goes on."""
    try:
        await wait_for("the group's health", platform.healthy, HEALTH_TIMEOUT_S, 0.5)
        await wait_for(
            "every name server serving routes",
            lambda: client.name_servers_serve_routes(timeout=1.0),
            HEALTH_TIMEOUT_S,
            0.5,
        )
        if producer is not None:
            since = time.time()
            await wait_for(
                "a send acknowledged after the group's health",
                lambda: _acknowledged_since(producer, since),
                HEALTH_TIMEOUT_S,
                0.2,
            )
    except TimeoutError as exc:
        return str(exc)
    await asyncio.sleep(recover_s)
    return None


async def _acknowledged_since(producer: SteadyProducer, since: float) -> bool:
    """A send started at ``since`` or later was acknowledged; only the answers after ``since`` are read."""
    for r in reversed(producer.answered):
        if r.end < since:
            return False
        if r.ok and r.start >= since:
            return True
    return False


async def run_chaos(files: list[str], state_dir: Path, campaign: Campaign, *, keep: bool = False) -> dict[str, Any]:
    """The campaign on the local platform: the manifests brought up with fault injection, taken down after."""
    up_args = ["local", "up", "--wait", "--timeout", "600", "--fault-injection", "--state-dir", str(state_dir)]
    for f in files:
        up_args += ["-f", f]
    try:
        await run_cli(*up_args)  # inside: a group that never got ready is taken down too
        state = read_state(StateLayout(state_dir).state_file)
        names = [g.name for g in state.groups if g.kind == "BrokerGroup" and g.controller_mode]
        if not names:
            raise SystemExit("error: chaos needs a controller-mode BrokerGroup (spec.controllerRef)")
        group = Group(state, names[0])
        async with (
            NetFaults(state_dir) as net,
            state_client(state, connect_timeout=1.0, request_timeout=2.0) as client,
        ):
            platform = LocalChaos(state_dir, state, group, net, client)
            return await run_campaign(platform, client, campaign)
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))


async def run_campaign(
    platform: ChaosPlatform, client: RemotingClient, campaign: Campaign, offered: tuple[str, ...] = FAMILIES
) -> dict[str, Any]:
    """The campaign on a running group (see the module doc); ``client`` reaches its name servers and brokers."""
    c = campaign
    plan = plan_campaign(
        c.faults,
        c.seed,
        c.families,
        len(platform.controllers),
        offered,
        broker_only=platform.broker_only_families,
        operator=platform.faults_operator and not c.spare_operator,
    )
    topic = f"chaos-{c.seed}-{int(time.time())}"
    asked = {
        "seed": c.seed,
        "faults": c.faults,
        "families": list(c.families),
        "hold_s": c.hold_s,
        "recover_s": c.recover_s,
        "rate_msgs_per_s": c.rate,
        "group": platform.group,
        "brokers": len(platform.brokers),
        "controllers": len(platform.controllers),
    }
    journal = CampaignJournal(c.journal, {**asked, "topic": topic, "began": time.time()}) if c.journal else None
    held: list[HeldFault] = []
    stopped_early: dict[str, Any] | None = None
    stop_file = c.stop_file
    if stop_file is not None:
        stop_file.unlink(missing_ok=True)  # a stop asked of an earlier campaign is not one asked of this one

    def close_window(end: float) -> None:
        if journal is not None and held:
            journal.fault(held[-1], producer.answered, end)

    producer = SteadyProducer(topic, c.rate, namesrv=platform.name_servers, size=512, timeout=3.0, retries=2)
    began = time.time()
    await producer.start()
    try:
        for fault in plan:
            if stop_file is not None and stop_file.exists():
                stopped_early = {"planned": len(plan), "ran": len(held), "asked_by": str(stop_file)}
                break
            done = await _one_fault(fault, platform, client, c.hold_s, c.recover_s, producer)
            close_window(done.start)
            held.append(done)
        if (note := await _settle(platform, client, c.recover_s, producer)) and held:
            held[-1] = dataclasses.replace(held[-1], notes=(*held[-1].notes, note))
    finally:
        await platform.heal_all()
        await producer.stop()
        close_window(time.time())
    ended = time.time()
    sends = _sends(producer.records)
    read, duplicates, first_missing, deposed = await _read_all(client, platform, topic, producer)
    doc = check_campaign(sends, held, read, ended, deposed, duplicates)
    doc["first_read_missing"] = first_missing  # found by the second read, or lost
    doc = {**{k: v for k, v in asked.items() if k != "faults"}, **doc}
    if stopped_early is not None:
        doc["stopped_early"] = stopped_early
    if c.plot is not None:
        doc.update(_write_plot(c.plot, sends, held, began, ended))
    if journal is not None:
        journal.record(doc)
        journal.close()
        doc["journal"] = str(journal.path)
    return doc


async def _read_all(
    client: RemotingClient, platform: ChaosPlatform, topic: str, producer: SteadyProducer
) -> tuple[set[str], int, int, int]:
    """(the keys read back, duplicates, acknowledged keys the first read missed, acknowledged writes on a deposed
    master only: -1 when no master is left to ask)."""

    async def routed() -> bool:
        route = await client.get_route(topic, timeout=3.0)
        return bool(route.broker_datas)

    await wait_for(f"a route for topic {topic}", routed, timeout=120, interval=0.5)
    got = await consume(platform.name_servers, topic, idle_timeout=5.0, read_from="master", to_end=True)
    read, duplicates = set(got.keys), got.duplicates
    missing = {r.key for r in producer.records if r.ok} - read
    if missing:
        # A consumer that stopped early on a loaded machine is not a loss: a message counts as lost only if a
        # second, patient read does not find it either.
        again = await consume(platform.name_servers, topic, idle_timeout=20.0, read_from="master")
        read |= again.keys
    _, master_address = await retrying(platform.master)
    acked = [(r.broker_name, r.queue_id, r.queue_offset, r.key) for r in producer.records if r.ok]
    deposed = await count_deposed_acks(client, platform.group, topic, acked, master_address) if master_address else -1
    return read, duplicates, len(missing), deposed


def _write_plot(plot: Path, sends: list[Send], held: list[HeldFault], began: float, ended: float) -> dict[str, str]:
    """The campaign's timeline as SVG, and every send beside it so that a fault can be traced (and the checker
    re-run) after the cluster is gone."""
    plot.write_text(timeline_svg(sends, held, began, ended), encoding="utf-8")
    sends_file = plot.with_suffix(".sends.jsonl.gz")
    with gzip.open(sends_file, "wt", encoding="utf-8") as out:
        for send in sends:
            out.write(json.dumps(dataclasses.asdict(send)) + "\n")
    return {"plot": str(plot), "sends": str(sends_file)}


async def _one_fault(
    fault: PlannedFault,
    platform: ChaosPlatform,
    client: RemotingClient,
    hold_s: float,
    recover_s: float,
    producer: SteadyProducer,
) -> HeldFault:
    unsettled = await _settle(platform, client, recover_s, producer)
    master, _ = await retrying(platform.master)
    processes = resolve_targets(fault, platform.brokers, platform.controllers, master)
    notes: list[str] = [f"before it: {unsettled}"] if unsettled else []
    start = time.time()
    for process in processes:
        if note := await platform.inject(fault.family, process):
            notes.append(note)
    await asyncio.sleep(hold_s)
    healed = time.time()
    for process in processes:
        if note := await platform.heal(fault.family, process):
            notes.append(note)
    return HeldFault(
        fault.index, fault.family, fault.target.value, processes, start, healed, tuple(notes), master=master
    )

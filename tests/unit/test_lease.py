"""The lease agent's decision (`core.lease`), table-tested, and one agent round against a fake broker/controller."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.control.fence import FENCE_DOOR_KEY, is_fenced
from rocketmq_operator.control.lease_agent import LeaseAgent
from rocketmq_operator.core.lease import (
    ControllerView,
    LeaseBounds,
    LeaseFacts,
    LeaseVerdict,
    PeerFacts,
    decide_lease,
    may_give_back,
    may_publish,
    published_confirmation,
)
from rocketmq_operator.remoting import RemotingConnectionError, RemotingTimeout
from rocketmq_operator.remoting.broker import HaStatus
from rocketmq_operator.remoting.controller import ControllerMetadata, ReplicaIdentity, SyncStateInfo

BOUNDS = LeaseBounds.for_heartbeat_timeout(10_000)  # lease 4 s, failsafe until 6 s
NOW, WALL = 100.0, 1_800_000_000.0
LAST_WALL = WALL - 4.5  # the master's last confirmation, on the wall clock (the lease lapsed, the failsafe holds)
SLAVE_RECENT = PeerFacts(is_master=False, confirmed_wall_s=WALL - 2.0)  # after it: the controllers are alive
SLAVE_OLD = PeerFacts(is_master=False, confirmed_wall_s=LAST_WALL + 0.9)  # within two rounds and the skew of it
BASE = LeaseFacts(
    now_s=NOW,
    wall_s=WALL,
    is_master=True,
    broker_id=1,
    controller=None,
    confirmed_at_s=NOW - 1.0,
    confirmed_wall_s=LAST_WALL,
    peers={},
)
CONFIRMS = ControllerView(master_broker_id=1, master_epoch=3, sync_state_set=frozenset({1, 2, 3}))
NAMES_OTHER = ControllerView(master_broker_id=2, master_epoch=4, sync_state_set=frozenset({2, 3}))
NAMES_NONE = ControllerView(master_broker_id=None, master_epoch=4, sync_state_set=frozenset())
LAPSED = NOW - 4.5

CASES: list[tuple[str, LeaseFacts, LeaseVerdict, str]] = [
    ("broker silent", replace(BASE, is_master=None), LeaseVerdict.SILENT, "does not answer"),
    ("slave", replace(BASE, is_master=False, controller=NAMES_OTHER), LeaseVerdict.SLAVE, "slave"),
    ("confirmed", replace(BASE, controller=CONFIRMS), LeaseVerdict.CONFIRMED, "epoch 3"),
    ("confirmed after a lapse", replace(BASE, controller=CONFIRMS, confirmed_at_s=LAPSED), LeaseVerdict.CONFIRMED, ""),
    ("deposed", replace(BASE, controller=NAMES_OTHER), LeaseVerdict.FENCE, "names broker 2 master (epoch 4)"),
    ("no master named", replace(BASE, controller=NAMES_NONE), LeaseVerdict.FENCE, "names no master"),
    ("unknown to the controller", replace(BASE, controller=CONFIRMS, broker_id=None), LeaseVerdict.FENCE, "deposed"),
    ("lease running", BASE, LeaseVerdict.RUNNING, "3.0 s left"),
    ("lease lapsed, no peers known", replace(BASE, confirmed_at_s=LAPSED), LeaseVerdict.FAILSAFE, "keeps serving"),
    (
        "lease lapsed, peers out of reach of the controllers too",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: SLAVE_OLD, 3: SLAVE_OLD}),
        LeaseVerdict.FAILSAFE,
        "no one can be elected",
    ),
    (
        "the failsafe ends 4 s before the heartbeat timeout",
        replace(BASE, confirmed_at_s=NOW - 6.0, peers={2: SLAVE_OLD, 3: SLAVE_OLD}),
        LeaseVerdict.FENCE,
        "the failsafe ends",
    ),
    (
        "lease lapsed, a peer reached a controller recently",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: SLAVE_OLD, 3: SLAVE_RECENT}),
        LeaseVerdict.FENCE,
        "peer broker 3 reached a controller leader 2.0 s ago, after this broker last did",
    ),
    (
        "lease lapsed, a peer answers as master",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: PeerFacts(True, LAST_WALL), 3: SLAVE_OLD}),
        LeaseVerdict.FENCE,
        "peer broker 2 answers as master",
    ),
    (
        "lease lapsed, a peer does not answer",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: PeerFacts(None, None), 3: SLAVE_OLD}),
        LeaseVerdict.FENCE,
        "peer broker 2 does not answer",
    ),
    (
        "lease lapsed, a peer publishes nothing",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: PeerFacts(False, None)}),
        LeaseVerdict.FENCE,
        "publishes no confirmation",
    ),
    (
        "never confirmed, no controller",
        replace(BASE, confirmed_at_s=None, peers={2: SLAVE_OLD}),
        LeaseVerdict.FENCE,
        "never had a lease",
    ),
    (
        "a peer's publication just past two rounds and the skew of the master's last confirmation",
        replace(BASE, confirmed_at_s=LAPSED, peers={2: PeerFacts(False, LAST_WALL + 1.3)}),
        LeaseVerdict.FENCE,
        "reached a controller leader 3.2 s ago",
    ),
]


@pytest.mark.parametrize(("facts", "verdict", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decide_lease(facts: LeaseFacts, verdict: LeaseVerdict, reason: str) -> None:
    decision = decide_lease(facts, BOUNDS)
    assert decision.verdict is verdict, decision.reason
    assert reason in decision.reason
    assert decision.fence is (verdict is LeaseVerdict.FENCE)


def test_a_lease_too_short_to_tell_an_outage_from_a_partition_has_no_failsafe() -> None:
    short = LeaseBounds.for_heartbeat_timeout(5000)  # 2.5 s: not above 1 s + 3 rounds + twice the skew
    assert not short.failsafe and BOUNDS.failsafe
    decision = decide_lease(replace(BASE, confirmed_at_s=NOW - 3.0, peers={2: SLAVE_OLD}), short)
    assert decision.fence and "too short to tell" in decision.reason


def test_the_lease_and_the_failsafe_end_before_the_controller_can_elect() -> None:
    assert LeaseBounds.for_heartbeat_timeout(None).lease_s == 4.0  # RocketMQ's default 10 s: T/2 - 1
    assert LeaseBounds.for_heartbeat_timeout(6000).lease_s == 2.0
    assert LeaseBounds.for_heartbeat_timeout(100).lease_s == 1.0  # two rounds at least
    assert BOUNDS.failsafe and BOUNDS.failsafe_until_s == 6.0
    # The controller elects no sooner than T after the master's last heartbeat, which reached it at most the broker's
    # 1 s heartbeat interval before the agent's last confirmation. The fence comes at the first decision past the
    # lease (or the failsafe's end): at most a round's wait and one call (the broker's own calls are on loopback).
    for timeout_ms in (4000, 6000, 10_000, 30_000):
        bounds = LeaseBounds.for_heartbeat_timeout(timeout_ms)
        last = max(bounds.lease_s, bounds.failsafe_until_s if bounds.failsafe else 0.0)
        assert last + bounds.period_s + bounds.call_timeout_s < timeout_ms / 1000 - 1.0, timeout_ms


def test_published_confirmations_are_past_times_and_a_fence_is_never_overwritten() -> None:
    assert published_confirmation({FENCE_DOOR_KEY: str(int((WALL - 3) * 1000))}, FENCE_DOOR_KEY, WALL) == WALL - 3
    assert published_confirmation({FENCE_DOOR_KEY: "0"}, FENCE_DOOR_KEY, WALL) is None
    assert published_confirmation({}, FENCE_DOOR_KEY, WALL) is None
    assert published_confirmation({FENCE_DOOR_KEY: str(int((WALL + 60) * 1000))}, FENCE_DOOR_KEY, WALL) is None
    assert published_confirmation({FENCE_DOOR_KEY: str(int((WALL + 5) * 1000))}, FENCE_DOOR_KEY, WALL) is None
    # published after the reader's round began, read after a slow call: still a publication
    assert published_confirmation({FENCE_DOOR_KEY: str(int((WALL + 1) * 1000))}, FENCE_DOOR_KEY, WALL) == WALL + 1
    assert may_publish({FENCE_DOOR_KEY: "0"}, FENCE_DOOR_KEY, WALL)
    assert may_publish({FENCE_DOOR_KEY: str(int((WALL - 1) * 1000))}, FENCE_DOOR_KEY, WALL)
    assert not may_publish({FENCE_DOOR_KEY: str(int((WALL + 60) * 1000))}, FENCE_DOOR_KEY, WALL)


# --- one agent round against a fake broker and controller -------------------------------------------------------

LOCAL = "127.0.0.1:10911"
OWN = "10.0.0.1:10911"
PEERS = {2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}


@dataclass
class FakeCluster:
    """Brokers (address -> live config and role) and a controller leader that may be out of reach."""

    configs: dict[str, dict[str, str]]
    masters: set[str]
    master_id: int | None = 1
    cut_off: set[str] = field(default_factory=set)  # agents (by their broker's address) that reach no controller
    down: set[str] = field(default_factory=set)
    updates: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    # brokers that apply a write of brokerPermission, then register with name servers they cannot reach and answer
    # only after the caller's timeout (AdminBrokerProcessor.updateBrokerConfig)
    registering_late: set[str] = field(default_factory=set)

    def _check(self, addr: str) -> None:
        if addr in self.down:
            raise RemotingConnectionError(f"{addr}: refused")

    async def get_broker_config(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        self._check(addr)
        return dict(self.configs[addr])

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        self._check(addr)
        return HaStatus(master=addr in self.masters, master_commit_log_max_offset=0, in_sync_slave_nums=0)

    async def update_broker_config(self, addr: str, values: dict[str, str], *, timeout: float | None = None) -> None:
        self._check(addr)
        self.configs[addr].update(values)
        self.updates.append((addr, values))
        if addr in self.registering_late and "brokerPermission" in values:
            raise RemotingTimeout(f"{addr}: no answer within {timeout} s")


@dataclass
class FakeClient:
    """One agent's view of the fake cluster: its controller calls fail while it is cut off."""

    cluster: FakeCluster
    agent: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cluster, name)

    def _reach(self) -> None:
        if self.agent in self.cluster.cut_off:
            raise RemotingConnectionError("controller: timed out")

    async def find_controller_leader(self, addrs: Any, *, timeout: float | None = None) -> ControllerMetadata:
        self._reach()
        return ControllerMetadata("c:9878", "g", "n0", "c:9878", True, {})

    async def get_sync_state_data(self, leader: str, names: Any, *, timeout: float | None = None) -> Any:
        self._reach()
        cluster = self.cluster
        members = tuple(ReplicaIdentity("broker-a", i, a, True) for i, a in {1: OWN, **PEERS}.items())
        master = None if cluster.master_id is None else {1: OWN, **PEERS}[cluster.master_id]
        return {"broker-a": SyncStateInfo("broker-a", cluster.master_id, master, 3, 5, members, ())}


def _config(ip: str) -> dict[str, str]:
    return {
        "brokerName": "broker-a",
        "controllerAddr": "c:9878",
        "brokerIP1": ip,
        "listenPort": "10911",
        "controllerHeartBeatTimeoutMills": "10000",
        FENCE_DOOR_KEY: "0",
    }


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> float:
        return WALL + self.t


def _agent(cluster: FakeCluster, clock: Clock, address: str = LOCAL) -> LeaseAgent:
    client = FakeClient(cluster, address)
    agent = LeaseAgent(client, address, monotonic=clock.monotonic, wall=clock.wall)  # type: ignore[arg-type]

    async def timed_out(config: dict[str, str]) -> bool:
        return False  # the fake's controllers time out (paused or cut off), they are not gone

    agent._controllers_gone = timed_out  # type: ignore[method-assign]
    return agent


def _cluster() -> FakeCluster:
    return FakeCluster(
        configs={LOCAL: _config("10.0.0.1"), **{a: _config(a.split(":")[0]) for a in PEERS.values()}}, masters={LOCAL}
    )


def test_an_agent_cut_off_from_controllers_others_reach_fences_its_master_when_the_lease_lapses() -> None:
    cluster, clock = _cluster(), Clock()
    master = _agent(cluster, clock)
    slaves = [_agent(cluster, clock, a) for a in PEERS.values()]

    async def scenario() -> list[LeaseVerdict]:
        seen = [(await master.round()).verdict]
        cluster.cut_off.add(LOCAL)  # only the master is cut off; the slaves go on reaching the controller
        for _ in range(11):  # 5.5 s of rounds
            clock.t += 0.5
            for slave in slaves:
                assert (await slave.round()).verdict is LeaseVerdict.SLAVE
            seen.append((await master.round()).verdict)
        return seen

    seen = asyncio.run(scenario())
    assert seen == [LeaseVerdict.CONFIRMED, *[LeaseVerdict.RUNNING] * 7, *[LeaseVerdict.FENCE] * 4]
    assert is_fenced(cluster.configs[LOCAL])
    door = int(cluster.configs[LOCAL][FENCE_DOOR_KEY]) / 1000
    assert door == pytest.approx(clock.wall() - 1.5 + 10.0, abs=0.01)  # set on the lapse, not shortened after
    assert cluster.configs[LOCAL].get("haHousekeepingInterval") == "1"  # its slaves dropped with the fence
    assert all(published_confirmation(cluster.configs[a], FENCE_DOOR_KEY, clock.wall()) for a in PEERS.values())


def test_a_controller_outage_for_the_whole_group_keeps_the_master_serving_until_the_failsafe_ends() -> None:
    cluster, clock = _cluster(), Clock()
    master = _agent(cluster, clock)
    slaves = [_agent(cluster, clock, a) for a in PEERS.values()]

    async def scenario() -> list[LeaseVerdict]:
        for slave in slaves:
            await slave.round()
        seen = [(await master.round()).verdict]
        cluster.cut_off.update({LOCAL, *PEERS.values()})  # the controllers are out for everyone
        for _ in range(12):
            clock.t += 0.5
            for slave in slaves:
                await slave.round()
            seen.append((await master.round()).verdict)
        cluster.cut_off.clear()
        cluster.master_id = 2  # the controllers are back and elected broker 2; this one still answers master
        clock.t += 0.5
        seen.append((await master.round()).verdict)
        return seen

    seen = asyncio.run(scenario())
    assert seen == [
        LeaseVerdict.CONFIRMED,
        *[LeaseVerdict.RUNNING] * 7,
        *[LeaseVerdict.FAILSAFE] * 4,  # 4 s to 6 s without a confirmation: nobody reaches a controller
        LeaseVerdict.FENCE,  # the failsafe ends 4 s before the heartbeat timeout
        LeaseVerdict.FENCE,  # deposed: the controllers are back and elected broker 2
    ]
    assert is_fenced(cluster.configs[LOCAL])


def test_the_agent_never_shortens_a_longer_fence_and_a_slave_never_publishes_over_a_fence() -> None:
    cluster, clock = _cluster(), Clock()
    cluster.master_id = 2
    forever = {
        "brokerPermission": "4",
        "minInSyncReplicas": "1024",
        FENCE_DOOR_KEY: "4102444800000",
    }
    cluster.configs[LOCAL].update(forever)
    cluster.configs[PEERS[3]][FENCE_DOOR_KEY] = "4102444800000"
    asyncio.run(_agent(cluster, clock).round())
    asyncio.run(_agent(cluster, clock, PEERS[3]).round())
    # deposed under a user's fence: only its slaves are dropped; the door and the rest are the user's
    assert cluster.updates == [(LOCAL, {"haHousekeepingInterval": "1"})]


def test_an_agent_whose_broker_is_down_does_nothing() -> None:
    cluster, clock = _cluster(), Clock()
    cluster.down.add(LOCAL)
    assert asyncio.run(_agent(cluster, clock).round()).verdict is LeaseVerdict.SILENT
    assert cluster.updates == []


def test_the_agent_extends_its_fence_by_the_door_alone_so_the_deposed_master_never_registers_again() -> None:
    cluster, clock = _cluster(), Clock()
    cluster.master_id = 2  # deposed: fenced on the first round
    agent = _agent(cluster, clock)
    asyncio.run(agent.round())
    first = cluster.updates[-1][1]
    assert first["brokerPermission"] == "4" and is_fenced(cluster.configs[LOCAL])
    assert first["haHousekeepingInterval"] == "1"  # its slaves dropped, so the operator can point them elsewhere
    clock.t += 6.0  # 4 s of the 10 s door left: extended
    asyncio.run(agent.round())
    assert cluster.updates[-1][1] == {FENCE_DOOR_KEY: str(int(clock.wall() * 1000) + 10_000)}
    assert len(cluster.updates) == 2


@pytest.mark.parametrize(
    ("own", "fenced_at", "confirmed", "gives_back"),
    [
        (True, 3, 3, True),  # its lease lapsed, confirmed again at the epoch it held
        (True, 3, 4, False),  # an election happened meanwhile: the policy's to judge
        (True, None, 3, False),  # a deposed broker's fence (no epoch recorded), or one from before a restart
        (False, 3, 3, False),  # not its fence (a user's, a switchover's)
    ],
)
def test_the_agent_gives_back_only_its_own_lapsed_lease_fence_at_the_same_epoch(
    own: bool, fenced_at: int | None, confirmed: int, gives_back: bool
) -> None:
    assert may_give_back(own_lease_fence=own, fenced_at_epoch=fenced_at, confirmed_epoch=confirmed) is gives_back


async def _controllers_out_of_reach_then_back(
    cluster: FakeCluster, clock: Clock, master: LeaseAgent, slave: LeaseAgent
) -> list[LeaseVerdict]:
    """The master's verdicts: confirmed, then every agent cut off from the controllers for 5.5 s (a leader election
    outlasting the lease), then one round with the controllers back."""
    seen = [(await master.round()).verdict]
    cluster.cut_off.update({LOCAL, *PEERS.values()})
    for _ in range(11):
        clock.t += 0.5
        await slave.round()
        seen.append((await master.round()).verdict)
    cluster.cut_off.clear()
    clock.t += 0.5
    seen.append((await master.round()).verdict)
    return seen


def test_a_lease_fence_is_given_back_with_the_values_it_replaced_once_the_controller_answers_again() -> None:
    cluster, clock = _cluster(), Clock()
    cluster.configs[LOCAL].update(minInSyncReplicas="2", brokerPermission="6", haSendHeartbeatInterval="0")
    master = _agent(cluster, clock)
    slaves = [_agent(cluster, clock, a) for a in PEERS.values()]
    cluster.down.add(PEERS[3])  # a slave that does not answer may be elected meanwhile: no failsafe

    seen = asyncio.run(_controllers_out_of_reach_then_back(cluster, clock, master, slaves[0]))
    assert seen[-2:] == [LeaseVerdict.FENCE, LeaseVerdict.CONFIRMED], seen
    config = cluster.configs[LOCAL]
    assert not is_fenced(config)
    assert (config["brokerPermission"], config["minInSyncReplicas"], config["haSendHeartbeatInterval"]) == (
        "6",
        "2",
        "0",
    )
    assert (config[FENCE_DOOR_KEY], config["haHousekeepingInterval"]) == ("0", "20000")


def test_a_deposed_brokers_fence_is_never_given_back_by_the_agent() -> None:
    cluster, clock = _cluster(), Clock()
    cluster.master_id = 2
    agent = _agent(cluster, clock)
    asyncio.run(agent.round())
    cluster.master_id = 1  # named again later (another election): the policy decides, not the agent
    clock.t += 0.5
    asyncio.run(agent.round())
    assert is_fenced(cluster.configs[LOCAL])


@pytest.mark.parametrize(
    ("facts", "drop"),
    [
        (replace(BASE, controller=NAMES_OTHER), True),  # deposed: another master exists
        (replace(BASE, confirmed_at_s=LAPSED, peers={2: SLAVE_RECENT}), True),  # cut off: another will be elected
        (replace(BASE, confirmed_at_s=NOW - 6.0, peers={2: SLAVE_OLD}), False),  # the failsafe's end
        (replace(BASE, confirmed_at_s=NOW - 10.0, peers={2: SLAVE_RECENT}), True),  # the controller may have elected
    ],
    ids=["deposed", "cut-off", "failsafe-ended", "past-the-heartbeat-timeout"],
)
def test_the_slaves_are_dropped_only_once_another_master_may_exist(facts: LeaseFacts, drop: bool) -> None:
    decision = decide_lease(facts, BOUNDS)
    assert decision.fence and decision.drop_slaves is drop, decision


def test_the_failsafe_holds_past_its_end_while_every_controller_is_gone() -> None:
    """A controller that restarts comes back with an empty heartbeat table: nothing stale to elect on."""
    outage = replace(BASE, confirmed_at_s=NOW - 7.0, peers={2: SLAVE_OLD, 3: SLAVE_OLD})
    assert decide_lease(outage, BOUNDS).fence  # timed out: maybe paused, maybe back with a stale table
    assert decide_lease(replace(outage, controllers_gone=True), BOUNDS).verdict is LeaseVerdict.FAILSAFE
    # gone controllers do not make a cut-off master serve: a peer that reached a leader still fences it
    cut_off = replace(outage, controllers_gone=True, peers={2: SLAVE_RECENT})
    assert decide_lease(cut_off, BOUNDS).fence


def test_controllers_that_refuse_connections_are_gone_and_ones_that_time_out_are_not() -> None:
    async def scenario() -> tuple[bool, bool]:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        listening = server.sockets[0].getsockname()[1]
        probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        closed = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        agent = LeaseAgent(FakeClient(_cluster(), LOCAL), LOCAL)  # type: ignore[arg-type]
        refused = await agent._controllers_gone({"controllerAddr": f"127.0.0.1:{closed}"})
        mixed = await agent._controllers_gone({"controllerAddr": f"127.0.0.1:{closed};127.0.0.1:{listening}"})
        server.close()
        await server.wait_closed()
        return refused, mixed

    assert asyncio.run(scenario()) == (True, False)


def test_the_lease_agent_runs_only_in_groups_that_opt_in(tmp_path: Path) -> None:
    from rocketmq_operator.api.validation import validate_file
    from rocketmq_operator.core.lease import LEASE_AGENT_ANNOTATION
    from rocketmq_operator.render.kubernetes import render_all

    def containers(text: str) -> list[str]:
        path = tmp_path / "group.yaml"
        path.write_text(text)
        resources = [r.resource for r in validate_file(path) if r.resource is not None]
        sts = next(
            o for o in render_all(resources) if o["kind"] == "StatefulSet" and o["metadata"]["name"] == "broker-a"
        )
        return [c["name"] for c in sts["spec"]["template"]["spec"]["containers"]]

    quickstart = (Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml").read_text()
    assert containers(quickstart) == ["broker"]
    opted = quickstart.replace(
        "kind: BrokerGroup\nmetadata:\n",
        f"kind: BrokerGroup\nmetadata:\n  annotations:\n    {LEASE_AGENT_ANNOTATION}: enabled\n",
    )
    assert opted != quickstart
    assert containers(opted) == ["broker", "lease-agent"]


def test_a_fence_whose_answer_times_out_while_the_broker_registers_is_read_back_and_given_back_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A cut-off master applies the fence, then registers with name servers it cannot reach before it answers: the
    agent reads the fence back, says it fenced, and keeps what it replaced, so it gives it back itself later."""
    cluster, clock = _cluster(), Clock()
    cluster.configs[LOCAL].update(minInSyncReplicas="2", brokerPermission="6", haSendHeartbeatInterval="0")
    cluster.registering_late.add(LOCAL)
    master = _agent(cluster, clock)
    slaves = [_agent(cluster, clock, a) for a in PEERS.values()]
    cluster.down.add(PEERS[3])

    with caplog.at_level("WARNING", logger="rocketmq_operator.lease_agent"):
        seen = asyncio.run(_controllers_out_of_reach_then_back(cluster, clock, master, slaves[0]))
    assert LeaseVerdict.FENCE in seen and seen[-1] is LeaseVerdict.CONFIRMED, seen
    assert any(": fenced (" in r.getMessage() for r in caplog.records), caplog.text
    config = cluster.configs[LOCAL]
    assert not is_fenced(config)
    assert (config["brokerPermission"], config["minInSyncReplicas"]) == ("6", "2")

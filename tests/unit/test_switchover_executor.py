"""The one switchover both platforms run (`control.switchover.switchover`), against a fake group: the old master is
fenced with the keys that make it refuse every put (not the write permission alone), and unfenced only once it
reports itself a slave, with the group's own minInSyncReplicas.

Why: the controller tells the old master of its demotion one way and asynchronously. A master made writable
before that acknowledges puts with acks from slaves still attached to it, and the new master's log then
truncates them away (acknowledged messages lost; seen as `lost: 2` in the roll bench under load)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from rocketmq_operator.control import switchover as control_switchover
from rocketmq_operator.control.fence import (
    FENCE_FOREVER_MS,
    FENCE_LEASE_S,
    FENCED_HEARTBEAT_MS,
    FENCED_MIN_IN_SYNC_REPLICAS,
    fence_config,
    unfence_config,
)
from rocketmq_operator.control.switchover import OperationRefused, switchover
from rocketmq_operator.core.observation import ReplicaEndpoint
from rocketmq_operator.remoting import ElectMasterResult, HaClient, HaInfo, HaStatus, RemotingException, SyncStateInfo
from rocketmq_operator.remoting.controller import ControllerMetadata, ReplicaIdentity
from rocketmq_operator.remoting.namesrv import BrokerMemberGroup

GROUP = "broker-a"
CONTROLLER = "10.0.0.9:9878"
NAMESRV = "10.0.0.8:9876"
ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}
ENDPOINTS = [ReplicaEndpoint(f"{GROUP}-{i - 1}", a) for i, a in ADDR.items()]


@dataclass
class FakeGroup:
    """A controller-mode group. After an election the old master keeps claiming master for ``demote_after``
    more HA-status answers (the asynchronous NOTIFY_BROKER_ROLE_CHANGED); ``None``: it never learns."""

    master: int = 1
    demote_after: int | None = 3
    master_claims: dict[int, bool] = field(default_factory=lambda: {1: True, 2: False, 3: False})
    pending_demotion: int | None = None
    polls_left: int = 0
    log: list[tuple[str, Any]] = field(default_factory=list)
    configs: list[dict[str, str]] = field(default_factory=list)  # every fence and unfence, in order
    consumer_offsets: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # offsetTable by address
    ha_masters: dict[str, str] = field(default_factory=dict)  # each replica's HA client address, as last set
    reads: int = 0  # the HA clients' last read, advancing with every status read (a slave that replicates)

    async def _call(self, addr: str, code: int, *args: Any, **kwargs: Any) -> Any:
        # Topic tables (the switchover's carry-over, best effort) are not modelled here: table-tested in
        # test_topics_plan, and run on real brokers in test_failover_real.
        raise RemotingException(f"request {code} to {addr} is not modelled by this fake")

    async def get_all_consumer_offsets(self, addr: str, *, timeout: float | None = None) -> dict[str, Any]:
        # Every replica holds the same committed offsets unless a test gives the master more.
        return {name: dict(queues) for name, queues in self.consumer_offsets.get(addr, {}).items()}

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int, *, timeout: float | None = None
    ) -> None:
        self.log.append(("offset copied", (next(i for i, a in ADDR.items() if a == addr), topic, group, offset)))

    async def find_controller_leader(self, controllers: list[str], *, timeout: float | None = None) -> Any:
        return ControllerMetadata(CONTROLLER, None, "1", CONTROLLER, True, {})

    async def get_sync_state_data(self, leader: str, groups: list[str], *, timeout: float | None = None) -> Any:
        members = tuple(ReplicaIdentity(GROUP, i, a, True) for i, a in ADDR.items())
        return {GROUP: SyncStateInfo(GROUP, self.master, ADDR[self.master], 2, 2, members, ())}

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        return {"commitLogMaxOffset": "100", "brokerVersionDesc": "V5_5_0"}

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        if broker_id == self.pending_demotion and self.demote_after is not None:
            if self.polls_left == 0:
                self.master_claims[broker_id] = False
                self.pending_demotion = None
                self.log.append(("demoted", broker_id))
            else:
                self.polls_left -= 1
        self.reads += 1
        master = self.master_claims[broker_id]
        client = None if master else HaClient(self.ha_masters.get(addr), 0, 100, self.reads, self.reads, 100, True)
        return HaStatus(master=master, master_commit_log_max_offset=100, in_sync_slave_nums=2, client=client)

    async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        if set(config) == {"brokerPermission"}:  # a registration asked for, not a fence
            self.log.append(("registered", broker_id))
            return
        door_shut = int(config[DOOR]) > 0
        self.log.append(
            (FENCES[(config["brokerPermission"], config["minInSyncReplicas"], config[HEARTBEAT], door_shut)], broker_id)
        )
        self.configs.append(dict(config))

    namesrv_addrs: tuple[str, ...] = (NAMESRV,)

    async def unregister_broker(self, namesrv: str, *, broker_addr: str, broker_id: int, **_: Any) -> None:
        assert broker_id == 0  # the master's entry
        self.log.append(("forgotten", next(i for i, a in ADDR.items() if a == broker_addr)))

    async def get_ha_info(self, addr: str, **_: Any) -> HaInfo:
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        return HaInfo(f"{addr[:-5]}:10912" if self.master_claims[broker_id] else None, addr, 0)

    async def set_ha_master(self, addr: str, info: HaInfo, **_: Any) -> None:
        self.log.append(("attached", next(i for i, a in ADDR.items() if a == addr)))
        if info.master_ha_address:
            self.ha_masters[addr] = info.master_ha_address

    async def get_broker_member_group(
        self, cluster: str, broker_name: str, *, namesrv: str, **_: Any
    ) -> BrokerMemberGroup:
        # The new master registers with the name servers on its own (ReplicasManager.changeToMaster).
        assert (cluster, broker_name, namesrv) == ("c", GROUP, NAMESRV)
        return BrokerMemberGroup(cluster, broker_name, {0: ADDR[self.master]})

    async def get_broker_config(self, addr: str, **_: Any) -> dict[str, str]:
        return {HEARTBEAT: "0", "brokerPermission": "6", "minInSyncReplicas": "2"}

    async def elect_master(self, leader: str, cluster: str, group: str, broker_id: int, **_: Any) -> Any:
        old, self.master = self.master, broker_id
        self.master_claims[broker_id] = True
        self.pending_demotion, self.polls_left = old, self.demote_after or 0
        self.log.append(("elected", broker_id))
        return ElectMasterResult(broker_id, ADDR[broker_id], 3, 3, frozenset({broker_id}), dict(ADDR))


MIN_IN_SYNC = 2  # the group's spec value
HEARTBEAT = "haSendHeartbeatInterval"
DOOR = "startAcceptSendRequestTimeStamp"
# (brokerPermission, minInSyncReplicas, heartbeat, door shut) -> what the switchover asked of the broker; any other
# is a KeyError
FENCES = {
    ("4", str(FENCED_MIN_IN_SYNC_REPLICAS), str(FENCED_HEARTBEAT_MS), True): "fenced",
    ("6", str(MIN_IN_SYNC), "0", False): "unfenced",
}


def _run(group: FakeGroup, serve_timeout_s: float = 5.0) -> Any:
    return asyncio.run(
        switchover(  # type: ignore[arg-type]
            group,
            [CONTROLLER],
            "c",
            GROUP,
            ENDPOINTS,
            2,
            min_in_sync_replicas=MIN_IN_SYNC,
            serve_timeout_s=serve_timeout_s,
        )
    )


def test_the_fence_refuses_every_replicated_put_not_only_routes() -> None:
    # brokerPermission=4 alone is checked on a send only for ordered topics (AbstractSendMessageProcessor): a
    # client with a cached route is still acknowledged. minInSyncReplicas above any SyncStateSet refuses every put;
    # no heartbeat keeps the target's HA client from reading a frame while it is shut down for its promotion.
    assert FENCED_MIN_IN_SYNC_REPLICAS > 64
    group = FakeGroup(demote_after=0)
    _run(group)
    assert group.log[0] == ("fenced", 1)


def test_the_old_master_is_unfenced_only_after_it_reports_itself_a_slave() -> None:
    group = FakeGroup(demote_after=3)
    report = _run(group)
    assert group.log == [
        ("fenced", 1),
        ("forgotten", 1),  # no name server sends a slave back to it (a registration names no master, or the new)
        ("elected", 2),
        ("attached", 3),  # the third replica gets the new master's HA address at once
        ("demoted", 1),
        ("unfenced", 1),
        ("attached", 1),  # and so does the old master once it is a slave
        # Once the name servers list the new master, the others register again: their answers name it (their
        # HA address and the master they sync topics and offsets from).
        ("registered", 1),
        ("registered", 3),
    ]
    assert report.new_master == 2
    assert any(
        "is a slave now; unfenced (brokerPermission=6, minInSyncReplicas=2, haSendHeartbeatInterval=0, "
        "startAcceptSendRequestTimeStamp=0, haHousekeepingInterval=20000)" in s
        for s in report.steps
    ), report.steps


def test_an_old_master_that_never_learns_of_its_demotion_stays_fenced() -> None:
    group = FakeGroup(demote_after=None)
    report = _run(group, serve_timeout_s=0.2)
    # A fenced old master is not registered again (its permission stays off); the third replica is.
    assert group.log == [("fenced", 1), ("forgotten", 1), ("elected", 2), ("attached", 3), ("registered", 3)]
    assert report.new_master == 2
    assert any("left fenced (its lease lapses in 60s" in s for s in report.steps), report.steps


def test_the_unfence_gives_back_the_heartbeat_the_broker_had_or_the_rendered_one() -> None:
    assert unfence_config(2, "250")["haSendHeartbeatInterval"] == "250"  # a user's brokerConfig value
    assert unfence_config(2, None)["haSendHeartbeatInterval"] == "0"
    # A fence left behind by an earlier switchover is not given back as the broker's own value.
    assert unfence_config(2, str(FENCED_HEARTBEAT_MS))["haSendHeartbeatInterval"] == "0"


@dataclass
class GrowingMaster(FakeGroup):
    """The fenced master appends one in-flight put (it passed the permission check before the fence) while the
    target's end is being read: the target is level with the first read, not with the master's new end."""

    ends: dict[int, list[int]] = field(default_factory=lambda: {1: [100, 150], 2: [100, 100, 150]})

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        ends = self.ends.get(broker_id, [100])
        end = ends.pop(0) if len(ends) > 1 else ends[0]
        self.log.append(("end", (broker_id, end)))
        return {"commitLogMaxOffset": str(end), "brokerVersionDesc": "V5_5_0"}


def test_the_election_waits_for_a_put_the_fenced_master_appended_while_the_target_was_read() -> None:
    group = GrowingMaster(demote_after=0)
    _run(group)
    elected_at = group.log.index(("elected", 2))
    ends_before = [e for e in group.log[:elected_at] if e[0] == "end"]
    # The last reads before the election: the target at the master's final end (150), the master unchanged.
    assert ends_before[-2:] == [("end", (2, 150)), ("end", (1, 150))], ends_before


@dataclass
class SlowToUnfence(FakeGroup):
    """The old master times out on the first ``timeouts`` requests to give its write permission back (a loaded
    broker): the switchover is done all the same, and the permission is asked for again until it is taken."""

    timeouts: int = 2

    async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
        if config["brokerPermission"] == "6" and self.timeouts > 0:
            self.timeouts -= 1
            self.log.append(("timeout", addr))
            raise TimeoutError(f"UPDATE_BROKER_CONFIG to {addr} timed out after 1s")
        await super().update_broker_config(addr, config)


def test_a_slow_answer_to_the_unfence_is_asked_again_not_a_failed_switchover() -> None:
    group = SlowToUnfence(demote_after=0)
    report = _run(group)
    assert report.new_master == 2
    assert group.log[-6:-2] == [("timeout", ADDR[1]), ("timeout", ADDR[1]), ("unfenced", 1), ("attached", 1)]
    assert any("unfenced" in s for s in report.steps), report.steps


@dataclass
class TargetNeverCatchesUp(FakeGroup):
    """The target stays behind the fenced master: the switchover fails and the fence is rolled back whole."""

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        return {"commitLogMaxOffset": "100" if addr == ADDR[1] else "50", "brokerVersionDesc": "V5_5_0"}


def test_a_failed_catch_up_rolls_the_whole_fence_back() -> None:
    group = TargetNeverCatchesUp()
    try:
        asyncio.run(
            switchover(  # type: ignore[arg-type]
                group, [CONTROLLER], "c", GROUP, ENDPOINTS, 2, min_in_sync_replicas=MIN_IN_SYNC, catch_up_timeout_s=0.1
            )
        )
    except OperationRefused as exc:
        assert "rolled back the fence" in str(exc)
    else:
        raise AssertionError("a target that never caught up was elected")
    assert group.log == [("fenced", 1), ("unfenced", 1)]


@dataclass
class LonelyNewMaster(FakeGroup):
    """The new master answers as master, but no slave rejoins its SyncStateSet: puts are still refused."""

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        status = await super().get_ha_status(addr, timeout=timeout)
        return dataclasses.replace(status, in_sync_slave_nums=0) if addr == ADDR[2] else status


def test_the_write_pause_runs_until_the_new_master_stores_puts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a client sees: serving as master is not enough while the SyncStateSet is below minInSyncReplicas.
    report = _run(FakeGroup(demote_after=0))
    assert report.write_pause_s is not None and report.new_master_writable_at is not None
    monkeypatch.setattr(control_switchover, "WRITABLE_TIMEOUT_S", 0.1)
    lonely = _run(LonelyNewMaster(demote_after=0))
    assert lonely.new_master == 2 and lonely.new_master_serving_at is not None
    assert lonely.write_pause_s is None
    assert any("still below minInSyncReplicas 2" in s for s in lonely.steps), lonely.steps


def test_the_fence_shuts_the_send_door_for_a_lease() -> None:
    # A put that passed the role check as master and reaches the commit log after the demotion skips the
    # replication check (CommitLog.needHandleHA reads the role again) and is answered PUT_OK by the deposed master
    # alone: the door (SendMessageProcessor.preSend) refuses every send before any role is read. The lease lets a
    # fence that a dead switchover left behind lapse, so that the policy can give it back.
    group = FakeGroup(demote_after=0)
    before = time.time()
    _run(group)
    fence, unfence = group.configs[0], group.configs[1]
    assert int((before + FENCE_LEASE_S) * 1000) <= int(fence[DOOR]) <= (time.time() + FENCE_LEASE_S) * 1000
    assert unfence[DOOR] == "0"
    assert fence_config()[DOOR] == str(FENCE_FOREVER_MS)  # a user's fence has no lease


@dataclass
class ElectionAnswerLost(FakeGroup):
    """The controller elects, but its answer never reaches the operator (a timeout under load)."""

    elect_takes_effect: bool = True

    async def elect_master(self, leader: str, cluster: str, group: str, broker_id: int, **_: Any) -> Any:
        if self.elect_takes_effect:
            await super().elect_master(leader, cluster, group, broker_id)
        raise TimeoutError("the election answer timed out")


def test_an_election_whose_answer_was_lost_is_read_from_the_controller_and_the_switchover_goes_on() -> None:
    # Found under load: a switchover reported failed although the controller had elected its target.
    group = ElectionAnswerLost(demote_after=0)
    report = _run(group)
    assert report.new_master == 2 and report.new_master_serving_at is not None
    assert any("the election request failed" in s and "names broker 2" in s for s in report.steps), report.steps
    # Unfenced only as a slave, as after an answered election.
    assert group.log.index(("elected", 2)) < group.log.index(("unfenced", 1))


def test_a_fence_is_kept_when_the_election_happened_and_the_old_master_never_learns_of_it() -> None:
    group = ElectionAnswerLost(demote_after=None)
    report = _run(group, serve_timeout_s=0.5)
    # Undone, the fence would let the deposed master acknowledge puts with acks from slaves still attached to it.
    assert ("unfenced", 1) not in group.log
    assert any("did not report itself a slave" in s and "left fenced" in s for s in report.steps), report.steps


def test_a_fence_is_rolled_back_when_the_controller_still_names_the_old_master() -> None:
    group = ElectionAnswerLost(elect_takes_effect=False)
    with pytest.raises(OperationRefused) as refused:
        _run(group)
    assert group.log[-1] == ("unfenced", 1) and "rolled back the fence" in str(refused.value)


def test_the_target_gets_the_old_masters_consumer_offsets_before_the_fence() -> None:
    # RocketMQ 5.5.0's slaves cannot copy their master's consumer offsets (core.offsets): without this copy the new
    # master would resume every consumer group from stale offsets or none.
    group = FakeGroup(demote_after=0)
    group.consumer_offsets = {ADDR[1]: {"orders@readers": {"0": 42, "1": 7}}, ADDR[2]: {"orders@readers": {"0": 40}}}
    report = _run(group)
    copied = [entry for entry in group.log if entry[0] == "offset copied"]
    assert copied == [("offset copied", (2, "orders", "readers", 42)), ("offset copied", (2, "orders", "readers", 7))]
    order = [entry[0] for entry in group.log]
    # before the fence: a copy under it would lengthen the write pause
    assert order.index("offset copied") < order.index("fenced") < order.index("elected")
    assert any(step == f"copied 2 consumer offsets to {ADDR[2]}" for step in report.steps)

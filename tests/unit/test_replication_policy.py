"""The one replication-policy pass both platforms run (`control.policy.run_replication_policy`), on plain observations
with a fake remoting client and a fake platform: the order of actions, what is asked of the platform, and that
a broker or controller that fails an request never stops the pass."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from kube_fake import FakeApi

from rocketmq_operator.control.fence import fence_config, unfence_config
from rocketmq_operator.control.offsets import OFFSET_COPY_S
from rocketmq_operator.control.policy import PolicyMemory, PolicySettings, run_replication_policy
from rocketmq_operator.core.failover import ProcessState
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.platforms.kubernetes.group_pass import PodPlatform
from rocketmq_operator.platforms.kubernetes.kube import KubeError
from rocketmq_operator.remoting import (
    BrokerMemberGroup,
    ElectMasterResult,
    HaClient,
    HaInfo,
    HaStatus,
    RemotingException,
    SyncStateInfo,
)

GROUP = "broker-a"
ADDR = {1: "10.0.0.1:10911", 2: "10.0.0.2:10911", 3: "10.0.0.3:10911"}
HA = {1: "10.0.0.1:10912", 2: "10.0.0.2:10912", 3: "10.0.0.3:10912"}


def replica(
    broker_id: int, *, reachable: bool = True, master: bool | None = False, ha_from: str | None = None
) -> ReplicaObservation:
    return ReplicaObservation(
        f"{GROUP}-{broker_id}",
        ADDR[broker_id],
        reachable,
        broker_id=broker_id,
        is_master=master if reachable else None,
        max_offset=100,
        ha_master_address=ha_from,
        ha_connections=2 if master else None,
    )


def state(master: int, *replicas: ReplicaObservation, at: float | None = None, controller: bool = True) -> GroupState:
    return GroupState(
        group=GROUP,
        observed_at=time.time() if at is None else at,
        controller_mode=True,
        controller_reachable=controller,
        controller_leader="10.0.0.9:9878" if controller else None,
        master_broker_id=master if controller else None,
        master_address=ADDR[master] if controller else None,
        master_epoch=2,
        sync_state_set=(1, 2, 3),
        replicas=replicas,
    )


@dataclass
class FakeClient:
    controller_master: int = 1
    fail: set[str] = field(default_factory=set)
    name_server_master: str | None = ADDR[1]
    calls: list[tuple[str, Any]] = field(default_factory=list)
    offsets: dict[int, int] = field(default_factory=dict)  # commitLogMaxOffset by broker id
    silent: set[str] = field(default_factory=set)  # addresses that answer no confirmation probe
    configs: dict[str, dict[str, str]] = field(default_factory=dict)  # live broker configs by address
    probes_wait_out_their_timeout: bool = False  # a silent address's probe fails only after its timeout, as a real one
    consumer_offsets: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # offsetTable by address
    ha_masters: dict[str, str] = field(default_factory=dict)  # each slave's HA client address, as last set
    reads: int = 0  # the HA clients' last read, advancing with every status read (a slave that replicates)
    member_group_reads: list[tuple[str, str, str | None]] = field(default_factory=list)  # (cluster, group, namesrv)

    async def get_all_consumer_offsets(self, addr: str, *, timeout: float | None = None) -> dict[str, Any]:
        self._maybe_fail("get_all_consumer_offsets")
        return {name: dict(queues) for name, queues in self.consumer_offsets.get(addr, {}).items()}

    async def update_consumer_offset(
        self, addr: str, group: str, topic: str, queue_id: int, offset: int, *, timeout: float | None = None
    ) -> None:
        self.calls.append(("update_consumer_offset", (addr, topic, group, queue_id, offset)))
        self.consumer_offsets.setdefault(addr, {}).setdefault(f"{topic}@{group}", {})[str(queue_id)] = offset

    def _maybe_fail(self, what: str) -> None:
        if what in self.fail:
            raise RemotingException(f"{what} failed")

    async def get_ha_info(self, addr: str, *, timeout: float | None = None) -> HaInfo:
        self._maybe_fail("get_ha_info")
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        return HaInfo(master_ha_address=HA[broker_id], master_address=addr, master_flush_offset=100)

    async def set_ha_master(self, addr: str, info: HaInfo, *, timeout: float | None = None) -> None:
        self.calls.append(("set_ha_master", (addr, info.master_ha_address)))
        if info.master_ha_address:
            self.ha_masters[addr] = info.master_ha_address

    async def get_sync_state_data(
        self, leader: str, names: Sequence[str], *, timeout: float | None = None
    ) -> Mapping[str, SyncStateInfo]:
        self._maybe_fail("get_sync_state_data")
        return {GROUP: SyncStateInfo(GROUP, self.controller_master, ADDR[self.controller_master], 2, 5, (), ())}

    async def elect_master(
        self, leader: str, cluster: str, name: str, broker_id: int | None = None, designate: bool = False, **_: Any
    ) -> ElectMasterResult:
        self._maybe_fail("elect_master")
        self.calls.append(("elect_master", (cluster, name, broker_id, designate)))
        assert broker_id is not None
        self.controller_master = broker_id
        return ElectMasterResult(broker_id, ADDR[broker_id], 3, 6, frozenset({broker_id}), {})

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        broker_id = next(i for i, a in ADDR.items() if a == addr)
        return {"commitLogMaxOffset": str(self.offsets.get(broker_id, 100))}

    async def get_broker_member_group(
        self, cluster: str, broker_name: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> BrokerMemberGroup:
        self._maybe_fail("get_broker_member_group")
        self.member_group_reads.append((cluster, broker_name, namesrv))
        addrs = {0: self.name_server_master} if self.name_server_master else {3: ADDR[3]}
        return BrokerMemberGroup(cluster, broker_name, addrs if broker_name == GROUP else {})

    async def get_broker_config(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        return self.configs.get(addr, {"brokerPermission": "6"})

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        self.calls.append(("get_ha_status", (addr, timeout)))
        if addr in self.silent:
            if self.probes_wait_out_their_timeout:
                await asyncio.sleep(timeout or 0.0)
            raise RemotingException(f"{addr} did not answer in {timeout}s")
        self.reads += 1
        master = addr == ADDR[self.controller_master]
        client = None if master else HaClient(self.ha_masters.get(addr), 0, 100, self.reads, self.reads, 100, True)
        return HaStatus(master=master, master_commit_log_max_offset=100, in_sync_slave_nums=2, client=client)

    async def update_broker_config(self, addr: str, config: Mapping[str, object], **_: Any) -> None:
        self.calls.append(("update_broker_config", (addr, dict(config))))


@dataclass
class FakePlatform:
    fenced: list[tuple[str, float | None]] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    frozen: list[str] = field(default_factory=list)
    can_freeze: bool = False
    process: ProcessState = ProcessState.STOPPED  # what the platform sees of a silent master's process

    async def fence(self, replica: ReplicaObservation, *, started_before: float | None) -> str:
        self.fenced.append((replica.name, started_before))
        return f"killed {replica.name}"

    async def restart(self, replica: ReplicaObservation) -> None:
        self.restarted.append(replica.name)

    async def freeze(self, replica: ReplicaObservation) -> bool:
        self.frozen.append(replica.name)
        return self.can_freeze

    async def process_state(self, replica: ReplicaObservation) -> ProcessState:
        return self.process


SETTINGS = PolicySettings(cluster="c", detection_s=2.0, name_servers=("10.0.0.9:9876",))


def run(client: FakeClient, platform: FakePlatform, memory: PolicyMemory, observed: GroupState) -> list[str]:
    outcome = asyncio.run(run_replication_policy(client, observed, SETTINGS, memory, platform))  # type: ignore[arg-type]
    return outcome.steps


def test_healthy_group_needs_nothing() -> None:
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    assert run(client, platform, memory, healthy) == []
    assert client.calls == [] and platform.fenced == []


def test_the_masters_consumer_offsets_are_copied_to_the_slaves_every_ten_seconds() -> None:
    # RocketMQ 5.5.0's slaves cannot copy them themselves (core.offsets); the policy does, at RocketMQ's own period.
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    client.consumer_offsets = {ADDR[1]: {"orders@readers": {"0": 42}}, ADDR[2]: {"orders@readers": {"0": 42}}}
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    assert run(client, platform, memory, healthy) == []  # upkeep, not an action: no step, no event
    assert client.calls == [("update_consumer_offset", (ADDR[3], "orders", "readers", 0, 42))]
    client.consumer_offsets[ADDR[1]]["orders@readers"]["0"] = 50
    run(client, platform, memory, healthy)  # within OFFSET_COPY_S of the last copy: nothing read or written
    assert len(client.calls) == 1
    memory.offsets_copied_at -= OFFSET_COPY_S
    run(client, platform, memory, healthy)
    assert client.calls[1:] == [
        ("update_consumer_offset", (ADDR[2], "orders", "readers", 0, 50)),
        ("update_consumer_offset", (ADDR[3], "orders", "readers", 0, 50)),
    ] or client.calls[1:] == [
        ("update_consumer_offset", (ADDR[3], "orders", "readers", 0, 50)),
        ("update_consumer_offset", (ADDR[2], "orders", "readers", 0, 50)),
    ]


def test_an_unreadable_offset_table_is_a_note_never_an_error() -> None:
    client, platform, memory = FakeClient(fail={"get_all_consumer_offsets"}), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    outcome = asyncio.run(
        run_replication_policy(client, healthy, SETTINGS, memory, platform)  # type: ignore[arg-type]
    )
    assert outcome.steps == [] and outcome.offsets_copied == 0
    assert outcome.notes == [
        f"could not read the consumer offsets of master {ADDR[1]}: get_all_consumer_offsets failed"
    ]


def test_hung_master_is_fenced_then_replaced_after_detection() -> None:
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    now = time.time()
    run(client, platform, memory, state(1, replica(1, master=True), replica(2), replica(3), at=now - 1.0))
    hung = (replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    # 1 s without an answer: within detectionSeconds (2 s), nothing happens.
    assert run(client, platform, memory, state(1, *hung, at=now)) == [] and platform.fenced == []
    assert memory.last_answered[1] == now - 1.0
    # Past it: fence first, then a designated election.
    memory.last_answered[1] = now - 3.0
    steps = run(client, platform, memory, state(1, *hung, at=now))
    assert platform.fenced == [(f"{GROUP}-1", None)]
    assert ("elect_master", ("c", GROUP, 2, True)) in client.calls
    assert steps[0].startswith("fenced master") and "elected broker 2" in steps[1]


def test_a_frozen_master_is_replaced_by_the_most_caught_up_member_before_the_kill() -> None:
    # Broker 3 has 80 bytes more than broker 2 (the master's last acknowledged writes reached only 3): with the
    # master frozen those offsets are final, and 3 is elected before the kill lets the controller choose itself.
    client, platform, memory = FakeClient(offsets={2: 100, 3: 180}), FakePlatform(can_freeze=True), PolicyMemory()
    now = time.time()
    memory.last_answered[1] = now - 3.0
    memory.previous_master = 1
    hung = (replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    steps = run(client, platform, memory, state(1, *hung, at=now))
    assert platform.frozen == [f"{GROUP}-1"] and platform.fenced == [(f"{GROUP}-1", None)]
    assert [c[1] for c in client.calls if c[0] == "elect_master"] == [("c", GROUP, 3, True)]
    assert steps[0].startswith(f"froze master {GROUP}-1: master 1 is not serving (no answer for 3.0s; its process is")
    assert steps[1].startswith("elected the most caught-up member, broker 3 (offsets {2: 100, 3: 180}")
    assert steps[2].startswith("fenced master") and "already elected broker 3" in steps[3]


def test_a_master_the_failover_fenced_is_deposed_as_of_the_kill() -> None:
    # The next observation comes after its successor started (a pod restarts in under a pass): deposed as of
    # that observation, the starting successor (not answering yet) would be taken for the hung process and
    # killed again, under load again and again.
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    now = time.time()
    memory.last_answered[1] = now - 3.0
    memory.previous_master = 1
    hung = (replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    before = time.time()
    run(client, platform, memory, state(1, *hung, at=now))
    killed_at = memory.deposed_at[1]
    assert before <= killed_at <= time.time()
    starting = state(2, replica(1, reachable=False), replica(2, master=True), replica(3, ha_from=HA[2]), at=now + 5)
    run(client, platform, memory, starting)
    assert memory.deposed_at[1] == killed_at
    assert platform.fenced[-1] == (f"{GROUP}-1", killed_at)  # only a process started before the kill


def test_no_second_election_when_the_controller_already_moved() -> None:
    client, platform, memory = FakeClient(controller_master=3), FakePlatform(), PolicyMemory()
    now = time.time()
    memory.last_answered[1] = now - 5.0
    memory.previous_master = 1
    steps = run(client, platform, memory, state(1, replica(1, reachable=False), replica(2), replica(3), at=now))
    assert [c for c in client.calls if c[0] == "elect_master"] == []
    assert any("already elected broker 3" in s for s in steps)


def test_failed_election_is_reported_not_raised() -> None:
    client, platform, memory = FakeClient(fail={"elect_master"}), FakePlatform(), PolicyMemory()
    now = time.time()
    memory.last_answered[1] = now - 5.0
    steps = run(client, platform, memory, state(1, replica(1, reachable=False), replica(2), replica(3), at=now))
    assert any("retried next pass" in s for s in steps)


def test_deposed_master_is_fenced_until_it_answers_as_slave() -> None:
    client, platform, memory = FakeClient(controller_master=2), FakePlatform(), PolicyMemory()
    now = time.time()
    run(client, platform, memory, state(1, replica(1, master=True), replica(2), replica(3), at=now - 1))
    # The controller moved to 2 while 1 hangs: 1 is fenced, and only the process started before the deposition.
    deposed = state(2, replica(1, reachable=False), replica(2, master=True), replica(3, ha_from=HA[2]), at=now)
    run(client, platform, memory, deposed)
    assert platform.fenced == [(f"{GROUP}-1", memory.deposed_at[1])]
    # Restarted, it answers as a slave: safe and forgotten, never fenced again.
    back = state(2, replica(1, ha_from=HA[2]), replica(2, master=True), replica(3, ha_from=HA[2]), at=now + 1)
    run(client, platform, memory, back)
    assert memory.deposed_at == {} and len(platform.fenced) == 1


def test_slave_on_a_stale_address_is_pointed_at_the_master() -> None:
    client, platform, memory = FakeClient(controller_master=2), FakePlatform(), PolicyMemory()
    observed = state(2, replica(1, ha_from=HA[2]), replica(2, master=True), replica(3, ha_from=HA[1]))
    steps = run(client, platform, memory, observed)
    assert client.calls == [("set_ha_master", (ADDR[3], HA[2]))]
    assert steps and "pointing them at master 2" in steps[0]


def test_lost_route_is_registered_again_at_once() -> None:
    client, platform, memory = FakeClient(name_server_master=None), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    steps = run(client, platform, memory, healthy)
    assert client.calls == [("update_broker_config", (ADDR[1], {"brokerPermission": "6"}))]
    assert steps and "re-registered master" in steps[0] and "lists no master" in steps[0]


def test_other_master_listed_is_given_the_grace() -> None:
    client, platform, memory = FakeClient(name_server_master=ADDR[2]), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    assert run(client, platform, memory, healthy) == []  # first seen: the new master may be registering
    memory.route_wrong_since = {k: v - 1.0 for k, v in memory.route_wrong_since.items()}
    steps = run(client, platform, memory, healthy)
    assert client.calls == [("update_broker_config", (ADDR[1], {"brokerPermission": "6"}))]
    assert steps and f"lists {ADDR[2]}" in steps[0]


def test_unreadable_name_server_is_not_wrong() -> None:
    client, platform, memory = FakeClient(fail={"get_broker_member_group"}), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    assert run(client, platform, memory, healthy) == [] and memory.route_wrong_since == {}


NS = ("10.0.0.9:9876", "10.0.0.10:9876", "10.0.0.11:9876")
DOWN = "down"  # a name server that does not answer


@dataclass
class NameServersClient(FakeClient):
    """Each name server lists its own master for the group (None: none, DOWN: no answer)."""

    listed: dict[str, str | None] = field(default_factory=dict)

    async def get_broker_member_group(
        self, cluster: str, broker_name: str, *, namesrv: str | None = None, timeout: float | None = None
    ) -> BrokerMemberGroup:
        assert namesrv is not None  # each name server is asked on its own
        self.member_group_reads.append((cluster, broker_name, namesrv))
        master = self.listed.get(namesrv, ADDR[1])
        if master == DOWN:
            raise RemotingException(f"{namesrv} does not answer")
        # A real name server lists the slaves too; a group it has no broker of is an empty table.
        slaves = {2: ADDR[2], 3: ADDR[3]}
        return BrokerMemberGroup(cluster, broker_name, {0: master, **slaves} if master else {})


RE_REGISTERED = [("update_broker_config", (ADDR[1], {"brokerPermission": "6"}))]


@pytest.mark.parametrize(
    ("listed", "wrong_for_s", "registered", "named", "still_wrong"),
    [
        pytest.param({}, None, False, [], set(), id="every name server lists the master"),
        pytest.param({NS[1]: None}, None, True, [f"{NS[1]} lists no master"], set(), id="one lists none: at once"),
        pytest.param({NS[1]: ADDR[2]}, None, False, [], {NS[1]}, id="one lists another: first seen, the grace"),
        pytest.param({NS[1]: ADDR[2]}, 1.0, True, [f"{NS[1]} lists {ADDR[2]}"], set(), id="another, past the grace"),
        pytest.param({NS[1]: ADDR[2]}, 0.1, False, [], {NS[1]}, id="another, within the grace"),
        pytest.param({NS[0]: DOWN}, 1.0, False, [], set(), id="one down: not wrong, and forgotten"),
        pytest.param(
            {NS[0]: DOWN, NS[2]: None}, None, True, [f"{NS[2]} lists no master"], set(), id="one down, one lists none"
        ),
        pytest.param(
            {NS[0]: None, NS[2]: ADDR[3]},
            1.0,
            True,
            [f"{NS[0]} lists no master", f"{NS[2]} lists {ADDR[3]}"],
            set(),
            id="two wrong: both named",
        ),
    ],
)
def test_route_check_asks_each_name_server_for_the_group_alone(
    listed: dict[str, str | None], wrong_for_s: float | None, registered: bool, named: list[str], still_wrong: set[str]
) -> None:
    client, platform, memory = NameServersClient(listed=listed), FakePlatform(), PolicyMemory()
    if wrong_for_s is not None:  # the earlier passes saw these name servers wrong for this long
        memory.route_wrong_since = {ns: time.time() - wrong_for_s for ns in listed}
    settings = dataclasses.replace(SETTINGS, name_servers=NS)
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    steps = asyncio.run(run_replication_policy(client, healthy, settings, memory, platform)).steps  # type: ignore[arg-type]
    # One GET_BROKER_MEMBER_GROUP per name server, for this group and its cluster: nothing of the other groups.
    assert client.member_group_reads == [("c", GROUP, ns) for ns in NS]
    assert client.calls == (RE_REGISTERED if registered else [])
    if registered:
        assert steps == [f"re-registered master {GROUP}-1 with every name server ({'; '.join(named)})"]
    else:
        assert steps == []
    assert set(memory.route_wrong_since) == still_wrong


def test_no_route_check_without_name_servers_or_a_master_to_route() -> None:
    client, platform, memory = NameServersClient(listed={NS[0]: None}), FakePlatform(), PolicyMemory()
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    asyncio.run(
        run_replication_policy(client, healthy, dataclasses.replace(SETTINGS, name_servers=()), memory, platform)  # type: ignore[arg-type]
    )
    # The controller's master does not answer as master: whose route would be given is not known yet.
    hung = state(1, replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    memory.last_answered[1] = time.time()
    asyncio.run(run_replication_policy(client, hung, SETTINGS, memory, platform))  # type: ignore[arg-type]
    assert client.member_group_reads == [] and client.calls == []


def test_controller_down_decides_no_failover_but_still_fences_deposed() -> None:
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    memory.previous_master = 2
    memory.deposed_at = {1: 900.0}
    observed = state(1, replica(1, reachable=False), replica(2), replica(3), controller=False)
    run(client, platform, memory, observed)
    assert platform.fenced == [(f"{GROUP}-1", 900.0)]
    assert [c for c in client.calls if c[0] == "elect_master"] == []


def test_unconnected_slave_is_woken_once_with_an_address_change() -> None:
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    master = dataclasses.replace(replica(1, master=True), ha_connections=1)
    observed = dataclasses.replace(
        state(1, master, replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1])), sync_state_set=(1, 2)
    )
    memory.unconnected_since[3] = time.time() - 2.0
    steps = run(client, platform, memory, observed)
    # Its HA client wakes only on an address change: a refusing address, then the master's again.
    assert client.calls == [("set_ha_master", (ADDR[3], "10.0.0.1:0")), ("set_ha_master", (ADDR[3], HA[1]))]
    assert steps and "waking their HA clients" in steps[0]
    client.calls.clear()
    assert run(client, platform, memory, observed) == [] and client.calls == []  # once per episode


def test_route_given_back_while_the_controller_restarts() -> None:
    # Name servers and the controller hosted with them restart together: the one broker answering as master
    # gets its route back before the controller is readable again.
    client, platform, memory = FakeClient(name_server_master=None), FakePlatform(), PolicyMemory()
    observed = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]), controller=False)
    steps = run(client, platform, memory, observed)
    assert client.calls == [("update_broker_config", (ADDR[1], {"brokerPermission": "6"}))]
    assert steps and "re-registered master" in steps[0]


def test_no_route_for_two_brokers_claiming_master_without_a_controller() -> None:
    client, platform, memory = FakeClient(name_server_master=None), FakePlatform(), PolicyMemory()
    observed = state(1, replica(1, master=True), replica(2, master=True), replica(3), controller=False)
    run(client, platform, memory, observed)
    assert [c for c in client.calls if c[0] == "update_broker_config"] == []


def test_no_election_when_the_kubernetes_fence_is_refused() -> None:
    """Fence first, then elect: when the API server refuses the pod deletion, the pass stops (kopf retries)
    before any election, and the next pass, with the API back, fences and elects."""
    fake = FakeApi()
    fake.put({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{GROUP}-1"}})
    fake.fail_on("delete", "Pod", f"{GROUP}-1", status=500)
    client, memory = FakeClient(), PolicyMemory()
    now = time.time()
    memory.last_answered[1] = now - 3.0
    hung = state(1, replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]), at=now)
    platform = PodPlatform(fake, "ns", [])  # type: ignore[arg-type]
    with pytest.raises(KubeError):
        asyncio.run(run_replication_policy(client, hung, SETTINGS, memory, platform))  # type: ignore[arg-type]
    assert [c for c in client.calls if c[0] == "elect_master"] == []
    steps = asyncio.run(run_replication_policy(client, hung, SETTINGS, memory, platform)).steps  # type: ignore[arg-type]
    assert fake.writes_of("delete") == [("Pod", f"{GROUP}-1")]
    assert ("elect_master", ("c", GROUP, 2, True)) in client.calls and "elected broker 2" in steps[1]


def test_a_deposed_master_whose_pod_is_already_being_deleted_is_not_deleted_again() -> None:
    # Every pass deleted it again while the kubelet stopped it (three Events in 3 s on the three-node cluster), and
    # each deletion counted as acting, which asks for an immediate second pass.
    fake = FakeApi()
    terminating = {"metadata": {"name": f"{GROUP}-1", "deletionTimestamp": "2026-11-28T09:45:54Z"}}
    client, memory = FakeClient(controller_master=2), PolicyMemory()
    memory.previous_master = 1
    elected = state(2, replica(1, reachable=False), replica(2, master=True), replica(3, ha_from=HA[2]))
    platform = PodPlatform(fake, "ns", [terminating])  # type: ignore[arg-type]
    outcome = asyncio.run(run_replication_policy(client, elected, SETTINGS, memory, platform))  # type: ignore[arg-type]
    assert fake.writes_of("delete") == [] and not outcome.acted, outcome.steps


def _silent_master(client: FakeClient, memory: PolicyMemory, silent_for: float) -> GroupState:
    now = time.time()
    memory.last_answered[1] = now - silent_for
    memory.previous_master = 1
    return state(1, replica(1, reachable=False), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]), at=now)


def test_a_loaded_master_that_answers_a_confirmation_probe_is_not_fenced() -> None:
    # At load 13 a new, healthy master missed every 1 s probe for the detection time and was frozen and killed:
    # one SIGKILL, two failovers. A running process is asked once more with the detection time as timeout.
    client, platform, memory = FakeClient(), FakePlatform(process=ProcessState.RUNNING), PolicyMemory()
    observed = _silent_master(client, memory, 3.0)
    outcome = asyncio.run(run_replication_policy(client, observed, SETTINGS, memory, platform))  # type: ignore[arg-type]
    assert platform.fenced == [] and platform.frozen == []
    assert [c for c in client.calls if c[0] == "elect_master"] == []
    assert ("get_ha_status", (ADDR[1], 2.0)) in client.calls
    assert any("slow" in n and "not fenced" in n for n in outcome.notes), outcome.notes
    assert not outcome.acted and memory.last_answered[1] > observed.observed_at - 1.0  # its silence starts again


def test_a_running_master_silent_to_the_confirmation_is_fenced_after_twice_the_detection() -> None:
    client, platform, memory = FakeClient(), FakePlatform(process=ProcessState.RUNNING), PolicyMemory()
    client.silent.add(ADDR[1])
    outcome = asyncio.run(
        run_replication_policy(client, _silent_master(client, memory, 3.0), SETTINGS, memory, platform)  # type: ignore[arg-type]
    )
    assert platform.fenced == [] and any("unless it answers" in n for n in outcome.notes)
    steps = run(client, platform, memory, _silent_master(client, memory, 4.5))
    assert platform.fenced == [(f"{GROUP}-1", None)]
    assert "a 2s confirmation probe failed; its process is running; silent for twice" in steps[0]


def test_a_silent_master_is_asked_for_confirmation_once_per_silence() -> None:
    # Asked on every pass, each probe held the pass for its timeout: on Kubernetes a frozen master was fenced after
    # 12.6 s of silence instead of twice the detection time (8 s).
    client, platform, memory = FakeClient(), FakePlatform(process=ProcessState.RUNNING), PolicyMemory()
    client.silent.add(ADDR[1])
    observed = _silent_master(client, memory, 3.0)
    run(client, platform, memory, observed)
    run(client, platform, memory, dataclasses.replace(observed, observed_at=time.time()))
    assert [c for c in client.calls if c[0] == "get_ha_status"] == [("get_ha_status", (ADDR[1], 2.0))]
    assert platform.fenced == []
    # That probe failed 10 s ago and the master answered since (3 s ago): a new silence, a new probe.
    memory.confirmation_failed[1] -= 10.0
    run(client, platform, memory, _silent_master(client, memory, 3.0))
    assert len([c for c in client.calls if c[0] == "get_ha_status"]) == 2


def test_silence_through_the_confirmation_probe_counts_and_is_judged_at_its_end() -> None:
    # Silent 1.2 s at the observation (detection 1 s): the 1 s probe fails at 2.2 s, past twice the detection
    # time: fenced in that pass, not one pass later (on Kubernetes a pass later was 5 s later).
    client, platform, memory = FakeClient(), FakePlatform(process=ProcessState.RUNNING), PolicyMemory()
    client.silent.add(ADDR[1])
    client.probes_wait_out_their_timeout = True
    settings = dataclasses.replace(SETTINGS, detection_s=1.0)
    observed = _silent_master(client, memory, 1.2)
    outcome = asyncio.run(run_replication_policy(client, observed, settings, memory, platform))  # type: ignore[arg-type]
    assert platform.fenced == [(f"{GROUP}-1", None)], outcome.notes
    assert "a 1s confirmation probe failed; its process is running; silent for twice" in outcome.steps[0]


def test_a_restarted_policy_resumes_from_the_published_master_and_fences_it_when_deposed_and_hung() -> None:
    # The operator was restarted while the master (1) hung and the controller elected 2: its memory is new, its
    # last status still names 1. Without that, 1 would be a silent ex-master nobody watches, free to wake up as
    # master of the old epoch.
    client, platform, memory = FakeClient(controller_master=2), FakePlatform(), PolicyMemory()
    elected = state(2, replica(1, reachable=False), replica(2, master=True), replica(3, ha_from=HA[2]))
    asyncio.run(run_replication_policy(client, elected, SETTINGS, memory, platform, published_master=1))  # type: ignore[arg-type]
    assert platform.fenced and platform.fenced[0][0] == f"{GROUP}-1", platform.fenced
    # Without the published master the hung ex-master is not known to be one.
    client, platform = FakeClient(controller_master=2), FakePlatform()
    asyncio.run(run_replication_policy(client, elected, SETTINGS, PolicyMemory(), platform))  # type: ignore[arg-type]
    assert platform.fenced == []


def test_a_stopped_master_is_fenced_without_a_confirmation_probe() -> None:
    client, platform, memory = FakeClient(), FakePlatform(process=ProcessState.STOPPED), PolicyMemory()
    steps = run(client, platform, memory, _silent_master(client, memory, 3.0))
    assert [c for c in client.calls if c[0] == "get_ha_status" and c[1][0] == ADDR[1]] == []
    assert platform.fenced == [(f"{GROUP}-1", None)] and "its process is stopped" in steps[0]


def test_a_fence_a_dead_switchover_left_on_the_master_is_given_back_once_its_lease_lapsed() -> None:
    client, platform, memory = FakeClient(), FakePlatform(), PolicyMemory()
    lapsed = {**fence_config(int((time.time() - 1) * 1000))}
    running = {**fence_config(int((time.time() + 60) * 1000))}
    healthy = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]))
    client.configs = {ADDR[1]: running, ADDR[3]: fence_config()}  # a switchover under way; a user's fence
    assert run(client, platform, memory, healthy) == []
    client.configs[ADDR[1]] = lapsed
    memory.fences_checked_at = 0.0
    steps = run(client, platform, memory, healthy)
    unfence = [c for c in client.calls if c[0] == "update_broker_config"]
    assert unfence == [("update_broker_config", (ADDR[1], unfence_config(SETTINGS.min_in_sync_replicas, None)))]
    assert steps and steps[0].startswith(f"unfenced {GROUP}-1: the master left fenced by a switchover or a lease agent")


def test_a_named_master_that_stays_a_slave_is_restarted_after_the_grace() -> None:
    """Seen on Kubernetes: the controllers, all restarted, elected broker 1 with the epoch of an election they had
    lost (of broker 2, whose pod was gone); broker 1, which had seen that epoch, ignored its own election and stayed
    a slave of the lost master's address: no master, no write, for good. It is restarted (it registers again and
    takes the controller's view); nothing is elected or fenced."""
    client, platform, memory = FakeClient(controller_master=1), FakePlatform(), PolicyMemory()
    now = time.time()
    lost = "10.0.0.7:10912"
    stuck = state(1, replica(1, ha_from=lost), replica(2, ha_from=lost), replica(3, ha_from=lost), at=now - 20)
    assert run(client, platform, memory, stuck) == [] and platform.restarted == []  # its role change may come
    steps = run(client, platform, memory, dataclasses.replace(stuck, observed_at=now))
    assert platform.restarted == [f"{GROUP}-1"], steps
    assert steps[0].startswith(f"restart {GROUP}-1: the controller names broker 1 master, but it has answered as a ")
    assert not platform.fenced and not [c for c in client.calls if c[0] == "elect_master"]
    # The grace starts again for the restarted broker, which comes back as master: nothing more.
    run(client, platform, memory, dataclasses.replace(stuck, observed_at=now + 1))
    assert platform.restarted == [f"{GROUP}-1"]
    back = state(1, replica(1, master=True), replica(2, ha_from=HA[1]), replica(3, ha_from=HA[1]), at=now + 30)
    run(client, platform, memory, back)
    assert platform.restarted == [f"{GROUP}-1"] and memory.named_slave_since is None


def test_a_newly_named_master_gets_its_own_grace() -> None:
    """Broker 1 answered as a slave for a while; the controller then names broker 2, which has not taken its role
    yet: 2 is not restarted on 1's account."""
    client, platform, memory = FakeClient(controller_master=1), FakePlatform(), PolicyMemory()
    now = time.time()
    lost = "10.0.0.7:10912"
    run(client, platform, memory, state(1, replica(1, ha_from=lost), replica(2), replica(3), at=now - 14))
    client.controller_master = 2
    elected = state(2, replica(1, ha_from=lost), replica(2, ha_from=lost), replica(3, ha_from=lost), at=now)
    run(client, platform, memory, elected)
    assert platform.restarted == [] and memory.named_slave_since == (2, now)

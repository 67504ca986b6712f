"""topics.assert_group against fake brokers: re-assertion on a new master, classic-mode slaves, failures."""

from __future__ import annotations

import json
from typing import Any

from rocketmq_operator.control.topics import GroupTopicMemory, assert_group
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.topics import ConsumerGroupFacts, TopicConfigFacts, WantedOnGroup
from rocketmq_operator.remoting import RemotingCommand, RemotingConnectionError, RemotingError
from rocketmq_operator.remoting.namesrv import QueueData, TopicRoute


class FakeBrokers:
    """Answers the admin requests per broker address from in-memory topic and group tables."""

    def __init__(self, *addrs: str, down: tuple[str, ...] = ()) -> None:
        self.topics: dict[str, dict[str, Any]] = {a: {} for a in addrs}
        self.groups: dict[str, dict[str, Any]] = {a: {} for a in addrs}
        self.down = set(down)
        self.calls: list[tuple[str, int]] = []
        self.namesrv_addrs: tuple[str, ...] = ()  # no name servers: nothing to recover routes from

    async def _call(
        self, addr: str, code: int, ext_fields: dict[str, str] | None = None, body: bytes = b"", **_: object
    ) -> RemotingCommand:
        self.calls.append((addr, int(code)))
        if addr in self.down:
            raise RemotingConnectionError(f"connect to {addr} refused")
        f = ext_fields or {}
        if code == 21:
            return RemotingCommand(code=0, body=json.dumps({"topicConfigTable": self.topics[addr]}).encode())
        if code == 201:
            return RemotingCommand(code=0, body=json.dumps({"subscriptionGroupTable": self.groups[addr]}).encode())
        if code == 17:
            attrs = dict(kv[1:].split("=", 1) for kv in f.get("attributes", "").split(",") if kv)
            self.topics[addr][f["topic"]] = {
                "topicName": f["topic"],
                "readQueueNums": int(f["readQueueNums"]),
                "writeQueueNums": int(f["writeQueueNums"]),
                "perm": int(f["perm"]),
                "attributes": attrs,
            }
        elif code == 200:
            config = json.loads(body)
            self.groups[addr][config["groupName"]] = config
        elif code == 215:
            self.topics[addr].pop(f["topic"], None)
        return RemotingCommand(code=0)


def _state(controller_mode: bool, master: str | None, *replicas: str, epoch: int = 1) -> GroupState:
    obs = tuple(
        ReplicaObservation(f"r{i}", a, reachable=True, broker_id=i, is_master=a == master)
        for i, a in enumerate(replicas)
    )
    return GroupState("g", 0.0, controller_mode, master_address=master, master_epoch=epoch, replicas=obs)


ORDERS = TopicConfigFacts("orders", 8, 8, attributes={"message.type": "NORMAL"})
WANTED = WantedOnGroup(topics=[ORDERS], consumer_groups=[ConsumerGroupFacts("readers")])


async def test_new_master_gets_every_declared_topic_and_group() -> None:
    brokers = FakeBrokers("a:1", "b:1", "c:1")
    memory = GroupTopicMemory()
    first = await assert_group(brokers, _state(True, "a:1", "a:1", "b:1", "c:1"), WANTED, memory)  # type: ignore[arg-type]
    assert first.asserted and "orders" in brokers.topics["a:1"] and "readers" in brokers.groups["a:1"]
    assert brokers.topics["b:1"] == {}  # controller mode: the master only
    again = await assert_group(brokers, _state(True, "a:1", "a:1", "b:1", "c:1"), WANTED, memory)  # type: ignore[arg-type]
    assert again.asserted and not again.done and not again.new_master
    # Failover: b is master now and never had the topic.
    after = await assert_group(brokers, _state(True, "b:1", "a:1", "b:1", "c:1", epoch=2), WANTED, memory)  # type: ignore[arg-type]
    assert after.asserted and after.new_master
    assert [d.split(" on ")[0] for d in after.done] == ["create topic orders", "create consumer group readers"]
    assert brokers.topics["b:1"]["orders"]["attributes"] == {"message.type": "NORMAL"}


async def test_auto_created_topic_seen_on_the_old_master_is_recreated_on_the_new() -> None:
    brokers = FakeBrokers("a:1", "b:1")
    brokers.topics["a:1"]["made_by_a_send"] = {"topicName": "made_by_a_send", "readQueueNums": 4, "writeQueueNums": 4}
    brokers.topics["a:1"]["broker-a"] = {"topicName": "broker-a", "readQueueNums": 1, "writeQueueNums": 1}
    wanted = WantedOnGroup(auto_create_topics=True, own_names=["broker-a", "DefaultCluster"])
    memory = GroupTopicMemory()
    await assert_group(brokers, _state(True, "a:1", "a:1", "b:1"), wanted, memory)  # type: ignore[arg-type]
    brokers.down.add("a:1")
    report = await assert_group(brokers, _state(True, "b:1", "a:1", "b:1", epoch=2), wanted, memory)  # type: ignore[arg-type]
    assert report.asserted
    assert sorted(brokers.topics["b:1"]) == ["made_by_a_send"]  # not the broker's own topic
    assert brokers.topics["b:1"]["made_by_a_send"]["writeQueueNums"] == 4


async def test_classic_mode_asserts_on_the_acting_master_while_the_master_is_away() -> None:
    brokers = FakeBrokers("m:1", "s:1", down=("m:1",))
    state = GroupState(
        "g",
        0.0,
        False,
        replicas=(
            ReplicaObservation("r0", "m:1", reachable=False, broker_id=0),
            ReplicaObservation("r1", "s:1", reachable=True, broker_id=1, is_master=False),
        ),
    )
    report = await assert_group(brokers, state, WANTED, GroupTopicMemory())  # type: ignore[arg-type]
    assert "orders" in brokers.topics["s:1"]
    assert not report.asserted and report.errors == ["no reachable master"]  # not writable without the master


async def test_unreachable_master_is_reported_not_raised() -> None:
    brokers = FakeBrokers("a:1", down=("a:1",))
    report = await assert_group(brokers, _state(True, "a:1", "a:1"), WANTED, GroupTopicMemory())  # type: ignore[arg-type]
    assert not report.asserted and "cannot read the topic tables of a:1" in report.errors[0]


async def test_named_master_not_yet_serving_is_not_asserted() -> None:
    brokers = FakeBrokers("a:1", "b:1")
    state = _state(True, "b:1", "a:1", "b:1")
    state = GroupState(**{**state.__dict__, "replicas": tuple(
        ReplicaObservation(r.name, r.address, True, r.broker_id, is_master=False) for r in state.replicas
    )})  # fmt: skip
    report = await assert_group(brokers, state, WANTED, GroupTopicMemory())  # type: ignore[arg-type]
    assert not report.asserted and brokers.calls == []


async def test_topic_made_with_mqadmin_is_recreated_on_the_new_master_but_a_deletion_is_respected() -> None:
    brokers = FakeBrokers("a:1", "b:1")
    brokers.topics["a:1"]["by_admin"] = {"topicName": "by_admin", "readQueueNums": 2, "writeQueueNums": 2}
    brokers.topics["a:1"]["deleted_later"] = {"topicName": "deleted_later", "readQueueNums": 1, "writeQueueNums": 1}
    memory = GroupTopicMemory()
    wanted = WantedOnGroup()  # nothing declared, automatic creation off
    await assert_group(brokers, _state(True, "a:1", "a:1", "b:1"), wanted, memory)  # type: ignore[arg-type]
    del brokers.topics["a:1"]["deleted_later"]  # mqadmin deleteTopic on the same master
    await assert_group(brokers, _state(True, "a:1", "a:1", "b:1"), wanted, memory)  # type: ignore[arg-type]
    assert "deleted_later" not in brokers.topics["a:1"]
    report = await assert_group(brokers, _state(True, "b:1", "a:1", "b:1", epoch=2), wanted, memory)  # type: ignore[arg-type]
    assert report.asserted and sorted(brokers.topics["b:1"]) == ["by_admin"]


class FakeCluster(FakeBrokers):
    """The brokers above and a name server's answers: its topic list and the routes, per topic."""

    def __init__(self, *addrs: str, routes: dict[str, list[QueueData]]) -> None:
        super().__init__(*addrs)
        self.namesrv_addrs = ("ns:9876",)
        self.routes = routes

    async def get_all_topics(self, **_: object) -> tuple[str, ...]:
        return tuple(sorted(self.routes))

    async def get_route(self, topic: str, **_: object) -> TopicRoute:
        if topic == "deleted-meanwhile":
            raise RemotingError(17, "TOPIC_NOT_EXIST", addr="ns:9876")
        return TopicRoute(topic, tuple(self.routes[topic]), ())


async def test_a_topic_the_old_master_made_unobserved_is_recovered_from_the_name_servers_routes() -> None:
    """The master made `fresh` and died before any observation: the name servers still route it to the group
    (the write bit wiped while it had no master), so the new master gets it, read-write; a topic routed only to
    another group, an internal one and one the name server no longer routes are left alone."""
    routes = {
        "orders": [QueueData("g", 8, 8, 6)],
        "elsewhere": [QueueData("other-group", 4, 4, 6)],
        "TBW102": [QueueData("g", 8, 8, 7)],
        "deleted-meanwhile": [],
    }
    brokers = FakeCluster("a:1", "b:1", routes=routes)
    memory = GroupTopicMemory()
    await assert_group(brokers, _state(True, "a:1", "a:1", "b:1"), WANTED, memory)  # type: ignore[arg-type]
    assert sorted(brokers.topics["a:1"]) == ["orders"]
    # After that pass: the master makes `fresh` (registered with the name servers at once), then dies.
    brokers.topics["a:1"]["fresh"] = {"topicName": "fresh", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}
    routes["fresh"] = [QueueData("g", 2, 2, 4)]
    brokers.down.add("a:1")
    report = await assert_group(brokers, _state(True, "b:1", "a:1", "b:1", epoch=2), WANTED, memory)  # type: ignore[arg-type]
    assert report.asserted, report.errors
    assert sorted(brokers.topics["b:1"]) == ["fresh", "orders"]
    assert (brokers.topics["b:1"]["fresh"]["writeQueueNums"], brokers.topics["b:1"]["fresh"]["perm"]) == (2, 6)
    assert any("fresh: routed to g by the name servers" in d for d in report.done), report.done

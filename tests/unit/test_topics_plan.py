"""plan.topics: what a master must be told, table-driven, refusals included."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import BrokerGroup, ConsumerGroup, Topic
from rocketmq_operator.core.topics import (
    ActionKind,
    ConsumerGroupFacts,
    TopicConfigFacts,
    is_internal_topic,
    plan_carry_over,
    plan_consumer_groups,
    plan_topics,
    topic_facts,
    update_observed,
    wanted_on_groups,
    wanted_topics,
)

T = TopicConfigFacts


def orders(**kw: object) -> TopicConfigFacts:
    base: dict[str, object] = {
        "name": "orders",
        "read_queue_nums": 8,
        "write_queue_nums": 8,
        "attributes": {"message.type": "NORMAL"},
    }
    base.update(kw)
    return T(**base)  # type: ignore[arg-type]


CASES = [
    # id, wanted, on master, deleting, expected actions [(kind, name)], refusal substring
    ("missing-created", [orders()], {}, [], [("create", "orders")], None),
    ("same-nothing", [orders()], {"orders": orders()}, [], [], None),
    ("no-attribute-means-normal", [orders()], {"orders": orders(attributes={})}, [], [], None),
    ("more-queues-updated", [orders(read_queue_nums=16, write_queue_nums=16)], {"orders": orders()}, [],
     [("update", "orders")], None),
    ("type-changed-updated", [orders(attributes={"message.type": "FIFO"})], {"orders": orders()}, [],
     [("update", "orders")], None),
    ("perm-changed-updated", [orders(perm=4)], {"orders": orders()}, [], [("update", "orders")], None),
    ("inherit-bit-ignored", [orders()], {"orders": orders(perm=7)}, [], [], None),
    ("read-shrink-below-write-refused", [orders(read_queue_nums=4)], {"orders": orders()}, [], [],
     "lower writeQueueNums to 4 first"),
    ("write-shrink-first-ok", [orders(write_queue_nums=4)], {"orders": orders()}, [], [("update", "orders")], None),
    ("unchangeable-attribute-refused", [orders(attributes={"message.type": "NORMAL", "queue.type": "BatchCQ"})],
     {"orders": orders(attributes={"message.type": "NORMAL", "queue.type": "SimpleCQ"})}, [], [],
     "does not change queue.type"),
    ("system-topic-refused", [T("SCHEDULE_TOPIC_XXXX", 18, 18)], {}, [], [], "system topic"),
    ("delete-when-asked", [], {"old": orders(name="old")}, ["old"], [("delete", "old")], None),
    ("delete-absent-nothing", [], {}, ["old"], [], None),
    ("delete-of-declared-refused", [orders()], {"orders": orders()}, ["orders"], [], "a declared topic is kept"),
    ("undeclared-never-deleted", [], {"other": orders(name="other")}, [], [], None),
    ("observed-recreated", [orders(source="observed")], {}, [], [("create", "orders")], None),
    ("observed-never-changed", [orders(source="observed", read_queue_nums=4)], {"orders": orders()}, [], [], None),
]  # fmt: skip


@pytest.mark.parametrize(("wanted", "have", "deleting", "expected", "refusal"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_plan_topics(
    wanted: list[TopicConfigFacts],
    have: dict[str, TopicConfigFacts],
    deleting: list[str],
    expected: list[tuple[str, str]],
    refusal: str | None,
) -> None:
    plan = plan_topics(wanted, have, deleting)
    assert [(a.kind.value, a.name) for a in plan.actions] == expected
    if refusal is None:
        assert not plan.refusals
    else:
        assert len(plan.refusals) == 1 and refusal in plan.refusals[0].message
        if "rule:" not in plan.refusals[0].message:
            pytest.fail(f"refusal names no rule: {plan.refusals[0].message}")


def test_observed_topics_only_with_auto_create_and_never_internal() -> None:
    observed = {
        "auto_t": orders(name="auto_t"),
        "SCHEDULE_TOPIC_XXXX": T("SCHEDULE_TOPIC_XXXX", 18, 18),
        "%RETRY%g": T("%RETRY%g", 1, 1),
        "broker-a": T("broker-a", 1, 1),
        "DefaultCluster_REPLY_TOPIC": T("DefaultCluster_REPLY_TOPIC", 1, 1),
        "rmq_sys_REVIVE_LOG_x": T("rmq_sys_REVIVE_LOG_x", 1, 1),
        "RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC": T("RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", 1, 1),
    }
    own = ["broker-a", "DefaultCluster"]
    assert [t.name for t in wanted_topics([], observed, False, own)] == []
    got = wanted_topics([orders()], observed, True, own)
    assert [(t.name, t.source) for t in got] == [("orders", "declared"), ("auto_t", "observed")]
    assert is_internal_topic("DefaultCluster", own) and not is_internal_topic("orders", own)


def test_a_new_master_without_the_topics_gets_every_one() -> None:
    """Re-assertion after a failover: the new master's table lacks both the declared and the observed topic."""
    wanted = wanted_topics([orders()], {"auto_t": orders(name="auto_t")}, True)
    plan = plan_topics(wanted, {})
    assert plan.creates == ("orders", "auto_t")
    assert all(a.kind is ActionKind.CREATE for a in plan.actions)


GROUP = ConsumerGroupFacts("readers")


@pytest.mark.parametrize(
    ("wanted", "have", "deleting", "expected"),
    [
        ([GROUP], {}, [], [("create", "readers")]),
        ([GROUP], {"readers": GROUP}, [], []),
        ([ConsumerGroupFacts("readers", retry_max_times=3)], {"readers": GROUP}, [], [("update", "readers")]),
        ([], {"readers": GROUP}, ["readers"], [("delete", "readers")]),
        ([], {"readers": GROUP}, [], []),
    ],
    ids=["missing", "same", "changed", "deleted", "undeclared-kept"],
)
def test_plan_consumer_groups(
    wanted: list[ConsumerGroupFacts],
    have: dict[str, ConsumerGroupFacts],
    deleting: list[str],
    expected: list[tuple[str, str]],
) -> None:
    plan = plan_consumer_groups(wanted, have, deleting)
    assert [(a.kind.value, a.name) for a in plan.actions] == expected


def test_declared_and_deleted_group_refused() -> None:
    plan = plan_consumer_groups([GROUP], {"readers": GROUP}, ["readers"])
    assert not plan.actions and "declared group is kept" in plan.refusals[0].message


def _bg(name: str, cluster: str = "DefaultCluster", auto: bool = False) -> BrokerGroup:
    return BrokerGroup.model_validate(
        {
            "metadata": {"name": name},
            "spec": {"clusterName": cluster, "controllerRef": {"name": "c"}, "autoCreate": {"topics": auto}},
        }
    )


def test_wanted_on_groups_by_name_and_by_cluster() -> None:
    brokers = [_bg("a"), _bg("b"), _bg("c", "Other", auto=True)]
    t1 = Topic.model_validate({"metadata": {"name": "t1"}, "spec": {"brokerGroups": ["a"], "messageType": "FIFO"}})
    t2 = Topic.model_validate({"metadata": {"name": "t2"}, "spec": {"clusterName": "DefaultCluster"}})
    g = ConsumerGroup.model_validate(
        {"metadata": {"name": "g"}, "spec": {"groupName": "G1", "brokerGroups": ["b"], "topics": ["t2"]}}
    )
    wanted = wanted_on_groups(brokers, [t1, t2], [g])
    assert [t.name for t in wanted["a"].topics] == ["t1", "t2"]
    assert [t.name for t in wanted["b"].topics] == ["t2"]
    assert wanted["c"].topics == [] and wanted["c"].auto_create_topics
    assert [x.name for x in wanted["b"].consumer_groups] == ["G1"] and wanted["b"].lag_topics == {"G1": ["t2"]}
    assert topic_facts(t1).attributes == {"message.type": "FIFO"} and topic_facts(t1).perm == 6


def test_observed_topics_survive_a_master_change_and_are_forgotten_when_deleted_on_the_same_master() -> None:
    made_by_mqadmin = orders(name="by_admin")
    seen = update_observed({}, {"by_admin": made_by_mqadmin, "broker-a": T("broker-a", 1, 1)}, False, ["broker-a"])
    assert list(seen) == ["by_admin"] and seen["by_admin"].source == "observed"
    # A new master without it: still wanted (re-created), whoever created it.
    after_failover = update_observed(seen, {}, same_master=False)
    assert plan_topics(wanted_topics([], after_failover, True), {}).creates == ("by_admin",)
    # The same master no longer has it: deleted on purpose, forgotten, never re-created.
    assert update_observed(seen, {}, same_master=True) == {}


# plan_carry_over: what the replica about to be master must be given before a switchover's election.
G = ConsumerGroupFacts
CARRY_CASES = [
    # id, master topics, target topics, master groups, target groups, expected [(kind, name)]
    ("nothing-missing", {"orders": orders()}, {"orders": orders()}, {}, {}, []),
    (
        "new-topic-copied",
        {"orders": orders(), "fresh": T("fresh", 4, 4)},
        {"orders": orders()},
        {},
        {},
        [("create", "fresh")],
    ),
    (
        "queue-change-copied",
        {"orders": orders(read_queue_nums=16, write_queue_nums=16)},
        {"orders": orders()},
        {},
        {},
        [("update", "orders")],
    ),
    ("retry-topic-copied", {"%RETRY%readers": T("%RETRY%readers", 1, 1)}, {}, {}, {}, [("create", "%RETRY%readers")]),
    ("system-topic-left-alone", {"TBW102": T("TBW102", 8, 8), "rmq_sys_x": T("rmq_sys_x", 1, 1)}, {}, {}, {}, []),
    ("target-extra-never-deleted", {}, {"orders": orders()}, {}, {"old": G("old")}, []),
    ("new-group-copied", {}, {}, {"readers": G("readers")}, {}, [("create", "readers")]),
    (
        "group-change-copied",
        {},
        {},
        {"readers": G("readers", retry_max_times=3)},
        {"readers": G("readers")},
        [("update", "readers")],
    ),
]


@pytest.mark.parametrize(
    ("master_topics", "target_topics", "master_groups", "target_groups", "expected"),
    [c[1:] for c in CARRY_CASES],
    ids=[c[0] for c in CARRY_CASES],
)
def test_plan_carry_over(
    master_topics: dict[str, TopicConfigFacts],
    target_topics: dict[str, TopicConfigFacts],
    master_groups: dict[str, ConsumerGroupFacts],
    target_groups: dict[str, ConsumerGroupFacts],
    expected: list[tuple[str, str]],
) -> None:
    plan = plan_carry_over(master_topics, target_topics, master_groups, target_groups)
    assert [(a.kind.value, a.name) for a in plan.actions] == expected
    assert not plan.refusals

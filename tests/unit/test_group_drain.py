"""The drain before a group's removal (`core.group_drain`): every decision from plain facts, refusals included."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.group_drain import (
    PERM_READ_ONLY,
    PERM_READ_WRITE,
    ROUTE_REFRESH_S,
    GroupDrainAction,
    GroupDrainFacts,
    lag_by_group,
    lag_pairs,
    plan_group_drain,
    show_lag,
)

W_OFF, W_ON, DOOR = GroupDrainAction.WRITE_OFF, GroupDrainAction.WRITE_ON, GroupDrainAction.SHUT_DOOR
NOW = 1_000.0
UP = {"master_reachable": True, "any_reachable": True}


def facts(**kw: object) -> GroupDrainFacts:
    return GroupDrainFacts(**{"draining": False, "removing": False, "now": NOW, **kw})  # type: ignore[arg-type]


# (name, facts, actions, active, drained, remove, held, words in the message)
# fmt: off
CASES = [
    ("serving, nothing asked", facts(**UP, permission=PERM_READ_WRITE), (), False, False, False, False, []),
    (
        "drain taken back: write on",
        facts(**UP, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - 5),
        (W_ON,), False, False, False, False, ["taken back"],
    ),
    (
        "removal refused after the door shut: write and door back",
        facts(**UP, permission=PERM_READ_ONLY, door_shut=True, recorded=True),
        (W_ON, GroupDrainAction.OPEN_DOOR), False, False, False, False, ["taken back"],
    ),
    (
        "drain taken back under a fence: the fence's owner gives write back",
        facts(**UP, permission=PERM_READ_ONLY, recorded=True, fence_held=True),
        (), False, False, False, False, [],
    ),
    (
        "drain taken back, master down: kept until it answers",
        facts(any_reachable=True, recorded=True), (), True, False, False, False, [],
    ),
    (
        "draining: write off first",
        facts(**UP, draining=True, permission=PERM_READ_WRITE, lag={"c": 5}),
        (W_OFF,), True, False, False, False, ["5 messages left", "c 5", "producers leave it within 30 s"],
    ),
    (
        "draining under a fence: its keys are the fence's",
        facts(**UP, draining=True, permission=PERM_READ_ONLY, fence_held=True, lag={}),
        (), True, False, False, False, ["route refresh"],
    ),
    (
        "draining, read-only, lag 0, producers may still have routes",
        facts(**UP, draining=True, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - 10, lag={"c": 0}),
        (), True, False, False, False, ["20 s more"],
    ),
    (
        "draining, read-only a route refresh ago, lag 0: drained",
        facts(
            **UP, draining=True, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - ROUTE_REFRESH_S,
            lag={"c": 0},
        ),
        (), True, True, False, False, ["drained", "safe to remove"],
    ),
    (
        "draining, lag unreadable",
        facts(**UP, draining=True, permission=PERM_READ_ONLY, lag=None),
        (), True, False, False, False, ["could not be read"],
    ),
    (
        "draining, no master answers",
        facts(any_reachable=True, draining=True), (), True, False, False, False, ["no master answers"],
    ),
    (
        "removed with unconsumed messages: held, with the fix",
        facts(**UP, removing=True, permission=PERM_READ_WRITE, lag={"orders-consumer": 1200, "audit": 34}),
        (W_OFF,), True, False, False, True,
        ["1,234 messages left", "orders-consumer 1,200, audit 34", "removal waits", "force-delete=true"],
    ),
    (
        "removed, nothing to consume: the door shut, read once more",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, lag={"c": 0}),
        (DOOR,), True, False, False, True, ["sends refused"],
    ),
    (
        "removed, write still on, nothing to consume: write off and the door in one pass",
        facts(**UP, removing=True, permission=PERM_READ_WRITE, lag={}),
        (W_OFF, DOOR), True, False, False, True, [],
    ),
    (
        "removed, door shut, a message slipped in before it: held until consumed",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, door_shut=True, lag={"c": 1}),
        (), True, False, False, True, ["1 messages left"],
    ),
    (
        "removed, door shut, lag still 0: removed",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, door_shut=True, lag={"c": 0}),
        (), True, True, True, False, ["removed"],
    ),
    (
        "removed, a user's fence holds it (door shut): removed once lag 0",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, fence_held=True, door_shut=True, lag={}),
        (), True, True, True, False, [],
    ),
    (
        "removed under a switchover's fence, nothing to consume: waits for the fence, no action",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, fence_held=True, lag={}),
        (), True, False, False, True, ["waits for the fence"],
    ),
    (
        "removed, master down, slaves answer: held",
        facts(any_reachable=True, removing=True), (), True, False, False, True, ["removal waits"],
    ),
    (
        "removed, nothing answers: removed, said so",
        facts(removing=True), (), True, False, True, False, ["no replica answers", "reclaimPolicy"],
    ),
    (
        "removal forced with a lag: removed, names what is dropped",
        facts(**UP, removing=True, forced=True, permission=PERM_READ_WRITE, lag={"c": 7}),
        (), True, False, True, False, ["forced", "7 unconsumed messages are dropped (c 7)"],
    ),
    (
        "removed, the drain deadline passed with a lag: removed, names what is dropped",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - 600,
              deadline_s=600, lag={"c": 9}),
        (), True, False, True, False, ["deadline of 600 s", "9 unconsumed messages are dropped (c 9)"],
    ),
    (
        "removed, the drain deadline not passed yet: held",
        facts(**UP, removing=True, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - 599,
              deadline_s=600, lag={"c": 9}),
        (), True, False, False, True, ["removal waits"],
    ),
    (
        "removal forced, lag unread",
        facts(removing=True, forced=True), (), True, False, True, False, ["could not be read"],
    ),
]

# fmt: on


@pytest.mark.parametrize(
    ("facts_", "actions", "active", "drained", "remove", "held", "words"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_plan_group_drain(
    facts_: GroupDrainFacts,
    actions: tuple[GroupDrainAction, ...],
    active: bool,
    drained: bool,
    remove: bool,
    held: bool,
    words: list[str],
) -> None:
    plan = plan_group_drain(facts_, group="broker-b")
    assert plan.actions == actions
    assert (plan.active, plan.drained, plan.remove, plan.held) == (active, drained, remove, held)
    for w in words:
        assert w in plan.message
    if held and "nothing left to consume" not in plan.message:
        assert "fix:" in plan.message


def test_since_is_kept_once_read_only_and_starts_on_first_sight() -> None:
    first = plan_group_drain(facts(**UP, draining=True, permission=PERM_READ_ONLY, lag={}), group="g")
    assert first.since == NOW
    kept = plan_group_drain(
        facts(**UP, draining=True, permission=PERM_READ_ONLY, recorded=True, recorded_since=NOW - 3, lag={}),
        group="g",
    )
    assert kept.since == NOW - 3
    writable_again = plan_group_drain(
        facts(**UP, draining=True, permission=PERM_READ_WRITE, recorded=True, recorded_since=NOW - 3, lag={}),
        group="g",
    )
    assert writable_again.since is None  # written on again (a restart, an unfence): the route wait starts over
    assert writable_again.actions == (W_OFF,)


def test_lag_counts_every_queue_of_a_read_topic_from_the_committed_or_the_min_offset() -> None:
    table = {
        "orders@c1": {"0": 5},  # queue 1 never committed: from its min offset
        "%RETRY%c1@c1": {"0": 0},
        "orders@c2": {"0": 8, "1": 10},
        "rmq_sys_REVIVE_LOG_DefaultCluster@CID_RMQ_SYS_REVIVE_GROUP": {"0": 1},
        "gone@c3": {"0": 1},  # a topic the broker no longer holds
        "no-separator": {"0": 1},
    }
    queue_nums = {"orders": 2, "%RETRY%c1": 1, "rmq_sys_REVIVE_LOG_DefaultCluster": 1, "audit": 1}
    highs = {("orders", 0): 8, ("orders", 1): 10, ("%RETRY%c1", 0): 2, ("rmq_sys_REVIVE_LOG_DefaultCluster", 0): 9,
             ("audit", 0): 7}  # fmt: skip
    lows = {("orders", 0): 0, ("orders", 1): 4, ("%RETRY%c1", 0): 0, ("audit", 0): 3}
    # c4 is declared on audit and never read this group: all it still stores is unread.
    pairs = lag_pairs(table, declared=[("audit", "c4")])
    assert ("audit", "c4") in pairs and ("%RETRY%c4", "c4") in pairs
    assert not any(g.startswith("CID_RMQ_SYS_") for _, g in pairs)
    assert lag_by_group(table, pairs, queue_nums, highs, lows) == {"c1": 3 + 6 + 2, "c2": 0, "c3": 0, "c4": 4}


def test_show_lag_largest_first_zero_left_out() -> None:
    assert show_lag({"a": 3, "b": 0, "c": 1_200}) == "c 1,200, a 3"

"""The user's fence (annotation rocketmq-operator.dev/fence, `kubectl rocketmq fence`): the pure plan
(core.fence), its executor (control.fence.run_fences) and the Kubernetes group pass that keeps it: fenced with the
switchover's fence_config, again after a restart, never undone by the hot keys, avoided by the switchover and the
roll, and unfenced from the record in status once the annotation no longer names the replica."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from test_kubernetes_passes import (  # the group pass's fakes and fixture
    ADDR,
    FakeBrokers,
    api,
    body,
    conditions,
    group,
    healthy,
    pods,
    run_pass,
    with_revisions,
)

from rocketmq_operator.control import switchover as control_switchover
from rocketmq_operator.control.fence import (
    DROP_SLAVES,
    fence_config,
    fence_lease_expired,
    hot_changes_past_fence,
    is_fenced,
    run_fences,
    switchover_fence_config,
)
from rocketmq_operator.core.fence import FenceFacts, FencePlan, parse_fence_annotation, plan_fences
from rocketmq_operator.platforms.kubernetes.group_memory import GroupMemory
from rocketmq_operator.platforms.kubernetes.reconcile import reconcile
from rocketmq_operator.render.kubernetes.names import ANNOTATION_FENCE, ANNOTATION_SWITCHOVER_TO

__all__ = ["group"]  # the fixture, used by name
KNOWN = ("g-0", "g-1", "g-2")
UP, FENCED, DOWN = FenceFacts(True), FenceFacts(True, fenced=True), FenceFacts(False)


@pytest.mark.parametrize(
    ("wanted", "recorded", "observed", "plan"),
    [
        # asked, answers unfenced: fenced
        ({"g-1"}, [], {"g-1": UP}, FencePlan(("g-1",), (), ("g-1",), ())),
        # asked and fenced already: nothing to do
        ({"g-1"}, ["g-1"], {"g-1": FENCED}, FencePlan((), (), ("g-1",), ())),
        # restarted (its runtime config is gone): fenced again
        ({"g-1"}, ["g-1"], {"g-1": UP}, FencePlan(("g-1",), (), ("g-1",), ())),
        # no longer asked: unfenced; gone from the record
        (set(), ["g-1"], {"g-1": FENCED}, FencePlan((), ("g-1",), (), ())),
        # no longer asked and restarted since: nothing to give back
        (set(), ["g-1"], {"g-1": UP}, FencePlan((), (), (), ())),
        # no longer asked and scaled in: dropped
        (set(), ["g-7"], {}, FencePlan((), (), (), ())),
    ],
)
def test_plan_fences(wanted: set[str], recorded: list[str], observed: dict[str, FenceFacts], plan: FencePlan) -> None:
    assert plan_fences(wanted, recorded, KNOWN, observed) == plan


def test_plan_fences_problems() -> None:
    plan = plan_fences({"g-1", "g-9"}, [], KNOWN, {"g-1": DOWN})
    assert plan.fence == () and plan.fenced == ()
    assert plan.problems == (
        "g-1 does not answer: it is fenced as soon as it does",
        "annotation rocketmq-operator.dev/fence: 'g-9' is not a replica of the group (replicas: g-0, g-1, g-2); "
        "fix: name one of its pods",
    )
    # A recorded fence whose replica does not answer stays recorded: unfenced when it answers.
    plan = plan_fences(set(), ["g-2"], KNOWN, {"g-2": DOWN})
    assert plan.fenced == ("g-2",) and plan.unfence == () and "unfenced as soon as it does" in plan.problems[0]
    assert parse_fence_annotation(" g-1, ,g-2,g-1 ") == frozenset({"g-1", "g-2"})
    assert parse_fence_annotation(None) == frozenset()


def test_run_fences_uses_the_switchover_fence_and_gives_the_values_back() -> None:
    brokers = FakeBrokers()
    state = healthy()
    out = asyncio.run(run_fences(brokers, state, {"broker-a-1"}, [], KNOWN, min_in_sync_replicas=2))  # type: ignore[arg-type]
    assert brokers.updates == [(ADDR[1], fence_config())] and out.fenced == ["broker-a-1"] and not out.problems
    assert is_fenced(brokers.configs[ADDR[1]])
    out = asyncio.run(run_fences(brokers, state, set(), ["broker-a-1"], KNOWN, min_in_sync_replicas=2))  # type: ignore[arg-type]
    assert out.fenced == [] and out.steps[0].startswith("unfenced broker-a-1")
    assert brokers.configs[ADDR[1]]["brokerPermission"] == "6" and brokers.configs[ADDR[1]]["minInSyncReplicas"] == "2"


def test_a_user_fence_replaces_a_switchovers_lease() -> None:
    # A switchover's fence lapses (the replication policy gives it back): a replica the user fences must carry the
    # user's fence, which never lapses.
    brokers = FakeBrokers()
    brokers.configs[ADDR[1]] = switchover_fence_config()
    out = asyncio.run(run_fences(brokers, healthy(), {"broker-a-1"}, [], KNOWN, min_in_sync_replicas=2))  # type: ignore[arg-type]
    assert brokers.updates == [(ADDR[1], fence_config())] and out.fenced == ["broker-a-1"]
    assert not fence_lease_expired(brokers.configs[ADDR[1]], now_s=4_000_000_000.0)


def test_run_fences_keeps_the_record_when_the_unfence_fails() -> None:
    class Refusing(FakeBrokers):
        async def update_broker_config(self, addr: str, config: dict[str, str], **_: Any) -> None:
            raise OSError("connection reset")

    brokers = Refusing()
    brokers.configs[ADDR[1]] = fence_config()
    out = asyncio.run(run_fences(brokers, healthy(), set(), ["broker-a-1"], KNOWN, min_in_sync_replicas=2))  # type: ignore[arg-type]
    assert out.fenced == ["broker-a-1"] and "could not be unfenced" in out.problems[0]


# --- the Kubernetes group pass ---


def annotate(fake: Any, key: str, value: str | None) -> None:
    bg = body(fake, "BrokerGroup", "broker-a")
    annotations = bg["metadata"].setdefault("annotations", {})
    if value is None:
        annotations.pop(key, None)
    else:
        annotations[key] = value
    fake.put(bg)


def fence_writes(brokers: FakeBrokers, addr: str) -> list[dict[str, str]]:
    keys = set(fence_config())
    return [{k: v for k, v in c.items() if k in keys} for a, c in brokers.updates if a == addr and keys & set(c)]


def test_the_group_pass_keeps_a_fence_and_gives_it_back(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    brokers = FakeBrokers()
    memory = GroupMemory()
    run_pass(fake, brokers, memory)  # the hot keys converge first
    brokers.updates.clear()
    group["events"].clear()

    annotate(fake, ANNOTATION_FENCE, "broker-a-1")
    run_pass(fake, brokers, memory)
    assert fence_writes(brokers, ADDR[1]) == [fence_config()]  # and the hot keys did not undo it
    bg = body(fake, "BrokerGroup", "broker-a")
    assert bg["status"]["fenced"] == ["broker-a-1"] and conditions(bg)["Fence"] == ("True", "Fenced")
    assert conditions(bg)["Ready"][0] == "True"  # the observer's conditions are kept
    assert [e["reason"] for e in group["events"]] == ["Fenced"]

    writes = fake.writes
    brokers.updates.clear()
    run_pass(fake, brokers, memory)
    assert fence_writes(brokers, ADDR[1]) == [] and fake.writes == writes  # fenced already: nothing written

    brokers.configs[ADDR[1]] = {}  # the broker restarted: its runtime config is the rendered one
    run_pass(fake, brokers, memory)
    assert fence_writes(brokers, ADDR[1]) == [fence_config()]

    annotate(fake, ANNOTATION_FENCE, None)
    brokers.updates.clear()
    run_pass(fake, brokers, memory)
    assert fence_writes(brokers, ADDR[1])[0]["brokerPermission"] == "6"
    bg = body(fake, "BrokerGroup", "broker-a")
    assert "fenced" not in bg["status"] and "Fence" not in conditions(bg)


def test_a_fence_the_pass_cannot_apply_is_a_condition(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    state = healthy()
    group["state"] = dataclasses.replace(
        state, replicas=tuple(dataclasses.replace(r, reachable=r.name != "broker-a-2") for r in state.replicas)
    )
    annotate(fake, ANNOTATION_FENCE, "broker-a-2,broker-b-0")
    run_pass(fake, FakeBrokers())
    bg = body(fake, "BrokerGroup", "broker-a")
    fence = next(c for c in bg["status"]["conditions"] if c["type"] == "Fence")
    assert (fence["status"], fence["reason"]) == ("False", "FencePending")
    assert "broker-a-2 does not answer" in fence["message"] and "'broker-b-0' is not a replica" in fence["message"]


def test_the_switchover_annotation_refuses_a_fenced_target(
    group: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    async def switchover(*args: Any, **_: Any) -> Any:
        calls.append(args[5])

    monkeypatch.setattr(control_switchover, "switchover", switchover)
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    annotate(fake, ANNOTATION_FENCE, "broker-a-2")
    annotate(fake, ANNOTATION_SWITCHOVER_TO, "broker-a-2")
    run_pass(fake, FakeBrokers())
    assert calls == []
    bg = body(fake, "BrokerGroup", "broker-a")
    outcome = next(c for c in bg["status"]["conditions"] if c["type"] == "Switchover")
    assert outcome["reason"] == "InvalidTarget" and "broker-a-2 is fenced" in outcome["message"]
    assert ANNOTATION_SWITCHOVER_TO not in bg["metadata"]["annotations"]


def test_the_roll_waits_while_a_replica_is_fenced(group: dict[str, Any]) -> None:
    fake = api("ControllerGroup", "BrokerGroup")
    pods(fake)
    asyncio.run(reconcile(fake, body(fake, "BrokerGroup", "broker-a")))  # type: ignore[arg-type]
    with_revisions(fake, {0: "r1", 1: "r1", 2: "r1"}, "r2")
    annotate(fake, ANNOTATION_FENCE, "broker-a-1")
    brokers = FakeBrokers()
    memory = GroupMemory()
    run_pass(fake, brokers, memory)
    assert fake.writes_of("delete") == []
    annotate(fake, ANNOTATION_FENCE, None)
    run_pass(fake, brokers, memory)  # unfenced
    run_pass(fake, brokers, memory)
    assert fake.writes_of("delete") == [("Pod", "broker-a-2")]  # the roll goes on


NOW_MS = 1_800_000_000_000
RENDERED_HOT = {
    "brokerPermission": "6",
    "minInSyncReplicas": "2",
    "haSendHeartbeatInterval": "1000",
    "flushDiskType": "x",
}


@pytest.mark.parametrize(
    ("live", "user_fenced", "want"),
    [
        # no fence: every key that differs is written
        ({**RENDERED_HOT, "minInSyncReplicas": "1"}, False, {"minInSyncReplicas": "2"}),
        # a lease agent's fence, its door shut past now: none of the fence's keys, the rest still
        (
            {**fence_config(NOW_MS + 4_000), **DROP_SLAVES, "flushDiskType": "y"},
            False,
            {"flushDiskType": "x"},
        ),
        # the user's fence (the door shut forever) or a fence named by the user: the same
        ({**fence_config(), "flushDiskType": "x"}, False, {}),
        ({**RENDERED_HOT, "brokerPermission": "4"}, True, {}),
        # a door that shut in the past is no fence any more: the rendered values come back
        (
            {**fence_config(NOW_MS - 1), "flushDiskType": "x"},
            False,
            {"brokerPermission": "6", "minInSyncReplicas": "2", "haSendHeartbeatInterval": "1000"},
        ),
    ],
)
def test_hot_changes_leave_a_fence_that_holds_to_its_owner(
    live: dict[str, str], user_fenced: bool, want: dict[str, str]
) -> None:
    assert hot_changes_past_fence(RENDERED_HOT, live, user_fenced=user_fenced, now_ms=NOW_MS) == want

"""The one group pass (control/group_pass.py): which steps run, in which order, for every outcome of the steps
before them; and both platforms' steps are the same named steps (Kubernetes and local)."""

from __future__ import annotations

import asyncio
import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rocketmq_operator.control import group_pass as gp
from rocketmq_operator.control.policy import PolicyOutcome
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.platforms.kubernetes.group_pass import KubernetesPassSteps
from rocketmq_operator.platforms.local import supervisor as local_supervisor
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.supervisor import LocalPassSteps

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Recording:
    """Steps that record their calls and return the outcomes they are given."""

    fenced: frozenset[str] = frozenset()
    asked: bool = False
    switchover_waits: bool = False  # the switchover asked for cannot be tried yet (the state unreadable)
    policy_acted: bool = False
    drain_acted: bool = False
    topics: bool = True
    calls: list[str] = field(default_factory=list)
    converged_with: frozenset[str] | None = None
    published_with: bool | None = None

    async def user_fences(self) -> frozenset[str]:
        self.calls.append(gp.USER_FENCES)
        return self.fenced

    def switchover_asked(self) -> bool:
        return self.asked

    async def planned_switchover(self, fenced: frozenset[str]) -> bool:
        self.calls.append(gp.PLANNED_SWITCHOVER)
        return not self.switchover_waits

    async def replication_policy(self) -> bool:
        self.calls.append(gp.REPLICATION_POLICY)
        return self.policy_acted

    async def drain(self) -> bool:
        self.calls.append(gp.DRAIN)
        return self.drain_acted

    async def converge(self, fenced: frozenset[str]) -> None:
        self.calls.append(gp.CONVERGE)
        self.converged_with = fenced

    async def users_and_topics(self) -> bool:
        self.calls.append(gp.USERS_AND_TOPICS)
        return self.topics

    async def group_drain(self) -> None:
        self.calls.append(gp.GROUP_DRAIN)

    async def publish(self, topics_asserted: bool) -> None:
        self.calls.append(gp.PUBLISH)
        self.published_with = topics_asserted

    async def platform(self) -> None:
        self.calls.append(gp.PLATFORM)


F, S, P, D, C = gp.USER_FENCES, gp.PLANNED_SWITCHOVER, gp.REPLICATION_POLICY, gp.DRAIN, gp.CONVERGE
TAIL = [gp.USERS_AND_TOPICS, gp.GROUP_DRAIN, gp.PUBLISH, gp.PLATFORM]


@pytest.mark.parametrize(
    ("steps", "controller_mode", "blocked", "expected"),
    [
        pytest.param(Recording(), True, False, [F, P, D, C, *TAIL], id="nothing-to-do-converges"),
        pytest.param(Recording(policy_acted=True), True, False, [F, P, *TAIL], id="policy-acted-no-roll"),
        pytest.param(Recording(drain_acted=True), True, False, [F, P, D, *TAIL], id="drain-acted-no-roll"),
        pytest.param(Recording(asked=True), True, False, [F, S, *TAIL], id="asked-switchover-instead-of-policy"),
        # A switchover that waits (the controller unreadable): the policy still runs (deposed masters need no
        # controller to be fenced), and the roll.
        pytest.param(
            Recording(asked=True, switchover_waits=True), True, False, [F, S, P, D, C, *TAIL], id="switchover-waits"
        ),
        pytest.param(Recording(), True, True, [F, P, *TAIL], id="blocked-spec-policy-only"),
        pytest.param(Recording(asked=True), False, False, [F, *TAIL], id="not-controller-mode"),
    ],
)
def test_the_steps_and_their_order(steps: Recording, controller_mode: bool, blocked: bool, expected: list[str]) -> None:
    record = asyncio.run(gp.run_group_pass(steps, controller_mode=controller_mode, blocked=blocked))
    assert steps.calls == expected
    assert record.steps == expected


def test_users_and_topics_come_after_the_fence_and_the_failover() -> None:
    """Both ask the master: a hung or deposed master is fenced before any request to it can time out."""
    steps = Recording(policy_acted=True)
    asyncio.run(gp.run_group_pass(steps, controller_mode=True, blocked=False))
    assert steps.calls.index(gp.REPLICATION_POLICY) < steps.calls.index(gp.USERS_AND_TOPICS)


def test_the_fenced_replicas_reach_the_roll_and_the_topics_reach_the_status() -> None:
    steps = Recording(fenced=frozenset({"broker-a-1"}), topics=False)
    record = asyncio.run(gp.run_group_pass(steps, controller_mode=True, blocked=False))
    assert steps.converged_with == frozenset({"broker-a-1"}) == record.fenced
    assert steps.published_with is False and record.topics_asserted is False


def _step_names(cls: type) -> set[str]:
    return {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and inspect.isfunction(v)}


@pytest.mark.parametrize("platform", [KubernetesPassSteps, LocalPassSteps])
def test_both_platforms_have_every_step_of_the_one_pass(platform: type) -> None:
    wanted = _step_names(gp.GroupPassSteps)
    assert wanted <= _step_names(platform), wanted - _step_names(platform)
    for name in wanted:
        assert inspect.iscoroutinefunction(getattr(platform, name)) == inspect.iscoroutinefunction(
            getattr(gp.GroupPassSteps, name)
        ), name


def test_every_pass_runs_its_steps_in_the_order_of_pass_order() -> None:
    for steps in (Recording(), Recording(asked=True), Recording(policy_acted=True)):
        record = asyncio.run(gp.run_group_pass(steps, controller_mode=True, blocked=False))
        positions = [gp.PASS_ORDER.index(s) for s in record.steps]
        assert positions == sorted(positions), record.steps


def test_docs_architecture_lists_the_pass_exactly_as_the_code_runs_it() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## One pass over a group", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\d+\. `([a-z-]+)`", section, flags=re.MULTILINE)
    assert tuple(listed) == gp.PASS_ORDER


class LocalRecorder:
    """The local supervisor's parts a pass calls, recording the calls."""

    def __init__(self, calls: list[str], layout: Any = None) -> None:
        self.policy_memory: dict[str, Any] = {}
        self.layout = layout
        self.state = SimpleNamespace(resources=[])
        self.roll = SimpleNamespace(run=self._roll)
        self.auth_policy = SimpleNamespace(run=self._auth)
        self.topic_policy = SimpleNamespace(run=self._topics)
        self.calls = calls

    async def _roll(self, *_: Any) -> None:
        self.calls.append("roll")

    async def _auth(self, *_: Any) -> None:
        self.calls.append("users")

    async def _topics(self, *_: Any) -> None:
        self.calls.append("topics")


@pytest.mark.parametrize(
    ("acted", "expected"), [(False, ["policy", "roll", "users", "topics"]), (True, ["policy", "users", "topics"])]
)
def test_the_local_supervisor_runs_the_one_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, acted: bool, expected: list[str]
) -> None:
    calls: list[str] = []

    async def run_replication_policy(*_: Any, **__: Any) -> PolicyOutcome:
        calls.append("policy")
        return PolicyOutcome(steps=["fenced a replica"] if acted else [])

    monkeypatch.setattr(local_supervisor, "run_replication_policy", run_replication_policy)
    group = GroupState(group="broker-a", observed_at=0.0, controller_mode=True)
    steps = LocalPassSteps(LocalRecorder(calls, StateLayout(tmp_path)), None, "broker-a", group, object(), 1.0)  # type: ignore[arg-type]
    record = asyncio.run(gp.run_group_pass(steps, controller_mode=steps.controller_mode, blocked=False))
    assert calls == expected
    # The steps the local platform does not have (no user fence, no drain, no storage) run and do nothing.
    ran = [gp.USER_FENCES, gp.REPLICATION_POLICY] + ([] if acted else [gp.DRAIN, gp.CONVERGE])
    assert record.steps == [*ran, *TAIL]

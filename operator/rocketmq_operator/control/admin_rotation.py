"""The admin rotation's pass (`core.admin_rotation`): its one executor (the Kubernetes group pass runs it; the local
platform refuses an admin change for now, `platforms.local.auth.refuse_admin_change`).

Contract: `rotate_admin(client, state, declared, configured, retiring, platform, now, replicas)` runs one pass of
the rotation against a group of ``replicas`` replicas (a step that needs all of them waits while one is away),
with the client signing as the plan's `sign_as` (the caller signs with `RotationOutcome.sign_as` afterwards):

* while the declared admin differs from the configured one, it is asserted as a Super user on every replica
  (`control.auth.assert_users` with a fresh memory, so every replica is read this pass); once every replica is
  reachable and holds it, the plan switches: `platform.write_config(admin)` makes brokers (and proxies) started
  from now on use it, and the old admin joins the retiring record;
* a retiring admin is deleted from every replica once `platform.started_before(since)` counts no process started
  before its switch; it leaves the record only when every replica confirmed it gone.

`RotationOutcome` carries the plan, the record after the pass (for the platform's status) and log lines (names
only: no password is formatted anywhere here). Never raises for a broker that does not answer: the next pass
tries again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Protocol

from rocketmq_operator.control.auth import AuthMemory, assert_users
from rocketmq_operator.core.admin_rotation import (
    AdminCredential,
    AdminFacts,
    AdminPhase,
    AdminPlan,
    RetiringAdmin,
    plan_admin,
    settle_retiring,
)
from rocketmq_operator.core.auth import WantedUser
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.remoting import RemotingClient


class RotationPlatform(Protocol):
    async def write_config(self, admin: AdminCredential) -> None:
        """The credentials brokers and proxies of the group start with from now on."""

    async def started_before(self, since: float) -> int:
        """Processes of the group (brokers, proxies) started before ``since`` and still running, which may still
        sign as an admin retired since."""


@dataclass
class RotationOutcome:
    plan: AdminPlan
    retiring: tuple[RetiringAdmin, ...]
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def sign_as(self) -> AdminCredential | None:
        return self.plan.sign_as


def _every_replica(state: GroupState, replicas: int) -> bool:
    """Every one of the group's ``replicas`` observed, and reachable."""
    return len(state.replicas) >= max(1, replicas) and all(r.reachable for r in state.replicas)


async def rotate_admin(
    client: RemotingClient,
    state: GroupState,
    declared: AdminCredential | None,
    configured: AdminCredential | None,
    retiring: tuple[RetiringAdmin, ...],
    platform: RotationPlatform,
    now: float,
    replicas: int,
) -> RotationOutcome:
    started = {r.user: await platform.started_before(r.since) for r in retiring}
    facts = AdminFacts(declared, configured, retiring, started_before=started)
    plan = plan_admin(facts, now)
    outcome = RotationOutcome(plan, plan.retiring)
    if plan.phase is AdminPhase.ROTATING and plan.assert_admin is not None:
        admin = plan.assert_admin
        report = await assert_users(client, state, [WantedUser(admin.user, admin.password, "Super")], AuthMemory())
        outcome.lines.extend(report.done)
        outcome.problems.extend(report.errors)
        everywhere = (
            _every_replica(state, replicas) and len(report.asserted) == len(state.replicas) and not report.errors
        )
        if everywhere:
            plan = plan_admin(dataclasses.replace(facts, declared_everywhere=True), now)
            outcome.plan, outcome.retiring = plan, plan.retiring
    if plan.phase is AdminPhase.SWITCHED and plan.config is not None:
        await platform.write_config(plan.config)
    if plan.remove:
        report = await assert_users(client, state, [], AuthMemory(), removing=plan.remove)
        outcome.lines.extend(report.done)
        outcome.problems.extend(report.errors)
        # A replica away now (a pod being re-created) keeps the user in its store: confirmed only with all of them.
        everyone = _every_replica(state, replicas)
        confirmed = [user for user in plan.remove if everyone and not report.removal_left.get(user)]
        outcome.retiring = settle_retiring(outcome.retiring, confirmed)
    return outcome

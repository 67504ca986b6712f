"""One pass over one broker group, written once: the steps and their order both platforms run every pass.

Contract:

* `GroupPassSteps` is what a platform does for each named step, over the group it observed at the start of
  the pass. A step a platform does not have returns its "nothing" (no fence, no switchover asked, not acted).
* `run_group_pass(steps, controller_mode=..., blocked=...)` runs them in this order and returns the names of
  the steps it ran (`PassRecord`):
  1. `user-fences`: before anything that could promote a fenced replica or undo its fence; the replicas fenced
     or asked to be go to `converge`, which leaves them alone (outside controller mode the step only reports
     that fences need it).
  2. in controller mode, either the `planned-switchover` the user asked for (when it waits, the state being
     unreadable, the pass goes on as if none was asked), or the `replication-policy`
     (deposed masters, failover: fence first, then elect; re-attach; routes); if it did nothing, the `drain`
     switchover; if neither did anything and the spec can be applied (`blocked` false), `converge` (hot keys,
     one roll step). A pass that acted on the group's roles changes nothing else about them: the next pass
     observes the new roles first.
  3. `users-and-topics`: users and ACLs, then topics and consumer groups, on every replica or the master. After
     the fence and the failover: both ask the master, and a hung or deposed master must be fenced without
     waiting for the timeouts of requests to it first. A master elected in this pass gets them in the next.
  4. `group-drain`: the drain of a group asked to drain or being removed (write permission off, the lag, the send
     door; `control.group_drain`), after the topics (a removal reads the lag of what they hold), before the status
     that reports it.
  5. `publish`: status, metrics, events and whatever the platform derives from the observation, knowing
     whether the topics are asserted (a group is reported writable only once they are).
  6. `platform`: the platform's own steps (Kubernetes: storage growth, then node loss), last, so that none of
     them can keep the steps above from running.
* Every step is the platform's; this module decides only which run and in what order. It does no I/O itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

USER_FENCES = "user-fences"
PLANNED_SWITCHOVER = "planned-switchover"
REPLICATION_POLICY = "replication-policy"
DRAIN = "drain"
CONVERGE = "converge"
USERS_AND_TOPICS = "users-and-topics"
GROUP_DRAIN = "group-drain"
PUBLISH = "publish"
PLATFORM = "platform"
PASS_ORDER = (
    USER_FENCES, PLANNED_SWITCHOVER, REPLICATION_POLICY, DRAIN, CONVERGE, USERS_AND_TOPICS, GROUP_DRAIN, PUBLISH,
    PLATFORM,
)  # fmt: skip
"""Every step in the order a pass may run them (a pass runs a prefix-respecting subset: `run_group_pass`)."""


class GroupPassSteps(Protocol):
    """One platform's steps for one group in one pass (see the module's contract for what each is for)."""

    async def user_fences(self) -> frozenset[str]:
        """Carry out the user's fences; the replicas fenced or asked to be."""
        ...

    def switchover_asked(self) -> bool:
        """Whether the user asked for a switchover that this pass should run."""
        ...

    async def planned_switchover(self, fenced: frozenset[str]) -> bool:
        """The switchover the user asked for (never to a fenced replica); False when it could not be tried yet
        (the state unreadable: the request is kept), and the pass goes on as if none was asked."""
        ...

    async def replication_policy(self) -> bool:
        """Fence deposed masters, fail over, re-attach, re-register; whether it acted."""
        ...

    async def drain(self) -> bool:
        """The switchover away from a master whose node is drained; whether it acted."""
        ...

    async def converge(self, fenced: frozenset[str]) -> None:
        """Hot keys, then one roll step; fenced replicas are left alone (the roll waits for them)."""
        ...

    async def users_and_topics(self) -> bool:
        """Users and ACLs, then topics and consumer groups; whether every topic is asserted."""
        ...

    async def group_drain(self) -> None:
        """The drain of a group asked to drain or being removed; what it found is the publish step's."""
        ...

    async def publish(self, topics_asserted: bool) -> None:
        """Status, metrics, events and pod facts from this pass's observation."""
        ...

    async def platform(self) -> None:
        """The platform's own steps."""
        ...


@dataclass
class PassRecord:
    """What one pass did: the steps it ran, in order."""

    steps: list[str] = field(default_factory=list)
    fenced: frozenset[str] = frozenset()
    acted: bool = False
    topics_asserted: bool = False


async def run_group_pass(steps: GroupPassSteps, *, controller_mode: bool, blocked: bool) -> PassRecord:
    """Run one pass over a group: the steps of `steps` in the one order (module docstring)."""
    record = PassRecord()
    record.steps.append(USER_FENCES)
    record.fenced = await steps.user_fences()
    if controller_mode:
        switched = False
        if steps.switchover_asked():
            record.steps.append(PLANNED_SWITCHOVER)
            switched = record.acted = await steps.planned_switchover(record.fenced)
        if not switched:
            record.steps.append(REPLICATION_POLICY)
            record.acted = await steps.replication_policy()
            if not record.acted and not blocked:
                record.steps.append(DRAIN)
                record.acted = await steps.drain()
            if not record.acted and not blocked:
                record.steps.append(CONVERGE)
                await steps.converge(record.fenced)
    record.steps.append(USERS_AND_TOPICS)
    record.topics_asserted = await steps.users_and_topics()
    record.steps.append(GROUP_DRAIN)
    await steps.group_drain()
    record.steps.append(PUBLISH)
    await steps.publish(record.topics_asserted)
    record.steps.append(PLATFORM)
    await steps.platform()
    return record

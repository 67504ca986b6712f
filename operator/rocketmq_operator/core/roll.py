"""The rolling-restart planner: which replica to restart next, and when to wait or stop. Pure.

Contract: `plan_roll(facts)` looks at one observation of a controller-mode group plus what the roll remembers
(`RollFacts`) and returns exactly one `RollStep`:

* `Restart(replica)`: restart one replica onto its desired revision;
* `Switchover(target)`: move the master to the most caught-up in-sync slave that already runs the desired
  revision; the old master, a slave from then on, is restarted by a later step like any other slave;
* `Wait(reason)`: nothing to do this pass (a restarted replica is not back and level yet, approval missing,
  paused, controller unreadable);
* `Blocked(reason, fix)`: the roll cannot go on safely; shown as the `RolloutBlocked` condition, never retried
  in a loop (a wait that lasts longer than `timeout_s` becomes Blocked too);
* `Done`: every replica runs its desired revision and is back in the SyncStateSet.

Order (Strimzi's KafkaRoller, CloudNativePG's rolling update): replicas that are unready or outside the
SyncStateSet first (restarting them cannot shrink the set), then in-sync slaves one at a time, the master last
after a planned switchover (`strategy: switchover`), a plain restart (`restart`), or a switchover once the
approval annotation is there (`supervised`). A restart never leaves the SyncStateSet below the durability floor
(`minInSyncReplicas`: puts are refused below it); with `allAckInSyncStateSet` every member must ack each put, so
no member is restarted while another member is down.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, TypeVar

PAUSE_ANNOTATION = "rocketmq-operator.dev/rollout-paused"
APPROVE_ANNOTATION = "rocketmq-operator.dev/rollout-approve-master"
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_LEVEL_GAP_BYTES = 4 * 1024 * 1024


class StepKind(StrEnum):
    RESTART = "Restart"
    SWITCHOVER = "Switchover"
    WAIT = "Wait"
    BLOCKED = "Blocked"
    DONE = "Done"
    REMOVE = "Remove"  # a scale-in: stop the replica for good and forget it


class Strategy(StrEnum):
    SWITCHOVER = "switchover"
    RESTART = "restart"
    SUPERVISED = "supervised"


@dataclass(frozen=True)
class RollReplica:
    name: str  # pod or local replica name
    current_revision: str  # what its running process was started from
    desired_revision: str
    alive: bool
    broker_id: int | None = None  # controller-assigned; None until it registered
    is_master: bool | None = None  # the role the broker reports
    max_offset: int | None = None
    node: str | None = None  # the node its pod runs on (Kubernetes); None: not known or not on a node

    @property
    def pending(self) -> bool:
        return self.current_revision != self.desired_revision


@dataclass(frozen=True)
class RollFacts:
    now: float
    controller_reachable: bool
    master_broker_id: int | None
    sync_state_set: tuple[int, ...]
    replicas: tuple[RollReplica, ...]
    min_in_sync_replicas: int
    all_ack_in_sync_state_set: bool = False
    strategy: str = Strategy.SWITCHOVER.value
    paused: bool = False
    master_approved: bool = False  # supervised: the approval annotation names the desired revision
    last_restarted: str | None = None  # the replica the previous step restarted (None: none pending a check)
    waiting_since: float | None = None  # when the current run of Wait steps began
    switched_from: str | None = None  # the old master, after the roll's switchover (rejoins as a slave first)
    removing: frozenset[str] = frozenset()  # replicas a scale-in removes (highest ordinals)
    timeout_s: float = DEFAULT_TIMEOUT_S
    level_gap_bytes: int = DEFAULT_LEVEL_GAP_BYTES


@dataclass(frozen=True)
class RollStep:
    kind: StepKind
    replica: str | None = None  # Restart: the replica; Switchover: the current master
    target_broker_id: int | None = None  # Switchover: the new master
    reason: str = ""  # CamelCase, for conditions and Events
    message: str = ""
    fix: str = ""

    @property
    def text(self) -> str:
        return f"{self.message}; fix: {self.fix}" if self.fix else self.message


def _master(facts: RollFacts) -> RollReplica | None:
    if facts.master_broker_id is None:
        return None
    return next((r for r in facts.replicas if r.broker_id == facts.master_broker_id), None)


def _in_set(facts: RollFacts, r: RollReplica) -> bool:
    return r.broker_id is not None and r.broker_id in facts.sync_state_set


def back_and_level(facts: RollFacts, r: RollReplica) -> bool:
    """A restarted replica is back: it runs its desired revision, answers, is in the SyncStateSet and holds
    every byte the master had (within `level_gap_bytes`: under load the master is always a little ahead)."""
    if r.pending or not r.alive or not _in_set(facts, r):
        return False
    master = _master(facts)
    if master is None or master.name == r.name:
        return master is not None
    if master.max_offset is None or r.max_offset is None:
        return False
    return master.max_offset - r.max_offset <= facts.level_gap_bytes


def _wait(facts: RollFacts, reason: str, message: str, fix: str) -> RollStep:
    if facts.waiting_since is not None and facts.now - facts.waiting_since > facts.timeout_s:
        return RollStep(
            StepKind.BLOCKED,
            reason="RolloutTimeout",
            message=f"waited {facts.now - facts.waiting_since:.0f}s (limit {facts.timeout_s:.0f}s): {message}",
            fix=fix,
        )
    return RollStep(StepKind.WAIT, reason=reason, message=message, fix=fix)


def _floor_refusal(facts: RollFacts, r: RollReplica, verb: str = "restarting") -> RollStep | None:
    """None when restarting (or removing) in-sync member `r` keeps the SyncStateSet at or above the floor. Only
    members that answer count: one that is down (restarting, recreated) still named in the set acks nothing."""
    members = sum(1 for o in facts.replicas if _in_set(facts, o) and o.alive)
    floor = facts.min_in_sync_replicas
    who = f"replica {r.name} (broker {r.broker_id})"
    if len(facts.replicas) - 1 < floor:
        return RollStep(
            StepKind.BLOCKED,
            replica=r.name,
            reason="BelowMinInSyncReplicas",
            message=f"{verb} {who} would leave the SyncStateSet {list(facts.sync_state_set)} with "
            f"{members - 1} member(s), below spec.quorum.minInSyncReplicas {floor}: every put would be refused "
            f"(IN_SYNC_REPLICAS_NOT_ENOUGH) until it is back; with {len(facts.replicas)} replicas this always holds",
            fix=f"lower spec.quorum.minInSyncReplicas to {len(facts.replicas) - 1} or less for the roll, or add a "
            "replica first (spec.replicas)",
        )
    if members - 1 < floor:
        return _wait(
            facts,
            "WaitingForSyncStateSet",
            f"{verb} {who} now would leave the SyncStateSet {list(facts.sync_state_set)} with {members - 1} "
            f"member(s), below spec.quorum.minInSyncReplicas {floor}; waiting for the other replicas to rejoin",
            "bring the replicas outside the SyncStateSet back (see their logs), or lower spec.quorum.minInSyncReplicas",
        )
    if facts.all_ack_in_sync_state_set:
        down = [o.name for o in facts.replicas if o.name != r.name and _in_set(facts, o) and not o.alive]
        if down:
            return _wait(
                facts,
                "WaitingForSyncStateSet",
                f"allAckInSyncStateSet: every SyncStateSet member acks each put and member(s) {down} do not "
                f"answer; {verb} {who} as well would stall every put",
                "bring those replicas back, or wait until the master drops them from the SyncStateSet",
            )
    return None


def plan_roll(facts: RollFacts) -> RollStep:
    """The next step of the roll; see the module docstring for the rules."""
    pending = [r for r in facts.replicas if r.pending]
    if facts.paused and pending:
        return RollStep(
            StepKind.WAIT,
            reason="RolloutPaused",
            message=f"paused by the {PAUSE_ANNOTATION} annotation; {len(pending)} replica(s) still to restart",
            fix=f"remove the {PAUSE_ANNOTATION} annotation to resume",
        )
    if not facts.controller_reachable:
        return _wait(
            facts,
            "ControllerUnavailable",
            "the controller quorum is unreadable: no restart while the SyncStateSet is unknown",
            "bring the controllers back",
        )
    if facts.last_restarted is not None:
        last = next((r for r in facts.replicas if r.name == facts.last_restarted), None)
        if last is not None and not back_and_level(facts, last):
            return _wait(
                facts,
                "WaitingForReplica",
                f"replica {last.name} was restarted; waiting until it runs revision {last.desired_revision}, "
                "is back in the SyncStateSet and level with the master",
                f"see the logs of {last.name}; it must rejoin the SyncStateSet",
            )
    master = _master(facts)
    old = next((r for r in pending if r.name == facts.switched_from), None)
    if old is not None and old.alive and not _in_set(facts, old):
        return _wait(
            facts,
            "WaitingForReplica",
            f"the old master {old.name} rejoins the SyncStateSet as a slave before it is restarted",
            f"see the logs of {old.name}",
        )
    removal = _plan_removal(facts, master)
    if removal is not None:
        return removal
    if not pending:
        missing = [r.name for r in facts.replicas if not (r.alive and _in_set(facts, r))]
        if missing and master is not None:
            return _wait(
                facts,
                "WaitingForSyncStateSet",
                f"every replica runs its desired revision; waiting for {missing} to rejoin the SyncStateSet",
                f"see the logs of {', '.join(missing)}",
            )
        return RollStep(StepKind.DONE, reason="RolloutComplete", message="every replica runs its desired revision")
    if master is None or not master.alive:
        return _wait(
            facts,
            "NoMaster",
            f"no serving master (the controller names {facts.master_broker_id}): the failover policy acts first",
            "wait for the election; see `status` for NoEligibleMaster",
        )
    # 1. Unready or outside the SyncStateSet: restarting them cannot shrink the set.
    outside = _highest_first(r for r in pending if r is not master and not (r.alive and _in_set(facts, r)))
    if outside:
        r = outside[0]
        return RollStep(
            StepKind.RESTART,
            replica=r.name,
            reason="RestartOutOfSync",
            message=f"restarting {r.name} first: it is {'outside the SyncStateSet' if r.alive else 'not answering'}",
        )
    # 2. In-sync slaves, one at a time.
    slaves = _highest_first(r for r in pending if r is not master)
    if slaves:
        r = slaves[0]
        return _restart_in_sync(
            facts,
            r,
            "RestartSlave",
            f"restarting in-sync slave {r.name} (broker {r.broker_id}); SyncStateSet "
            f"{list(facts.sync_state_set)} keeps {len(facts.sync_state_set) - 1} member(s) "
            f"(minInSyncReplicas {facts.min_in_sync_replicas})",
        )
    # 3. The master, last.
    return _plan_master(facts, master)


def _plan_removal(facts: RollFacts, master: RollReplica | None) -> RollStep | None:
    """A scale-in, before any restart: never remove the master (switch over to a kept in-sync replica first),
    one replica at a time, highest name first, never below the durability floor."""
    removing = _highest_first(r for r in facts.replicas if r.name in facts.removing)
    if not removing:
        return None
    if master is None or not master.alive:
        return _wait(facts, "NoMaster", "no serving master: no replica is removed meanwhile", "wait for the election")
    if master.name in facts.removing:
        kept = [r for r in facts.replicas if r.name not in facts.removing and r.alive and _in_set(facts, r)]
        return _switch_over(
            facts,
            master,
            kept,
            "SwitchoverBeforeRemoval",
            "kept replica in the SyncStateSet",
            "before the scale-in removes it",
            "wait until a kept replica rejoins the SyncStateSet",
        )
    r = removing[0]
    if r.alive and _in_set(facts, r):
        refusal = _floor_refusal(facts, r, "removing")
        if refusal is not None:
            return refusal
    return RollStep(
        StepKind.REMOVE,
        replica=r.name,
        reason="RemoveReplica",
        message=f"removing {r.name} (broker {r.broker_id}): scale-in to "
        f"{len(facts.replicas) - len(facts.removing)} replicas",
    )


def _restart_in_sync(facts: RollFacts, r: RollReplica, reason: str, message: str) -> RollStep:
    """Restart a SyncStateSet member, unless that drops the set below the durability floor."""
    refusal = _floor_refusal(facts, r)
    if refusal is not None:
        return refusal
    return RollStep(StepKind.RESTART, replica=r.name, reason=reason, message=message)


def _highest_first(replicas: Iterable[RollReplica]) -> list[RollReplica]:
    # Highest name first (CloudNativePG restarts the highest serial first); deterministic.
    return sorted(replicas, key=lambda r: r.name, reverse=True)


def _plan_master(facts: RollFacts, master: RollReplica) -> RollStep:
    strategy = facts.strategy
    if strategy == Strategy.RESTART.value:
        return _restart_in_sync(
            facts,
            master,
            "RestartMaster",
            f"restarting master {master.name} (strategy restart: no switchover; writes pause until the "
            "controller elects another member)",
        )
    if strategy == Strategy.SUPERVISED.value and not facts.master_approved:
        desired = master.desired_revision
        return RollStep(
            StepKind.WAIT,
            replica=master.name,
            reason="WaitingForApproval",
            message=f"every slave runs revision {desired}; the master {master.name} waits for approval "
            "(strategy supervised)",
            fix=f"annotate the BrokerGroup with {APPROVE_ANNOTATION}={desired}",
        )
    candidates = [r for r in facts.replicas if r is not master and not r.pending and r.alive and _in_set(facts, r)]
    return _switch_over(
        facts,
        master,
        candidates,
        "SwitchoverBeforeRestart",
        "in-sync slave on the desired revision",
        "before restarting it",
        "wait until a restarted slave rejoins the SyncStateSet, or use spec.upgrade.strategy: restart",
    )


def _switch_over(
    facts: RollFacts, master: RollReplica, candidates: Sequence[RollReplica], reason: str, what: str, why: str, fix: str
) -> RollStep:
    if not candidates:
        return _wait(facts, "NoSwitchoverTarget", f"no {what} to switch the master {master.name} over to", fix)
    target = best_target(candidates, facts.replicas)
    return RollStep(
        StepKind.SWITCHOVER,
        replica=master.name,
        target_broker_id=target.broker_id,
        reason=reason,
        message=f"switching the master from {master.name} (broker {master.broker_id}) to {target.name} "
        f"(broker {target.broker_id}, the best-placed, most caught-up {what}) {why}",
    )


class Ranked(Protocol):
    """What `best_target` ranks by: a roll's replica, or a drain's (`core.drain`)."""

    @property
    def name(self) -> str: ...

    @property
    def broker_id(self) -> int | None: ...

    @property
    def max_offset(self) -> int | None: ...

    @property
    def node(self) -> str | None: ...


R = TypeVar("R", bound=Ranked)


def shares_a_node(replica: Ranked, group: Sequence[Ranked]) -> bool:
    """Whether another replica of the group runs on the replica's node (False when its node is not known)."""
    return replica.node is not None and any(r.node == replica.node and r.name != replica.name for r in group)


def best_target(candidates: Sequence[R], group: Sequence[Ranked] = ()) -> R:
    """The target of every planned switchover (the roll's, the one before a node drain): one whose node hosts no
    other replica of ``group`` first (the old master included: it comes back as a slave on its node), so that a
    lost node takes the master alone; then the most caught up (every candidate is an in-sync slave already), then
    the lowest broker id."""
    return sorted(candidates, key=lambda r: (shares_a_node(r, group), -(r.max_offset or -1), r.broker_id or 0))[0]

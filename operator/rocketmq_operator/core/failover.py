"""Failover and switchover decisions: plain observed facts in, ordered actions (or a refusal) out.

RocketMQ's controller elects masters itself; the operator acts only where the controller cannot see a problem:
a master whose process is not serving while the controller still names it (stuck, suspended, isolated).
Safety rules (operator-anchors §c; CloudNativePG lost writes by promoting before fencing):

* deny on uncertainty: an unreadable controller or a stale observation never leads to an action;
* tell slow from dead: a master that misses observations for `detectionSeconds` is fenced at once only when
  the platform sees its process stopped or gone; otherwise it is first asked once more with a long timeout
  (a loaded machine answers late, not never), and fenced only when that confirmation fails too and either the
  controller has stopped receiving its heartbeats or it stayed silent for twice the detection time;
* fence first (the old master stops taking writes), then elect; never the other way round;
* elect only an alive SyncStateSet member, unless `failover.allowUnclean`, and then loudly: the decision names
  the chosen replica, its offset and how many bytes acknowledged to clients may be lost;
* a planned switchover goes only to an alive in-sync member, and elects only once the target has every byte the
  fenced master had (the write pause is measured by the executor from fence to new master);
* a slave left without a master to replicate from is pointed at the master the controller names, and only when
  that master itself reports the master role. RocketMQ gives a slave the new master's HA address only through
  a name-server registration, which can race the new master's own and then waits for the next periodic one
  (30 s by default); until the slave is back, `minInSyncReplicas` may refuse every write;
* a slave outside the SyncStateSet that is not connected to the master for a grace period (after a
  switchover it can stay attached to the old master: RocketMQ keeps that connection as long as the other end
  answers) is restarted;
* a slave that replicates from any HA address but the confirmed master's is pointed at the master (RocketMQ
  takes a slave's HA address from whatever master a name server still lists, a deposed one included);
* a deposed master never acknowledges a write: a former master that the controller no longer names is fenced
  (its process killed: it restarts as a slave of the current epoch) while it does not answer (hung: it may wake
  up believing it is master) or answers as master after a short grace (the controller's role-change notice is
  oneway and can be lost). RocketMQ has no guard of its own here (docs/fencing.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class ActionKind(StrEnum):
    FENCE = "Fence"  # stop the old master taking writes (write permission off, or stop its process)
    WAIT_CATCH_UP = "WaitCatchUp"  # until the target's offset reaches the fenced master's
    ELECT = "Elect"  # ask the controller leader to elect (designated broker id)
    UNFENCE = "Unfence"  # restore write permission on the old master (now a slave)
    REATTACH = "Reattach"  # point a slave's HA client at the current master's HA address
    FENCE_DEPOSED = "FenceDeposed"  # kill a former master's process (it restarts as a slave of the new epoch)
    RESTART = "Restart"  # restart a slave stuck replicating from a broker that is no longer master
    WAKE = "Wake"  # wake a slave's HA client out of its 5 s back-off after a failed connection
    CONFIRM = "Confirm"  # ask a silent master once more, with a long timeout, before it is fenced


class ProcessState(StrEnum):
    """What the platform itself sees of a broker's process, beside what the broker answers over the network."""

    RUNNING = "Running"  # scheduled as usual (it may still be slow to answer)
    STOPPED = "Stopped"  # stopped where it stands (SIGSTOP): it cannot answer until resumed
    GONE = "Gone"  # no process
    UNKNOWN = "Unknown"  # the platform cannot tell (a pod is seen only over the network)


@dataclass(frozen=True)
class MasterEvidence:
    """Signals about a master that misses observations, beyond the misses themselves."""

    process: ProcessState = ProcessState.UNKNOWN
    probe_answered: bool | None = None  # a confirmation probe in this pass: answered, failed, None (not made)
    probe_s: float | None = None  # that probe's timeout


def confirmation_probe_s(detection_s: float) -> float:
    """The timeout of the confirmation probe: as long as the detection time itself (the pause the user said a
    broker may take), within 1-10 s."""
    return min(10.0, max(1.0, detection_s))


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    broker_id: int
    detail: str = ""


@dataclass(frozen=True)
class ReplicaFacts:
    broker_id: int
    alive: bool  # its process answers (pod serving / local process up)
    max_offset: int | None
    is_master: bool | None = None  # the role the broker itself reports (None: unreadable or no role yet)
    replicating_from: str | None = None  # a slave's HA client master address (None: it has none)
    controller_alive: bool | None = None  # the controller still receives its heartbeats (None: unknown)


@dataclass(frozen=True)
class GroupFacts:
    now: float
    observed_at: float
    controller_reachable: bool
    master_broker_id: int | None
    sync_state_set: tuple[int, ...]
    replicas: Mapping[int, ReplicaFacts]
    master_not_serving_since: float | None = None  # when the named master was first seen not serving
    master_ha_connections: int | None = None  # HA connections the master reports (None: unknown)
    unconnected_since: Mapping[int, float] = field(default_factory=dict)  # see unconnected_slaves
    woken: frozenset[int] = frozenset()  # unconnected slaves already woken once in this episode
    master_ha_address: str | None = None  # the confirmed master's HA address (None: unknown)
    deposed_at: Mapping[int, float] = field(default_factory=dict)  # former masters: when the controller moved on
    master_evidence: MasterEvidence = MasterEvidence()  # about a named master that does not answer
    named_master_slave_since: float | None = None  # when the named master was first seen answering as a slave


@dataclass(frozen=True)
class Decision:
    actions: tuple[Action, ...] = ()
    reason: str = ""  # a CamelCase reason for conditions and Events
    message: str = ""
    unclean: bool = False
    refused: bool = False
    may_lose_bytes: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _uncertain(facts: GroupFacts, stale_after_s: float) -> Decision | None:
    if not facts.controller_reachable:
        return Decision(
            refused=True,
            reason="ControllerUnavailable",
            message="the controller quorum is unreadable: no failover or switchover while the state is unknown",
        )
    age = facts.now - facts.observed_at
    if age > stale_after_s:
        return Decision(
            refused=True,
            reason="StaleObservation",
            message=f"the last observation is {age:.1f}s old (limit {stale_after_s:.1f}s): deciding nothing",
        )
    return None


def _best(candidates: list[ReplicaFacts]) -> ReplicaFacts:
    # Highest offset first (least data behind), then lowest id for determinism.
    return sorted(candidates, key=lambda r: (-(r.max_offset or -1), r.broker_id))[0]


def plan_failover(
    facts: GroupFacts, *, allow_unclean: bool, detection_s: float = 5.0, stale_after_s: float = 10.0
) -> Decision:
    """What to do about the current master, if anything. ``detection_s`` (spec.failover.detectionSeconds) is how
    long the named master may go without answering before it is fenced and another replica elected."""
    doubt = _uncertain(facts, stale_after_s)
    if doubt is not None:
        return doubt
    master = facts.replicas.get(facts.master_broker_id) if facts.master_broker_id is not None else None
    if master is not None and master.alive:
        return Decision(reason="MasterServing", message=f"broker {master.broker_id} is master and serving")
    evidence = ""
    if master is not None:
        since = facts.master_not_serving_since
        waited = 0.0 if since is None else facts.now - since
        if waited < detection_s:
            return Decision(
                reason="WaitingForController",
                message=f"master {master.broker_id} is not answering for {waited:.1f}s; it is fenced and "
                f"replaced after {detection_s:.1f}s (spec.failover.detectionSeconds)",
            )
        judged = _judge_silent_master(master, facts.master_evidence, waited, detection_s)
        if isinstance(judged, Decision):
            return judged
        evidence = f" ({judged})"
    members = [
        facts.replicas[i]
        for i in facts.sync_state_set
        if i in facts.replicas and facts.replicas[i].alive and i != facts.master_broker_id
    ]
    fence = (Action(ActionKind.FENCE, master.broker_id, "stop the not-serving master"),) if master else ()
    if members:
        target = _best(members)
        return Decision(
            actions=(*fence, Action(ActionKind.ELECT, target.broker_id, "alive SyncStateSet member")),
            reason="FailoverToInSyncMember",
            message=f"master {facts.master_broker_id} is not serving{evidence}; electing broker "
            f"{target.broker_id} from the SyncStateSet {list(facts.sync_state_set)}",
        )
    others = [r for r in facts.replicas.values() if r.alive and r.broker_id != facts.master_broker_id]
    if not others:
        return Decision(refused=True, reason="NoReplicaAlive", message="no replica is alive: nothing can be elected")
    if not allow_unclean:
        return Decision(
            refused=True,
            reason="NoEligibleMaster",
            message=f"no alive member of the SyncStateSet {list(facts.sync_state_set)}; refusing an unclean "
            "election (acknowledged messages could be lost); bring a member back, or set "
            "spec.failover.allowUnclean: true",
        )
    target = _best(others)
    known = [r.max_offset for r in facts.replicas.values() if r.max_offset is not None]
    lost = (max(known) - (target.max_offset or 0)) if known else None
    return Decision(
        actions=(*fence, Action(ActionKind.ELECT, target.broker_id, "UNCLEAN: outside the SyncStateSet")),
        reason="UncleanFailover",
        message=f"master {facts.master_broker_id} is not serving{evidence}; "
        f"UNCLEAN election of broker {target.broker_id} (offset {target.max_offset}) outside the "
        f"SyncStateSet {list(facts.sync_state_set)}: up to {lost if lost is not None else 'an unknown number of'} "
        "bytes acknowledged to producers may be lost (spec.failover.allowUnclean is true)",
        unclean=True,
        may_lose_bytes=lost,
    )


def _judge_silent_master(
    master: ReplicaFacts, evidence: MasterEvidence, waited: float, detection_s: float
) -> Decision | str:
    """A master silent for ``waited`` >= ``detection_s``: a Decision to wait (confirm first, or it proved slow),
    or the evidence that it is dead or hung, for the fence's message. Under load a healthy JVM can miss every
    observation for seconds (a new master fenced that way at load 13 caused a second failover for one kill):
    only the platform's own view of the process, or a failed long probe plus the controller's view (or twice
    the silence), counts as death."""
    silent = f"no answer for {waited:.1f}s"
    if evidence.process is ProcessState.STOPPED:
        return f"{silent}; its process is stopped"
    if evidence.process is ProcessState.GONE:
        return f"{silent}; its process is gone"
    if evidence.probe_answered is None:
        return Decision(
            actions=(Action(ActionKind.CONFIRM, master.broker_id, "one more probe with a long timeout"),),
            reason="ConfirmingMasterSilence",
            message=f"master {master.broker_id}: {silent}; asking once more before fencing it",
        )
    probe = f"{evidence.probe_s:g}s" if evidence.probe_s is not None else "a long"
    if evidence.probe_answered:
        return Decision(
            reason="MasterSlow",
            message=f"master {master.broker_id}: {silent}, but it answered a {probe} confirmation probe: slow "
            "(a loaded machine, a GC pause), not dead; not fenced",
        )
    process = "running" if evidence.process is ProcessState.RUNNING else "not visible to the platform"
    failed = f"{silent}; a {probe} confirmation probe failed; its process is {process}"
    if master.controller_alive is False:
        return f"{failed}; the controller no longer receives its heartbeats"
    if waited >= 2 * detection_s:
        if master.controller_alive is True and evidence.process is ProcessState.UNKNOWN:
            # Kubernetes: a pod deletion is no proof the process stopped (a frozen or cut-off node's kubelet never
            # kills it), and a master the controller still hears may be cut off from the operator only and go on
            # acknowledging with a slave's help: elected only once the controller stops hearing it (the container
            # died, or its lease agent fenced it and it was cut off) (docs/fencing.md, "The lease agent").
            return Decision(
                actions=(Action(ActionKind.FENCE, master.broker_id, "stop the not-serving master"),),
                reason="MasterFencedAwaitingElection",
                message=f"master {master.broker_id}: {failed}; silent for twice spec.failover.detectionSeconds: "
                "fenced, and another replica is elected once the controller stops receiving its heartbeats",
            )
        return f"{failed}; silent for twice spec.failover.detectionSeconds"
    return Decision(
        reason="MasterUnconfirmed",
        message=f"master {master.broker_id}: {failed}, but the controller still receives its heartbeats: "
        f"fenced after {2 * detection_s:g}s of silence (twice spec.failover.detectionSeconds) unless it answers",
    )


class SwitchoverTargetError(ValueError):
    """A switchover target that names no broker id: one line with the fix."""


def switchover_target_id(
    wanted: str, ids_by_replica: Mapping[str, int | None], *, given_as: str = "--to", shown_by: str = "status"
) -> int:
    """The broker id a switchover target names: a broker id as it is, or a replica name (pod or local replica)
    mapped to the id the controller assigned it. The ids are the controller's (assigned at first registration),
    so a user names the replica and this looks the id up in the latest observation.
    ``given_as`` names the input in the refusal (``--to``, an annotation); ``shown_by`` what lists the ids."""
    text = wanted.strip()
    if text.isdigit():
        return int(text)
    names = sorted(ids_by_replica)
    if text not in ids_by_replica:
        raise SwitchoverTargetError(
            f"{given_as} {wanted!r}: neither a broker id nor a replica of the group (replicas: "
            f"{', '.join(names) or 'none observed'}); fix: name one of its replicas or its broker id ({shown_by} "
            "shows both)"
        )
    broker_id = ids_by_replica[text]
    if broker_id is None:
        raise SwitchoverTargetError(
            f"{given_as} {wanted!r}: replica {text} has no broker id yet (it has not registered with the "
            f"controller, or does not answer); fix: wait until {shown_by} shows its broker id, or name another "
            "replica"
        )
    return broker_id


def plan_switchover(facts: GroupFacts, target_id: int, *, stale_after_s: float = 10.0) -> Decision:
    """A planned master move to `target_id`: fence, wait for catch-up, elect, unfence the old master."""
    doubt = _uncertain(facts, stale_after_s)
    if doubt is not None:
        return doubt
    ids = sorted(facts.replicas)
    target = facts.replicas.get(target_id)
    if target is None:
        return Decision(
            refused=True,
            reason="UnknownBroker",
            message=f"--to {target_id}: no replica has broker id {target_id}; the group's ids are {ids}",
        )
    if facts.master_broker_id == target_id:
        return Decision(refused=True, reason="AlreadyMaster", message=f"broker {target_id} is already the master")
    if facts.master_broker_id is None or facts.master_broker_id not in facts.replicas:
        return Decision(
            refused=True,
            reason="NoMaster",
            message="the group has no master to switch over from; the controller elects one on its own",
        )
    if target_id not in facts.sync_state_set:
        return Decision(
            refused=True,
            reason="TargetNotInSync",
            message=f"broker {target_id} is not in the SyncStateSet {list(facts.sync_state_set)}: a switchover "
            "goes only to an in-sync member (it would lose messages); wait until it catches up",
        )
    if not target.alive:
        return Decision(refused=True, reason="TargetNotAlive", message=f"broker {target_id} is not alive")
    old = facts.master_broker_id
    return Decision(
        actions=(
            Action(ActionKind.FENCE, old, "write permission off on the current master"),
            Action(ActionKind.WAIT_CATCH_UP, target_id, "until it has every byte the fenced master has"),
            Action(ActionKind.ELECT, target_id, "designated election by the controller"),
            Action(ActionKind.UNFENCE, old, "restore write permission (it is a slave now)"),
        ),
        reason="Switchover",
        message=f"switching the master from broker {old} to broker {target_id}",
    )


NAMED_MASTER_SLAVE_GRACE_S = 15.0
"""How long the master the controller names may answer as a slave before it is restarted: a broker takes its new
role within a second of the controller's notification, or at its next sync with the controller (a few seconds)."""


def plan_named_master_as_slave(
    facts: GroupFacts, *, grace_s: float = NAMED_MASTER_SLAVE_GRACE_S, stale_after_s: float = 10.0
) -> Decision:
    """The controller names a master that answers as a slave. Normal for the moment between an election and the
    broker's role change; for good when the broker refused the change: RocketMQ's broker takes a role change only
    for a master epoch above the one it holds, and controllers that all restarted have been seen to lose their
    last election and elect again with the same epoch (docs/chaos.md, "Controllers that reused an epoch"), which
    every broker that saw the lost election then ignores. The group has no master, and nothing in RocketMQ
    changes that. After ``grace_s`` the named master is restarted: a broker takes the controller's view when it
    registers, whatever epoch it held before. Safe: as a slave it acknowledges nothing, and its store is kept.
    Its slaves, still following the lost master's address, are then re-attached by `plan_reattach`."""
    doubt = _uncertain(facts, stale_after_s)
    if doubt is not None:
        return doubt
    master_id = facts.master_broker_id
    master = facts.replicas.get(master_id) if master_id is not None else None
    if master_id is None or master is None or not master.alive or master.is_master is not False:
        return Decision(reason="NamedMasterActs", message="the named master is not a slave")
    since = facts.named_master_slave_since
    waited = 0.0 if since is None else facts.now - since
    if waited < grace_s:
        return Decision(
            reason="NamedMasterBecoming",
            message=f"the controller names broker {master_id} master and it answers as a slave for {waited:.1f}s: "
            f"waiting for its role change (restarted after {grace_s:.0f}s)",
        )
    return Decision(
        actions=(Action(ActionKind.RESTART, master_id, "named master answering as a slave"),),
        reason="NamedMasterIsSlave",
        message=f"the controller names broker {master_id} master, but it has answered as a slave for {waited:.0f}s "
        "(it did not take its role change: an election whose master epoch it had already seen for another "
        "broker); restarting it: it takes the controller's view when it registers again",
    )


def unconnected_slaves(facts: GroupFacts) -> list[int]:
    """Alive slaves outside the SyncStateSet when the master reports fewer HA connections than there are alive
    slaves by at least that many: none of them replicates from the master. (After a switchover a slave whose
    name-server registration still saw the old master attaches to it, a slave by then, and RocketMQ's HA client
    keeps that connection while the other end answers, even once its address is corrected.)"""
    if facts.master_ha_connections is None:
        return []
    slaves = [
        r for r in facts.replicas.values() if r.broker_id != facts.master_broker_id and r.alive and r.is_master is False
    ]
    outside = sorted(r.broker_id for r in slaves if r.broker_id not in facts.sync_state_set)
    if outside and len(slaves) - facts.master_ha_connections >= len(outside):
        return outside
    return []


def plan_reattach(
    facts: GroupFacts, *, grace_s: float = 15.0, wake_after_s: float = 1.0, stale_after_s: float = 10.0
) -> Decision:
    """Slaves that replicate from nobody while a confirmed master serves: point them at it (harmless if they
    found it meanwhile: the same address is a no-op). Slaves unconnected (:func:`unconnected_slaves`) for
    ``grace_s`` are restarted: pointing them at the master does not drop a connection they have elsewhere."""
    doubt = _uncertain(facts, stale_after_s)
    if doubt is not None:
        return doubt
    master_id = facts.master_broker_id
    master = facts.replicas.get(master_id) if master_id is not None else None
    if master is None or not master.alive or master.is_master is not True:
        return Decision(
            refused=True,
            reason="MasterNotConfirmed",
            message=f"the controller names master {master_id}, but it does not answer as master: slaves are "
            "left alone until it does",
        )
    orphans = sorted(
        r.broker_id
        for r in facts.replicas.values()
        if r.broker_id != master_id
        and r.alive
        and r.is_master is False
        and (
            not r.replicating_from
            or (facts.master_ha_address is not None and r.replicating_from != facts.master_ha_address)
        )
    )
    stuck = [
        i
        for i in unconnected_slaves(facts)
        if (since := facts.unconnected_since.get(i)) is not None and facts.now - since >= grace_s
    ]
    # A slave whose HA connection failed (a handshake race, a refused connect) sleeps 5 s before it tries again
    # (AutoSwitchHAClient: closeMasterAndWait / a failed connectMaster), refusing every put meanwhile under
    # minInSyncReplicas. Once per episode it is woken after `wake_after_s`; restarted only after `grace_s`.
    wake = [
        i
        for i in unconnected_slaves(facts)
        if i not in stuck
        and i not in facts.woken
        and i not in orphans
        and (since := facts.unconnected_since.get(i)) is not None
        and facts.now - since >= wake_after_s
    ]
    if not orphans and not stuck and not wake:
        return Decision(reason="SlavesAttached", message="every alive slave replicates from a master")
    actions = [Action(ActionKind.REATTACH, i, f"point its HA client at master {master_id}") for i in orphans]
    actions += [Action(ActionKind.WAKE, i, "its HA client waits out a failed connection") for i in wake]
    actions += [Action(ActionKind.RESTART, i, f"it does not replicate from master {master_id}") for i in stuck]
    parts = []
    if orphans:
        parts.append(
            f"slave(s) {orphans} have no master to replicate from, or another one; pointing them at master {master_id}"
        )
    if wake:
        parts.append(f"slave(s) {wake} are not connected to master {master_id}: waking their HA clients")
    if stuck:
        parts.append(
            f"slave(s) {stuck} are out of the SyncStateSet and not connected to master {master_id} for "
            f"{grace_s:.0f}s or more; restarting them (RocketMQ keeps a connection to another broker otherwise)"
        )
    return Decision(actions=tuple(actions), reason="ReattachSlaves", message="; ".join(parts))


def plan_fence_deposed(facts: GroupFacts, *, grace_s: float = 1.0) -> Decision:
    """Former masters (``facts.deposed_at``) that could still acknowledge a write are fenced: one that does not
    answer at once (hung, or partitioned: when it wakes up it still believes it is master, and a slave that a
    name server points at it gives it a quorum), one that answers as master after ``grace_s``. One that answers
    as slave is safe. Needs no controller: the deposition was read when it was reachable, and killing the
    deposed process of a group whose master serves costs nothing but a restart."""
    actions: list[Action] = []
    notes: list[str] = []
    for broker_id, since in sorted(facts.deposed_at.items()):
        if broker_id == facts.master_broker_id:
            continue  # named master again (re-elected): not deposed
        replica = facts.replicas.get(broker_id)
        if replica is None:
            continue
        if not replica.alive:
            actions.append(Action(ActionKind.FENCE_DEPOSED, broker_id, "deposed master does not answer"))
            notes.append(f"broker {broker_id} (deposed, not answering)")
        elif replica.is_master is True and facts.now - since >= grace_s:
            actions.append(Action(ActionKind.FENCE_DEPOSED, broker_id, "deposed master still answers as master"))
            notes.append(f"broker {broker_id} (deposed, still master after {facts.now - since:.1f}s)")
    if not actions:
        return Decision(reason="NoDeposedMaster", message="no former master can acknowledge a write")
    return Decision(
        actions=tuple(actions),
        reason="FenceDeposedMaster",
        message=f"fencing {', '.join(notes)}: master is broker {facts.master_broker_id} now; a deposed master "
        "must not acknowledge a write",
    )


def track_deposed(deposed_at: Mapping[int, float], previous_master: int | None, facts: GroupFacts) -> dict[int, float]:
    """Which former masters still need watching after this observation: the previous master joins when the
    controller names another one, and so does any replica that answers as master while the controller names
    another (needing no memory: an operator restarted after the election has none of the previous master, and a
    deposed master that wakes up answers as master); a former master leaves once it answers as a slave, or is named
    again."""
    out = dict(deposed_at)
    current = facts.master_broker_id
    if previous_master is not None and current is not None and current != previous_master:
        out.setdefault(previous_master, facts.now)
    if current is not None and facts.controller_reachable:
        for broker_id, answering in facts.replicas.items():
            if broker_id != current and answering.alive and answering.is_master is True:
                out.setdefault(broker_id, facts.now)
    for broker_id in list(out):
        replica = facts.replicas.get(broker_id)
        if broker_id == current or (replica is not None and replica.alive and replica.is_master is False):
            del out[broker_id]
    return out


def plan_fence_rollback(
    old_master: int,
    epoch_before: int | None,
    *,
    controller_readable: bool,
    master_now: int | None,
    epoch_now: int | None,
) -> Decision:
    """A switchover failed after fencing the master: give the master its writes back only when the controller
    confirms that it is still master of the same epoch. An election request that timed out may still have been
    carried out; a fence undone then lets the deposed master acknowledge writes (through slaves still attached to
    it) that the new master never sees, until it learns of its demotion. Kept fenced, it refuses them; the fence
    lapses with its lease and the replication policy gives it back once it is a slave
    (`plan_abandoned_fences`)."""
    if not controller_readable:
        return Decision(
            refused=True,
            reason="ControllerUnavailable",
            message=f"broker {old_master} stays fenced: the controller is unreadable, so an election may have "
            "happened; the replication policy unfences it once the controller is read again",
        )
    if master_now == old_master and epoch_now == epoch_before:
        return Decision(
            actions=(Action(ActionKind.UNFENCE, old_master, "no election happened: still the master"),),
            reason="RollBackFence",
            message=f"broker {old_master} is still master of epoch {epoch_before}: rolling back the fence",
        )
    return Decision(
        refused=True,
        reason="ElectedMeanwhile",
        message=f"broker {old_master} stays fenced: the controller names broker {master_now} (epoch {epoch_now}, "
        f"was {epoch_before}); it is unfenced once it reports itself a slave",
    )


@dataclass(frozen=True)
class FenceSeen:
    """A replica that carries a switchover's fence (its live config), as the replication policy sees it."""

    broker_id: int
    is_master: bool | None
    lease_expired: bool  # the fence's lease (its send-acceptance time) has passed; a user's fence has none


def plan_abandoned_fences(facts: GroupFacts, fenced: Sequence[FenceSeen]) -> Decision:
    """Fences a switchover left behind (it failed, or its process was stopped): once their lease has passed,
    a slave is unfenced (it refuses nothing as a slave, but elected later it would refuse every write) and so is
    the master the controller still names (a switchover abandoned before its election). A deposed master that
    still answers as master keeps its fence (`plan_fence_deposed` acts on it). A user's fence has no lease and
    is never touched here."""
    doubt = _uncertain(facts, 10.0)
    if doubt is not None:
        return doubt
    actions: list[Action] = []
    for seen in fenced:
        if not seen.lease_expired:
            continue
        if seen.is_master is False:
            actions.append(
                Action(ActionKind.UNFENCE, seen.broker_id, "a slave left fenced by a switchover or a lease agent")
            )
        elif seen.is_master is True and seen.broker_id == facts.master_broker_id:
            actions.append(
                Action(ActionKind.UNFENCE, seen.broker_id, "the master left fenced by a switchover or a lease agent")
            )
    if not actions:
        return Decision(reason="NoAbandonedFence", message="no replica carries a lapsed switchover fence")
    return Decision(
        actions=tuple(actions),
        reason="AbandonedFence",
        message="unfencing "
        + ", ".join(f"broker {a.broker_id} ({a.detail})" for a in actions)
        + ": the switchover or lease agent that fenced it is done with it",
    )


def inert_ha_address(ha_address: str) -> str:
    """The same host at port 0: every connect to it fails at once, so an HA client pointed there only wakes."""
    return f"{ha_address.rsplit(':', 1)[0]}:0"


def held_role_change_wake(original: str, current: str | None) -> str | None:
    """What to set the HA master address of a broker the controller just named master, and which still answers
    as a slave, so that its HA client wakes; None: leave it alone.

    RocketMQ 5.5.0 can hold that role change 5 s: the promotion shuts the broker's HA client down, and when the
    client reads a frame from the old master after its state became SHUTDOWN (a master still shutting down, its
    pod being deleted, sends heartbeats), `AutoSwitchHAClient` logs "State not matched", a 1 ms wait swallows
    the shutdown's wake-up, and `closeMasterAndWait` waits its full 5 s: the new master registers (a route) and
    takes its slaves back (the SyncStateSet) only after it (docs/chaos.md, finding 9). A changed HA master
    address wakes the client (`updateHaMasterAddress`). The value alternates between the address it followed
    (``original``) and that host at port 0, so that every change wakes it and no value is new to it: a client
    that is not shut down at all (a broker that refused the role change) only reconnects to what it followed.
    Any other ``current`` means its client follows someone else now: its role change completed."""
    inert = inert_ha_address(original)
    if current == original:
        return inert
    if current == inert:
        return original
    return None

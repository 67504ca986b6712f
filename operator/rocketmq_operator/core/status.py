"""Turn an observed group state into the BrokerGroup (and ControllerGroup) status both platforms show. Pure:
time is an argument.

Truthful by construction: `needAcks`/`writable` come from `quorum.predict_put` on what was observed; a
controller quorum that could not be read is a condition (`ControllerUnavailable`), never a guess; a
`{deadMaster}` SyncStateSet (facts §9.5) is `NoEligibleMaster` with what the user can do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocketmq_operator.api.models import (
    BrokerGroupSpec,
    BrokerGroupStatus,
    Condition,
    ControllerGroupStatus,
    HAMode,
    MasterChange,
    MasterStatus,
    ReplicaStatus,
    SyncStateSetStatus,
)
from rocketmq_operator.core.conditions import ConditionStatus, condition, set_condition
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.quorum import PutPrediction, QuorumParams, effective_quorum, predict_put

HISTORY_LIMIT = 10


@dataclass(frozen=True)
class Counts:
    alive: int
    in_sync: int
    master_alive: bool


def _master_view(state: GroupState) -> ReplicaObservation | None:
    """The master the whole status shows (role column, `master`, `writable`): the controller's, or, when the
    controller cannot be asked, the broker that says it is master in its own HA runtime info."""
    if state.master_address:
        return next((r for r in state.replicas if r.address == state.master_address), None)
    if state.controller_mode and not state.controller_reachable:
        # The data plane outlives the controller: the broker that says it is master still serves.
        return next((r for r in state.replicas if r.reachable and r.is_master), None)
    return None


def _known_sync_state_set(state: GroupState, previous: BrokerGroupStatus | None) -> tuple[int, ...]:
    """Controller mode: the SyncStateSet the group's count and each replica's inSync both use."""
    if not state.controller_reachable and previous is not None and previous.sync_state_set is not None:
        # Without the controller the master cannot shrink its set (facts §3.3): the last known set holds.
        return tuple(previous.sync_state_set.members)
    return state.sync_state_set


def _broker_ids(state: GroupState, previous: BrokerGroupStatus | None) -> dict[str, int | None]:
    """Each replica's broker id as observed; when the controller (which reports the ids it assigned) cannot be
    asked, the last known id of the replica of that name (a broker keeps its id in its own store)."""
    ids = {r.name: r.broker_id for r in state.replicas}
    if state.controller_mode and not state.controller_reachable and previous is not None:
        for r in previous.replicas:
            if r.name in ids and ids[r.name] is None:
                ids[r.name] = r.broker_id
    return ids


def classic_in_sync(state: GroupState) -> frozenset[str]:
    """Classic modes (async, sync, slaveActingMaster): the names of the replicas the master counts as in sync,
    itself included; empty without a reachable master. The one rule behind both the group's count (`counts`,
    hence needAcks, Degraded, Ready) and each replica's `inSync`.

    The master says which of its HA connections are in sync (slaveAckOffset within haMaxGapNotInSync of its own
    offset: `GroupState.classic_in_sync_addresses`), but names them by the slave's client port, not its broker
    address. Being in sync is a threshold on the offset, so the master's k in-sync connections are its k most
    advanced slaves: they are attributed to the k reachable slaves with the highest commit-log offsets (ties in
    replica order). A connection no reachable slave can account for is not counted.
    """
    master = _master_view(state)
    if master is None or not master.reachable:
        return frozenset()
    slaves = sorted(
        (r for r in state.replicas if r.reachable and r.address != master.address),
        key=lambda r: (r.max_offset is None, -(r.max_offset or 0)),
    )
    return frozenset({master.name, *(r.name for r in slaves[: len(state.classic_in_sync_addresses)])})


def counts(spec: BrokerGroupSpec, state: GroupState, previous: BrokerGroupStatus | None = None) -> Counts:
    master = _master_view(state)
    # A named master that answers as a slave serves nothing (it missed its role change: core.failover.
    # plan_named_master_as_slave); one whose role could not be read is taken at the controller's word.
    master_alive = master is not None and master.reachable and master.is_master is not False
    alive = sum(1 for r in state.replicas if r.reachable)
    if HAMode(spec.ha_mode) is HAMode.CONTROLLER:
        in_sync = len(_known_sync_state_set(state, previous))
    else:
        in_sync = len(classic_in_sync(state))
    return Counts(alive=alive, in_sync=in_sync, master_alive=master_alive)


def _reported_master(master: ReplicaObservation | None, last: MasterStatus | None) -> MasterStatus:
    """The master while the controller cannot be asked: the broker that says it is master, with the last known
    id and epoch when it is the last known master (no election happens without the controller); no master when
    no broker says it is."""
    if master is None:
        return MasterStatus()
    same = last is not None and last.address == master.address
    return MasterStatus(
        broker_id=master.broker_id if master.broker_id is not None else (last.broker_id if last and same else None),
        replica=master.name,
        address=master.address,
        epoch=last.epoch if last is not None and same else None,
    )


def build_broker_status(
    spec: BrokerGroupSpec,
    state: GroupState,
    previous: BrokerGroupStatus | None,
    now: str,
    generation: int | None = None,
    blocked: tuple[str, str] | None = None,
) -> BrokerGroupStatus:
    """The whole status, this function being its one author (Ready included); `blocked` is the (reason,
    message) of a spec the platform cannot apply (e.g. its ControllerGroup is missing): Ready is then False.

    The role column, `master` and `writable` rest on one fact, `_master_view`. When the controller cannot be
    asked (ControllerUnavailable True), that fact is what the brokers report themselves: a broker whose own HA
    runtime info says master is the master (it keeps serving, with the last known SyncStateSet), and when no
    broker says so there is no master and nothing is writable; a last known master is never shown in its place.
    """
    params = effective_quorum(spec)
    mode = params.mode
    c = counts(spec, state, previous)
    master = _master_view(state)
    controller_down = mode is HAMode.CONTROLLER and not state.controller_reachable
    prev = previous or BrokerGroupStatus()

    master_status = _reported_master(master, prev.master) if controller_down else prev.master
    sss_status = prev.sync_state_set
    if not controller_down:
        master_status = MasterStatus(
            broker_id=state.master_broker_id,
            replica=master.name if master else None,
            address=state.master_address,
            epoch=state.master_epoch,
        )
        if mode is HAMode.CONTROLLER:
            sss_status = SyncStateSetStatus(members=list(state.sync_state_set), epoch=state.sync_state_set_epoch)

    replicas = _replica_statuses(mode, state, previous, master)

    prediction = predict_put(params, c.alive, max(c.in_sync, 1), master_alive=c.master_alive)
    writable = prediction.stored and c.master_alive
    one_less = predict_put(params, max(c.alive - 1, 0), max(c.in_sync - 1, 1), master_alive=c.alive > 1)

    all_good = (
        c.master_alive and c.alive == spec.replicas and c.in_sync == spec.replicas and not controller_down
    ) and blocked is None
    conds = _condition_rows(spec, params, state, c, prediction, one_less, writable, all_good, blocked)
    conditions = merge_conditions(prev.conditions, conds, now, generation)
    history = list(prev.history) if controller_down else _history(prev, state, now)
    return BrokerGroupStatus(
        observed_generation=generation if generation is not None else prev.observed_generation,
        conditions=conditions,
        master=master_status,
        sync_state_set=sss_status,
        replicas=replicas,
        need_acks=prediction.need_acks,
        writable=writable,
        history=history,
        phase="Ready" if all_good else ("Available" if writable else "Unavailable"),
    )


def _replica_statuses(
    mode: HAMode, state: GroupState, previous: BrokerGroupStatus | None, master: ReplicaObservation | None
) -> list[ReplicaStatus]:
    """One row per replica: its role as `master` says, in sync by the SyncStateSet (controller mode) or by the
    master's HA connections (classic modes), lag behind the master's offset."""
    master_offset = master.max_offset if master is not None else None
    ids = _broker_ids(state, previous)
    known_set = _known_sync_state_set(state, previous)
    classic_names = classic_in_sync(state)
    replicas: list[ReplicaStatus] = []
    for r in state.replicas:
        is_master = master is not None and r.address == master.address
        in_sync = (ids[r.name] in known_set) if mode is HAMode.CONTROLLER else (r.name in classic_names)
        lag = None
        if master_offset is not None and r.max_offset is not None:
            lag = max(0, master_offset - r.max_offset)
        replicas.append(
            ReplicaStatus(
                name=r.name,
                broker_id=ids[r.name],
                role="master" if is_master else ("slave" if r.reachable else "unknown"),
                alive=r.reachable,
                in_sync=bool(in_sync and r.reachable),
                max_offset=r.max_offset,
                lag_bytes=lag,
                version=r.version,
                address=r.address,
            )
        )
    return replicas


def _condition_rows(
    spec: BrokerGroupSpec,
    params: QuorumParams,
    state: GroupState,
    c: Counts,
    prediction: PutPrediction,
    one_less: PutPrediction,
    writable: bool,
    all_good: bool,
    blocked: tuple[str, str] | None,
) -> list[tuple[str, ConditionStatus, str, str]]:
    """(type, status, reason, message) of every condition the observer owns, Ready last."""
    mode = params.mode
    controller_down = mode is HAMode.CONTROLLER and not state.controller_reachable
    conds: list[tuple[str, ConditionStatus, str, str]] = []
    if mode is HAMode.CONTROLLER:
        conds.append(
            ("ControllerUnavailable", "True", "ControllerQuorumUnreadable", state.controller_error or "")
            if controller_down
            else ("ControllerUnavailable", "False", "ControllerReachable", "the controller leader answered")
        )
    no_master = state.master_broker_id is None or not c.master_alive
    eligible = [
        r for r in state.replicas if r.reachable and r.broker_id in state.sync_state_set and not controller_down
    ]
    if mode is HAMode.CONTROLLER and not controller_down and no_master and not eligible:
        conds.append(
            (
                "NoEligibleMaster",
                "True",
                "NoAliveSyncStateSetMember",
                f"no alive member of the SyncStateSet {list(state.sync_state_set)} can be elected; "
                "bring a member back (its data is the newest), or set spec.failover.allowUnclean: true "
                "to accept losing acknowledged messages",
            )
        )
    else:
        conds.append(("NoEligibleMaster", "False", "EligibleMasterExists", ""))
    named = _master_view(state) if not controller_down else None
    if writable:
        conds.append(
            ("Available", "True", "Writable", f"a put needs {prediction.need_acks} ack(s): {prediction.outcome.value}")
        )
    elif named is not None and named.reachable and named.is_master is False:
        conds.append(
            (
                "Available",
                "False",
                "NamedMasterIsSlave",
                f"the controller names {named.name} master, but it answers as a slave: it refuses every put; the "
                "operator restarts it if it does not take its role within 15 s",
            )
        )
    else:
        conds.append(("Available", "False", prediction.outcome.value, prediction.why))
    degraded = c.in_sync < params.in_sync_replicas
    conds.append(
        ("Degraded", "True", "FewerInSync", f"{c.in_sync} in sync, inSyncReplicas is {params.in_sync_replicas}")
        if degraded
        else ("Degraded", "False", "InSync", f"{c.in_sync} in sync")
    )
    at_risk = writable and not one_less.stored
    conds.append(
        ("QuorumAtRisk", "True", "OneLossBlocksWrites", f"losing one more replica gives {one_less.outcome.value}")
        if at_risk
        else ("QuorumAtRisk", "False", "Tolerates", "")
    )
    if blocked is not None:
        conds.append(("Ready", "False", *blocked))
    else:
        conds.append(
            ("Ready", "True", "AllReplicasInSync", f"{c.alive}/{spec.replicas} alive and in sync")
            if all_good
            else ("Ready", "False", "NotAllInSync", f"{c.alive}/{spec.replicas} alive, {c.in_sync} in sync")
        )

    return conds


def _history(prev: BrokerGroupStatus, state: GroupState, now: str) -> list[MasterChange]:
    """The master changes, the controller's election appended when the master or its epoch moved."""
    history = list(prev.history)
    if (
        prev.master is not None
        and (prev.master.broker_id, prev.master.epoch) != (state.master_broker_id, state.master_epoch)
        and state.master_broker_id is not None
        and prev.master.epoch is not None
    ):
        history.append(
            MasterChange(
                time=now,
                from_broker_id=prev.master.broker_id,
                to_broker_id=state.master_broker_id,
                epoch=state.master_epoch,
                reason="elected by the RocketMQ controller",
            )
        )
        history = history[-HISTORY_LIMIT:]
    return history


def merge_conditions(
    previous: Sequence[Condition],
    wanted: Sequence[tuple[str, ConditionStatus, str, str]],
    now: str,
    generation: int | None,
) -> list[Condition]:
    """Exactly the wanted conditions (type, status, reason, message), timed by `core.conditions.condition`."""
    old = {c.type: c.model_dump(by_alias=True) for c in previous}
    return [
        Condition.model_validate(condition(type_, status, reason, message, now, generation, old.get(type_)))
        for type_, status, reason, message in wanted
    ]


def build_controller_status(
    replicas: int,
    ready_replicas: int,
    leader: str | None,
    name_servers: Sequence[str],
    controllers: Sequence[str],
    previous_conditions: Sequence[dict[str, object]],
    now: str,
    generation: int | None = None,
) -> ControllerGroupStatus:
    """The ControllerGroup status: which replica leads, how many are ready, and `Ready`.

    The controller quorum works while a majority of its replicas agree on a leader, so `Ready` is True with a
    leader and a ready majority (phase `Running` when every replica is ready, else `Degraded`), and False
    without a leader (`NoLeader`, the brokers then cannot fail over) or without a ready majority.
    """
    majority = replicas // 2 + 1
    ready: ConditionStatus
    if leader is None:
        ready, reason = "False", "NoLeader"
        message = (
            f"no controller answers as leader ({ready_replicas} of {replicas} replicas ready); brokers keep "
            "serving but no master can be elected until a majority of controllers agree"
        )
        phase = "Pending" if ready_replicas == 0 else "NoLeader"
    elif ready_replicas < majority:
        ready, reason = "False", "NoQuorum"
        message = f"{ready_replicas} of {replicas} replicas ready, fewer than a majority ({majority})"
        phase = "Degraded"
    else:
        ready, reason = "True", "LeaderElected"
        message = f"leader {leader}; {ready_replicas} of {replicas} replicas ready"
        phase = "Running" if ready_replicas >= replicas else "Degraded"
    conditions = set_condition(previous_conditions, "Ready", ready, reason, message, now, generation)
    return ControllerGroupStatus(
        conditions=[Condition.model_validate(c) for c in conditions],
        leader=leader,
        name_servers=list(name_servers),
        controllers=list(controllers),
        ready_replicas=ready_replicas,
        phase=phase,
    )

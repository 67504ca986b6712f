"""Observe broker groups: one `GroupState` per group from the controller leader and the brokers themselves.

Contract: `observe_groups` never raises for an unreachable controller or broker; what could not be read is
recorded (`controller_error`, `ReplicaObservation.reachable=False`) so decisions can deny on uncertainty.
It sends one batched SyncStateSet request (CONTROLLER_GET_SYNC_STATE_DATA) for every group of a controller
quorum. Remember (facts §9.4) the controller's set lags the master's by one ALTER round trip, and its `alive`
flags are the leader's own heartbeat table: both are reported as read, with the time they were read.
`observe_group` observes one group; `facts_from_state` turns one observation into the plain facts `core.failover`
decides on (the switchover, the replication policy and the re-attachment read them).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence

from rocketmq_operator.core.failover import GroupFacts, ReplicaFacts
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.remoting import RemotingClient, RemotingException, SyncStateInfo

OBSERVE_TIMEOUT_S = 2.0


async def _observe_replica(
    client: RemotingClient, ep: ReplicaEndpoint, timeout: float = OBSERVE_TIMEOUT_S
) -> ReplicaObservation:
    try:
        info = await client.get_runtime_info(ep.address, timeout=timeout)
    except (RemotingException, OSError) as exc:
        return ReplicaObservation(ep.name, ep.address, reachable=False, error=str(exc) or type(exc).__name__)
    is_master: bool | None = None
    ha_master_address: str | None = None
    ha_connections: int | None = None
    # A broker that has no role yet (controller mode, no master elected) answers runtime info but not this.
    with contextlib.suppress(RemotingException, OSError):
        ha = await client.get_ha_status(ep.address, timeout=timeout)
        is_master = ha.master
        if ha.master:
            ha_connections = len(ha.connections)
        elif ha.client is not None:
            ha_master_address = ha.client.master_addr or None
    max_offset = info.get("commitLogMaxOffset")
    return ReplicaObservation(
        ep.name,
        ep.address,
        reachable=True,
        is_master=is_master,
        max_offset=int(max_offset) if max_offset and max_offset.lstrip("-").isdigit() else None,
        version=info.get("brokerVersionDesc"),
        ha_master_address=ha_master_address,
        ha_connections=ha_connections,
    )


async def _classic_in_sync(
    client: RemotingClient, master: ReplicaObservation | None, timeout: float
) -> tuple[str, ...]:
    if master is None or not master.reachable:
        return ()
    try:
        ha = await client.get_ha_status(master.address, timeout=timeout)
    except (RemotingException, OSError):
        return ()
    # HA connections are reported by the slave's client port, not its broker address: count them only.
    return tuple(c.addr for c in ha.connections if c.in_sync)


def replica_ids(sync: SyncStateInfo | None) -> dict[str, tuple[int, bool]]:
    """Broker id and controller liveness per broker address, from the controller's replica table.

    An address may appear under two ids: a broker whose id application timed out applies again with a new check
    code and gets a second id, the first left behind, not in sync (seen on Kubernetes under load, 2026-12-02: ids
    3 and 4 for one pod, the SyncStateSet [1, 2, 4]). The id the broker holds is the one in the SyncStateSet, else
    the alive one, else the latest (the controller hands out ids in increasing order)."""
    if sync is None:
        return {}
    entries = [(i, True) for i in sync.in_sync_replicas] + [(i, False) for i in sync.not_in_sync_replicas]
    entries.sort(key=lambda e: (e[1], e[0].alive, e[0].broker_id))  # the id an address keeps comes last
    return {ident.broker_address: (ident.broker_id, ident.alive) for ident, _ in entries}


def _merge(
    group: str,
    endpoints: Sequence[ReplicaEndpoint],
    observed: Sequence[ReplicaObservation],
    sync: SyncStateInfo | None,
    controller_mode: bool,
    leader: str | None,
    controller_error: str | None,
) -> GroupState:
    ids = replica_ids(sync)
    replicas = []
    for obs in observed:
        broker_id, alive = ids.get(obs.address, (None, None))
        replicas.append(
            ReplicaObservation(
                obs.name,
                obs.address,
                obs.reachable,
                broker_id=broker_id,
                controller_alive=alive,
                is_master=obs.is_master,
                max_offset=obs.max_offset,
                version=obs.version,
                error=obs.error,
                ha_master_address=obs.ha_master_address,
                ha_connections=obs.ha_connections,
            )
        )
    if not controller_mode:
        # Classic modes: ids are fixed by ordinal (brokerId = ordinal); the master is ordinal 0.
        replicas = [ReplicaObservation(**{**r.__dict__, "broker_id": i}) for i, r in enumerate(replicas)]
    state = GroupState(
        group=group,
        observed_at=time.time(),
        controller_mode=controller_mode,
        controller_reachable=sync is not None,
        controller_leader=leader,
        controller_error=controller_error,
        replicas=tuple(replicas),
    )
    if sync is not None:
        state = GroupState(
            **{
                **state.__dict__,
                "master_broker_id": sync.master_broker_id,
                "master_address": sync.master_address,
                "master_epoch": sync.master_epoch,
                "sync_state_set": tuple(sorted(i.broker_id for i in sync.in_sync_replicas)),
                "sync_state_set_epoch": sync.sync_state_set_epoch,
            }
        )
    elif not controller_mode and replicas and replicas[0].reachable:
        state = GroupState(**{**state.__dict__, "master_broker_id": 0, "master_address": replicas[0].address})
    return state


async def observe_groups(
    client: RemotingClient,
    controllers: Sequence[str],
    groups: Mapping[str, Sequence[ReplicaEndpoint]],
    controller_mode: Mapping[str, bool] | None = None,
    timeout: float = OBSERVE_TIMEOUT_S,
) -> dict[str, GroupState]:
    """Observe every group; controller-mode groups share one leader lookup and one SyncStateSet request."""
    modes = {g: (controller_mode or {}).get(g, bool(controllers)) for g in groups}
    leader: str | None = None
    controller_error: str | None = None
    sync: dict[str, SyncStateInfo] = {}
    wanted = [g for g in groups if modes[g]]
    if wanted:
        try:
            meta = await client.find_controller_leader(list(controllers), timeout=timeout)
            leader = meta.leader_address
            if leader is None:
                raise RemotingException("no controller leader")
            sync = await client.get_sync_state_data(leader, wanted, timeout=timeout)
        except (RemotingException, OSError) as exc:
            controller_error = f"controller quorum unreadable: {exc or type(exc).__name__}"
            sync = {}
    names = list(groups)
    observed = await asyncio.gather(
        *(asyncio.gather(*(_observe_replica(client, ep, timeout) for ep in groups[g])) for g in names)
    )
    out: dict[str, GroupState] = {}
    for group, obs in zip(names, observed, strict=True):
        state = _merge(group, groups[group], obs, sync.get(group), modes[group], leader, controller_error)
        if not modes[group]:
            in_sync = await _classic_in_sync(client, state.master, timeout)
            state = GroupState(**{**state.__dict__, "classic_in_sync_addresses": in_sync})
        out[group] = state
    return out


def facts_from_state(state: GroupState, now: float | None = None) -> GroupFacts:
    """The plain facts decisions need, from one observation."""
    replicas = {
        r.broker_id: ReplicaFacts(
            r.broker_id,
            r.reachable,
            r.max_offset,
            is_master=r.is_master,
            replicating_from=r.ha_master_address,
            controller_alive=r.controller_alive,
        )
        for r in state.replicas
        if r.broker_id is not None
    }
    master = state.named_master
    master_connections = master.ha_connections if master is not None else None
    return GroupFacts(
        now=time.time() if now is None else now,
        observed_at=state.observed_at,
        controller_reachable=state.controller_reachable,
        master_broker_id=state.master_broker_id,
        sync_state_set=state.sync_state_set,
        replicas=replicas,
        master_ha_connections=master_connections,
    )


async def observe_group(
    client: RemotingClient, controllers: Sequence[str], group: str, endpoints: Sequence[ReplicaEndpoint]
) -> GroupState:
    states = await observe_groups(client, controllers, {group: endpoints}, {group: True})
    return states[group]

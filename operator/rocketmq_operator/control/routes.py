"""Name-server routes and slave re-attachment: which master a name server lists for a group, and which master
each slave replicates from.

Contract: re-attachment is decided by `core.failover` (pure: `plan_reattach`, `unconnected_slaves`);
`reattach_slaves` only carries out the plan on one observation, with the remoting client. The route surgery around
a master change that `core.failover` decided (`unregister_master`, `register_around`, `register_again`,
`attach_slaves_to`) is run by the switchover (`control.switchover`) and the replication policy (`control.policy`);
`route_master` says whose route a name server must have. Best effort throughout: a broker or name server that does
not answer is named in the steps or tried again by the next pass (`register_again` raises: its callers decide).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence

from rocketmq_operator.control.fence import PERM_READ_WRITE
from rocketmq_operator.control.observe import facts_from_state
from rocketmq_operator.control.waits import until
from rocketmq_operator.core.failover import (
    ActionKind,
    Decision,
    held_role_change_wake,
    inert_ha_address,
    plan_reattach,
    unconnected_slaves,
)
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.remoting import HaInfo, RemotingClient, RemotingException

RestartReplica = Callable[[ReplicaObservation], Awaitable[None]]
"""How a platform restarts one broker process (local: SIGTERM through the supervisor; Kubernetes: delete the pod)."""


async def reattach_slaves(
    client: RemotingClient,
    state: GroupState,
    *,
    unconnected_since: dict[int, float] | None = None,
    restart: RestartReplica | None = None,
    timeout: float = 1.0,
    master_ha: HaInfo | None = None,
    woken: set[int] | None = None,
) -> Decision:
    """Carry out `plan_reattach` on one observation. Orphaned slaves get the master's HA address
    (EXCHANGE_BROKER_HA_INFO, asked of the master). Slaves not connected to the master for the grace period
    are restarted with ``restart`` (none given: not acted on). ``unconnected_since`` is the caller's memory of
    when each slave was first seen unconnected, updated here; losing it only restarts the grace period. Best
    effort: a broker that does not answer is tried again on the next observation."""
    now = time.time()
    facts = facts_from_state(state, now)
    memory = unconnected_since if unconnected_since is not None else {}
    current = set(unconnected_slaves(facts))
    for broker_id in list(memory):
        if broker_id not in current:
            del memory[broker_id]
    for broker_id in current:
        memory.setdefault(broker_id, now)
    master_ha_address = master_ha.master_ha_address if master_ha is not None else None
    woken_memory = woken if woken is not None else set()
    woken_memory &= current
    decision = plan_reattach(
        dataclasses.replace(
            facts,
            unconnected_since=dict(memory),
            master_ha_address=master_ha_address,
            woken=frozenset(woken_memory),
        )
    )
    master = state.named_master
    if not decision.actions or master is None:
        return decision
    info: HaInfo | None = master_ha if master_ha_address else None
    for action in decision.actions:
        replica = state.replica_by_id(action.broker_id)
        if replica is None:
            continue
        if action.kind is ActionKind.RESTART:
            if restart is not None:
                memory.pop(action.broker_id, None)
                await restart(replica)
            continue
        if info is None:
            try:
                info = await client.get_ha_info(master.address, timeout=timeout)
            except (RemotingException, OSError):
                return decision
            if not info.master_ha_address:
                return decision  # it stopped being master since the observation
        with contextlib.suppress(RemotingException, OSError):
            if action.kind is ActionKind.WAKE:
                # The HA client wakes only when its master address changes: an address that refuses at once,
                # then the master's again (the second change wakes it out of the first failed connect's wait).
                woken_memory.add(action.broker_id)
                await client.set_ha_master(replica.address, _unreachable(info), timeout=timeout)
            await client.set_ha_master(replica.address, info, timeout=timeout)
    return decision


def _unreachable(info: HaInfo) -> HaInfo:
    return dataclasses.replace(info, master_ha_address=inert_ha_address(info.master_ha_address or "127.0.0.1:0"))


async def unregister_master(client: RemotingClient, cluster: str, group: str, addr: str) -> list[str]:
    """Every name server the client knows forgets the fenced master ``addr`` (best effort: one that does not
    answer is named in the steps; the old master registers again as a slave once demoted)."""
    failed: list[str] = []
    for namesrv in client.namesrv_addrs:
        try:
            await client.unregister_broker(
                namesrv, cluster=cluster, broker_name=group, broker_addr=addr, broker_id=0, timeout=1.0
            )
        except (RemotingException, OSError) as exc:
            failed.append(f"{namesrv} ({exc})")
    if not client.namesrv_addrs:
        return []
    if failed:
        return [f"name servers that did not forget the fenced master: {', '.join(failed)}"]
    return [f"every name server forgot the fenced master {addr}"]


async def register_around(
    client: RemotingClient,
    cluster: str,
    group: str,
    master: ReplicaObservation,
    replicas: Sequence[ReplicaObservation],
    *,
    timeout: float,
) -> list[str]:
    """Once every name server lists the new master (asked to register again if one does not within a second),
    ``replicas`` register again too. A registration's answer names the group's master to a slave: its HA
    address (`updateMasterHAServerAddrPeriodically`, on in controller mode) and the address it syncs topics and
    consumer offsets from (`SlaveSynchronize`), which the old master's forgetting left unset; RocketMQ would
    wait for `registerNameServerPeriod` (30 s by default, 10 s as rendered). Setting brokerPermission (to 6:
    slaves are never fenced) registers a broker with every name server (`AdminBrokerProcessor.updateBrokerConfig`).
    Best effort."""
    if not client.namesrv_addrs:
        return []

    async def listed() -> bool:
        # The group's own members (GET_BROKER_MEMBER_GROUP), not the whole cluster's table.
        for namesrv in client.namesrv_addrs:
            members = await client.get_broker_member_group(cluster, group, namesrv=namesrv, timeout=timeout)
            if members.master_addr != master.address:
                return False
        return True

    if not await until(listed, 1.0):
        with contextlib.suppress(RemotingException, OSError):
            await register_again(client, master.address, timeout)
        if not await until(listed, 1.0):
            return [f"not every name server lists the new master {master.address} yet: slaves learn it later"]
    registered: list[str] = []
    for r in replicas:
        if r.reachable and r.address != master.address:
            with contextlib.suppress(RemotingException, OSError):
                await register_again(client, r.address, timeout, permission=str(PERM_READ_WRITE))
                registered.append(r.name)
    return [f"registered {', '.join(registered)} again: their name servers name the new master"] if registered else []


async def register_again(client: RemotingClient, addr: str, timeout: float, *, permission: str | None = None) -> None:
    """Make the broker at ``addr`` register with every name server now: setting brokerPermission does
    (`AdminBrokerProcessor.updateBrokerConfig`); to ``permission``, else to the value it has."""
    if permission is None:
        config = await client.get_broker_config(addr, timeout=timeout)
        permission = config.get("brokerPermission", str(PERM_READ_WRITE))
    await client.update_broker_config(addr, {"brokerPermission": permission}, timeout=timeout)


PROMOTION_HOLD_S = 5.0
"""How long RocketMQ 5.5.0 can hold a role change behind its HA client (`core.failover.held_role_change_wake`)."""
WAKE_PERIOD_S = 0.25


async def attach_slaves_to(
    client: RemotingClient, state: GroupState, master: ReplicaObservation, skip: set[int], timeout: float
) -> None:
    """Right after an election, hand the other replicas the new master's HA address instead of waiting for the
    next pass (every put is refused under minInSyncReplicas until one of them is back in the SyncStateSet).
    While the new master has no HA address yet (its promotion runs, or RocketMQ holds it: `_promoted_ha_info`)
    its HA client is woken every `WAKE_PERIOD_S`; then each slave is pointed at it until it has read from it
    (a slave's own role change can reset the address after it was set). Best effort, within the hold and a
    second: what is left is done by the next pass."""
    deadline = time.monotonic() + PROMOTION_HOLD_S + 1.0
    info = await _promoted_ha_info(client, master, deadline, timeout)
    if info is None or not info.master_ha_address:
        return
    last_read: dict[str, int] = {}  # each slave's last read as first seen here (broker clocks, not ours)
    pending = [
        r
        for r in state.replicas
        if r.reachable and r.broker_id is not None and r.broker_id not in skip and r.address != master.address
    ]
    to_point = pending
    while pending:
        for r in to_point:
            with contextlib.suppress(RemotingException, OSError):
                await client.set_ha_master(r.address, info, timeout=timeout)
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(WAKE_PERIOD_S)
        to_point, following = [], []
        for r in pending:
            with contextlib.suppress(RemotingException, OSError):
                ha = (await client.get_ha_status(r.address, timeout=timeout)).client
                if ha is None or ha.master_addr != info.master_ha_address:
                    last_read.pop(r.address, None)
                    to_point.append(r)  # not yet, or its own role change reset it
                elif r.address not in last_read:
                    last_read[r.address] = ha.last_read_timestamp
                elif ha.last_read_timestamp > last_read[r.address]:
                    following.append(r)  # it has read from the master since it was seen pointed at it
        pending = [r for r in pending if r not in following]


async def _promoted_ha_info(
    client: RemotingClient, master: ReplicaObservation, deadline: float, timeout: float
) -> HaInfo | None:
    """The new master's HA info once it answers as master; meanwhile its HA client is woken each round with
    `held_role_change_wake` (RocketMQ 5.5.0 can hold the promotion 5 s: docs/chaos.md, finding 9)."""
    original: str | None = None
    while True:
        with contextlib.suppress(RemotingException, OSError):
            info = await client.get_ha_info(master.address, timeout=timeout)
            if info.master_ha_address:
                return info
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(WAKE_PERIOD_S)
        with contextlib.suppress(RemotingException, OSError):
            status = await client.get_ha_status(master.address, timeout=timeout)
            current = status.client.master_addr if status.client is not None else None
            if status.master or (original is None and current is None):
                continue
            original = original or current
            value = held_role_change_wake(original, current) if original is not None else None
            if value is not None:
                wake = HaInfo(master_ha_address=value, master_address=master.address, master_flush_offset=None)
                await client.set_ha_master(master.address, wake, timeout=timeout)


def route_master(state: GroupState) -> ReplicaObservation | None:
    """Whose route a name server must have: the controller's master when it answers as master; with the
    controller unreadable (restarting with the name servers it is hosted with), the one replica that answers as
    master. Brokers keep their role while the controller is down, and a deposed master that still answers as
    master is fenced by the same pass."""
    named = state.named_master
    if state.controller_reachable:
        return named if named is not None and named.reachable and named.is_master else None
    masters = [r for r in state.replicas if r.reachable and r.is_master]
    return masters[0] if len(masters) == 1 else None

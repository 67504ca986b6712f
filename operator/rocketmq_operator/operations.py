"""Execute failover and switchover plans against real RocketMQ processes, and measure them.

Contract: decisions come from `plan.failover` (pure); this module only carries out their actions in order,
with the remoting client, and stops at the first action that cannot be completed, undoing a fence it made.
Fencing a master = turning its write permission off (`brokerPermission=4`, READ only), which RocketMQ checks
on every send (the producer gets NO_PERMISSION and retries elsewhere); a platform may also stop the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.observe import GroupState, ReplicaEndpoint, ReplicaObservation, observe_groups
from rocketmq_operator.plan.failover import (
    ActionKind,
    Decision,
    GroupFacts,
    ReplicaFacts,
    plan_reattach,
    plan_switchover,
    unconnected_slaves,
)
from rocketmq_operator.remoting import HaInfo, RemotingClient, RemotingException

PERM_READ = 4
PERM_READ_WRITE = 6


class OperationRefused(Exception):
    """The plan refused (message says why and what to do), or an action could not complete."""


@dataclass
class OperationReport:
    decision: Decision
    steps: list[str] = field(default_factory=list)
    fenced_at: float | None = None
    elected_at: float | None = None
    new_master_serving_at: float | None = None
    new_master: int | None = None
    epoch: int | None = None

    @property
    def write_pause_s(self) -> float | None:
        """From the fence to the new master answering as master (the window writes were refused)."""
        if self.fenced_at is None or self.new_master_serving_at is None:
            return None
        return self.new_master_serving_at - self.fenced_at


def facts_from_state(state: GroupState, now: float | None = None) -> GroupFacts:
    """The plain facts decisions need, from one observation."""
    replicas = {
        r.broker_id: ReplicaFacts(
            r.broker_id, r.reachable, r.max_offset, is_master=r.is_master, replicating_from=r.ha_master_address
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


RestartReplica = Callable[[ReplicaObservation], Awaitable[None]]
"""How a platform restarts one broker process (local: SIGTERM through the supervisor; Kubernetes: delete the pod)."""


async def reattach_slaves(
    client: RemotingClient,
    state: GroupState,
    *,
    unconnected_since: dict[int, float] | None = None,
    restart: RestartReplica | None = None,
    timeout: float = 1.0,
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
    decision = plan_reattach(dataclasses.replace(facts, unconnected_since=dict(memory)))
    master = state.named_master
    if not decision.actions or master is None:
        return decision
    info: HaInfo | None = None
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
            await client.set_ha_master(replica.address, info, timeout=timeout)
    return decision


async def _observe(
    client: RemotingClient, controllers: Sequence[str], group: str, endpoints: Sequence[ReplicaEndpoint]
) -> GroupState:
    states = await observe_groups(client, controllers, {group: endpoints}, {group: True})
    return states[group]


async def _set_permission(client: RemotingClient, addr: str, perm: int) -> None:
    await client.update_broker_config(addr, {"brokerPermission": str(perm)})


async def switchover(
    client: RemotingClient,
    controllers: Sequence[str],
    cluster: str,
    group: str,
    endpoints: Sequence[ReplicaEndpoint],
    target_id: int,
    *,
    catch_up_timeout_s: float = 10.0,
    serve_timeout_s: float = 20.0,
) -> OperationReport:
    """Move the master to `target_id`: fence, wait for catch-up, designated election, unfence."""
    state = await _observe(client, controllers, group, endpoints)
    decision = plan_switchover(facts_from_state(state), target_id)
    report = OperationReport(decision)
    if decision.refused:
        raise OperationRefused(f"switchover refused ({decision.reason}): {decision.message}")
    old = state.named_master
    target = state.replica_by_id(target_id)
    assert old is not None and target is not None  # plan_switchover checked both
    leader = state.controller_leader
    if leader is None:
        raise OperationRefused("switchover refused: no controller leader")
    fenced = False
    try:
        for action in decision.actions:
            if action.kind is ActionKind.FENCE:
                await _set_permission(client, old.address, PERM_READ)
                fenced = True
                report.fenced_at = time.time()
                report.steps.append(f"fenced broker {old.broker_id} ({old.address}): brokerPermission=4")
            elif action.kind is ActionKind.WAIT_CATCH_UP:
                await _wait_catch_up(client, old.address, target.address, catch_up_timeout_s)
                report.steps.append(f"broker {target_id} caught up with the fenced master")
            elif action.kind is ActionKind.ELECT:
                result = await client.elect_master(leader, cluster, group, target_id, designate=True)
                report.elected_at = time.time()
                report.new_master = result.master_broker_id
                report.epoch = result.master_epoch
                report.steps.append(
                    f"controller elected broker {result.master_broker_id} (epoch {result.master_epoch})"
                )
            elif action.kind is ActionKind.UNFENCE:
                await _set_permission(client, old.address, PERM_READ_WRITE)
                fenced = False
                report.steps.append(f"restored write permission on broker {old.broker_id}")
        await _wait_serving(client, target.address, serve_timeout_s)
        report.new_master_serving_at = time.time()
    except (RemotingException, OSError, TimeoutError) as exc:
        if fenced:
            # Never leave a group with its only writable master fenced.
            try:
                await _set_permission(client, old.address, PERM_READ_WRITE)
                report.steps.append("rolled back the fence")
            except (RemotingException, OSError):
                report.steps.append("could NOT roll back the fence: set brokerPermission=6 by hand")
        raise OperationRefused(f"switchover to broker {target_id} failed: {exc}; steps: {report.steps}") from None
    return report


async def _max_offset(client: RemotingClient, addr: str) -> int:
    info = await client.get_runtime_info(addr, timeout=2.0)
    return int(info.get("commitLogMaxOffset", "0") or 0)


async def _wait_catch_up(client: RemotingClient, master: str, target: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    want = await _max_offset(client, master)
    while True:
        have = await _max_offset(client, target)
        if have >= want:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"target at offset {have} did not reach the fenced master's {want} in {timeout_s}s")
        await asyncio.sleep(0.05)


async def _wait_serving(client: RemotingClient, addr: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            ha = await client.get_ha_status(addr, timeout=1.0)
            if ha.master:
                return
        except (RemotingException, OSError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{addr} did not become master within {timeout_s}s")
        await asyncio.sleep(0.05)

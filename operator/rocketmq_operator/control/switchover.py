"""Execute a switchover plan against real RocketMQ processes, and measure it: the one switchover of the CLI, the roll,
the GitOps annotation and the drain.

Contract: decisions come from `core.failover` (pure: `plan_switchover`, and `plan_fence_rollback` when it fails);
this module only carries out their actions in order, with the remoting client, and stops at the first action that
cannot be completed, undoing a fence it made. The old master is fenced while it still answers
(`control.fence.switchover_fence_config`: a fence with a lease of `FENCE_LEASE_S`, which the replication policy
gives back if a switchover dies midway), the target catches up, the controller elects it, the name servers and
slaves learn it (`control.routes`), and the old master is unfenced once it is a slave. `OperationReport` times the
write pause: from the fence to the new master storing puts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control.fence import FENCE_LEASE_S, show, switchover_fence_config, unfence_config
from rocketmq_operator.control.observe import facts_from_state, observe_group
from rocketmq_operator.control.offsets import copy_offsets
from rocketmq_operator.control.routes import attach_slaves_to, register_around, unregister_master
from rocketmq_operator.control.topics import carry_over
from rocketmq_operator.control.waits import until
from rocketmq_operator.core.failover import ActionKind, Decision, plan_fence_rollback, plan_switchover
from rocketmq_operator.core.observation import ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import TopicAdmin

CATCH_UP_POLL_S = 0.01
"""Catch-up and promotion polls: every poll interval is write pause (the master is fenced); a local request
costs ~1-5 ms."""


# Refusals that say "not now" rather than "never": the state could not be read. A request kept (the GitOps
# annotation) is tried again on the next pass instead of being dropped.
TRANSIENT_REFUSALS = frozenset({"ControllerUnavailable", "StaleObservation"})


class OperationRefused(Exception):
    """The plan refused (message says why and what to do), or an action could not complete. ``transient``: the
    state could not be read (no controller leader, an old observation); the same request may succeed later."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass
class OperationReport:
    decision: Decision
    steps: list[str] = field(default_factory=list)
    fenced_at: float | None = None
    elected_at: float | None = None
    new_master_serving_at: float | None = None
    new_master_writable_at: float | None = None
    new_master: int | None = None
    epoch: int | None = None

    @property
    def write_pause_s(self) -> float | None:
        """From the fence to the new master storing puts again: answering as master with a SyncStateSet of at
        least minInSyncReplicas (the election resets it to the new master alone). What a client sees, less its
        route refresh; None when the new master was not seen writable within the switchover's bound."""
        if self.fenced_at is None or self.new_master_writable_at is None:
            return None
        return self.new_master_writable_at - self.fenced_at


async def switchover(
    client: RemotingClient,
    controllers: Sequence[str],
    cluster: str,
    group: str,
    endpoints: Sequence[ReplicaEndpoint],
    target_id: int,
    *,
    min_in_sync_replicas: int,
    catch_up_timeout_s: float = 10.0,
    serve_timeout_s: float = 20.0,
) -> OperationReport:
    """Move the master to `target_id`: fence, wait for catch-up, designated election, unfence.
    ``min_in_sync_replicas``: the group's value (its spec), which the unfence gives back to the old master."""
    state = await observe_group(client, controllers, group, endpoints)
    decision = plan_switchover(facts_from_state(state), target_id)
    report = OperationReport(decision)
    if decision.refused:
        raise OperationRefused(
            f"switchover refused ({decision.reason}): {decision.message}",
            transient=decision.reason in TRANSIENT_REFUSALS,
        )
    old = state.named_master
    target = state.replica_by_id(target_id)
    assert old is not None and target is not None  # plan_switchover checked both
    leader = state.controller_leader
    if leader is None:
        raise OperationRefused("switchover refused: no controller leader", transient=True)
    fenced = electing = False
    unfence = unfence_config(min_in_sync_replicas, None)
    old_id = old.broker_id if old.broker_id is not None else -1
    all_but_old = {r.broker_id for r in state.replicas if r.broker_id is not None and r.broker_id != old_id}
    old_unfenced = False
    try:
        for action in decision.actions:
            if action.kind is ActionKind.FENCE:
                # Topics and groups the target lacks, copied while the master still takes writes (no pause);
                # those made meanwhile are copied again under the fence, below. The consumer offsets too, here
                # only: copied under the fence they would lengthen the write pause by a read of two tables and a
                # write per changed offset, and what consumers commit until the election is read again anyway.
                report.steps.extend(await _carry_over(client, old.address, target.address))
                report.steps.extend(await _copy_offsets(client, old.address, target.address))
                heartbeat = (await client.get_broker_config(old.address)).get("haSendHeartbeatInterval")
                unfence = unfence_config(min_in_sync_replicas, heartbeat)
                fence = switchover_fence_config()
                fenced = True  # before the request: a fence that took effect but timed out is rolled back too
                await client.update_broker_config(old.address, fence)
                report.fenced_at = time.time()
                report.steps.append(f"fenced broker {old.broker_id} ({old.address}): {show(fence)}")
            elif action.kind is ActionKind.WAIT_CATCH_UP:
                await _wait_catch_up(client, old.address, target.address, catch_up_timeout_s)
                report.steps.append(f"broker {target_id} caught up with the fenced master")
                report.steps.extend(await _carry_over(client, old.address, target.address))
            elif action.kind is ActionKind.ELECT:
                # The other slaves take their new master's HA address from their own name-server registration on
                # the role change, which races the new master's: a name server still listing the old master
                # sends them to it, and RocketMQ's HA client then stays on it (a slave by then) until the policy
                # restarts it (5 of 12 switchovers, ~30 s each, docs/benchmarks.md). Fenced and caught up, the
                # old master is no writer any more: forgotten by the name servers, a registration names no master
                # (the address is left unset, and handed over below) or the new one.
                report.steps.extend(await unregister_master(client, cluster, group, old.address))
                electing = True  # from here a failed request may still have elected: see the rollback below
                try:
                    result = await client.elect_master(leader, cluster, group, target_id, designate=True)
                    report.new_master, report.epoch = result.master_broker_id, result.master_epoch
                    report.steps.append(
                        f"controller elected broker {result.master_broker_id} (epoch {result.master_epoch})"
                    )
                except (RemotingException, OSError, TimeoutError) as exc:
                    # The answer lost (a timeout under load) says nothing of the election: the controller does.
                    epoch = await _elected_anyway(client, controllers, group, old, target_id)
                    if epoch is None:
                        raise
                    report.new_master, report.epoch = target_id, epoch
                    report.steps.append(
                        f"the election request failed ({exc}), but the controller names broker {target_id} "
                        f"(epoch {epoch}): going on"
                    )
                fenced = electing = False  # the group has a new master; this fence no longer guards the only writer
                report.elected_at = time.time()
                # Serving before the old master is unfenced: the old master still holds its HA connection to the
                # target until it has changed to slave (it reports SLAVE before it drops them), and a heartbeat it
                # sends once unfenced, read by the target's HA client while that is shut down for the promotion,
                # holds the promotion for 5 s (RocketMQ 5.5 AutoSwitchHAClient; see
                # control.fence.FENCED_HEARTBEAT_MS).
                if await _wait_role(
                    client, target.address, master=True, timeout_s=serve_timeout_s, interval_s=CATCH_UP_POLL_S
                ):
                    report.new_master_serving_at = time.time()
                    await attach_slaves_to(client, state, target, {old_id}, timeout=1.0)
            elif action.kind is ActionKind.UNFENCE:
                # The controller tells the old master of its demotion one way and asynchronously. Writable
                # before it has changed to slave, it would acknowledge puts with acks from slaves still attached
                # to it, and then truncate them away under the new master: unfence only once it is a slave.
                started = time.monotonic()
                if not await _wait_role(client, old.address, master=False, timeout_s=serve_timeout_s):
                    report.steps.append(
                        f"broker {old.broker_id} did not report itself a slave within {serve_timeout_s:g}s: left "
                        f"fenced (its lease lapses in {FENCE_LEASE_S:g}s, then the replication policy unfences it "
                        "once it is a slave)"
                    )
                elif await _unfence(client, old.address, unfence, serve_timeout_s - (time.monotonic() - started)):
                    report.steps.append(f"broker {old.broker_id} is a slave now; unfenced ({show(unfence)})")
                    old_unfenced = True
                    if report.new_master_serving_at is not None:
                        # Demoted, it takes its HA address from a registration too.
                        await attach_slaves_to(client, state, target, all_but_old, timeout=1.0)
                else:
                    # The election is done: a fenced slave refuses no put, but must not stay so (elected later,
                    # it would refuse every write).
                    report.steps.append(
                        f"broker {old.broker_id} is a slave now, but did not take {show(unfence)} within "
                        f"{serve_timeout_s:g}s: left fenced until its lease lapses ({FENCE_LEASE_S:g}s), then the "
                        "replication policy unfences it"
                    )
        if report.new_master_serving_at is None:
            raise TimeoutError(f"{target.address} did not become master within {serve_timeout_s:g}s")
        if await _wait_writable(client, target.address, min_in_sync_replicas, WRITABLE_TIMEOUT_S):
            report.new_master_writable_at = time.time()
        else:
            report.steps.append(
                f"broker {target_id} is master, but its SyncStateSet was still below minInSyncReplicas "
                f"{min_in_sync_replicas} after {WRITABLE_TIMEOUT_S:g}s: puts are refused until a slave rejoins"
            )
        # The old master only once it is unfenced: a fenced one keeps its permission off.
        again = [r for r in state.replicas if r.broker_id in all_but_old or (r is old and old_unfenced)]
        report.steps.extend(await register_around(client, cluster, group, target, again, timeout=1.0))
    except (RemotingException, OSError, TimeoutError) as exc:
        if fenced:
            report.steps.append(
                await _roll_back_fence(client, controllers, group, old, state.master_epoch, unfence, electing)
            )
        raise OperationRefused(f"switchover to broker {target_id} failed: {exc}; steps: {report.steps}") from None
    return report


async def _elected_anyway(
    client: RemotingClient,
    controllers: Sequence[str],
    group: str,
    old: ReplicaObservation,
    target_id: int,
) -> int | None:
    """The epoch at which the controller names ``target_id`` (not the old master) master now, or None (not
    elected, or the controller unreadable)."""
    with contextlib.suppress(RemotingException, OSError, TimeoutError):
        now = await observe_group(client, controllers, group, [ReplicaEndpoint(old.name, old.address)])
        if now.controller_reachable and now.master_broker_id == target_id and now.master_epoch is not None:
            return now.master_epoch
    return None


async def _roll_back_fence(
    client: RemotingClient,
    controllers: Sequence[str],
    group: str,
    old: ReplicaObservation,
    epoch_before: int | None,
    unfence: dict[str, str],
    electing: bool,
) -> str:
    """Never leave a group with its only master fenced, and never unfence a master the controller may have
    deposed (`core.failover.plan_fence_rollback`). Before the election request nothing can have elected."""
    old_id = old.broker_id if old.broker_id is not None else -1
    if electing:
        readable, master_now, epoch_now = False, None, None
        with contextlib.suppress(RemotingException, OSError, TimeoutError):
            now = await observe_group(client, controllers, group, [ReplicaEndpoint(old.name, old.address)])
            readable, master_now, epoch_now = now.controller_reachable, now.master_broker_id, now.master_epoch
        decision = plan_fence_rollback(
            old_id, epoch_before, controller_readable=readable, master_now=master_now, epoch_now=epoch_now
        )
        if decision.refused:
            return decision.message
    try:
        await client.update_broker_config(old.address, unfence)
        return "rolled back the fence"
    except (RemotingException, OSError, TimeoutError):
        return (
            f"could NOT roll back the fence: its lease lapses in {FENCE_LEASE_S:g}s, then the replication policy "
            f"unfences it (or set {show(unfence)} now)"
        )


async def switchover_group(
    client: RemotingClient,
    bg: BrokerGroup,
    controllers: Sequence[str],
    endpoints: Sequence[ReplicaEndpoint],
    target_id: int,
) -> OperationReport:
    """`switchover` of a BrokerGroup: its cluster, its name and its spec's minInSyncReplicas (given back by the
    unfence)."""
    return await switchover(
        client,
        controllers,
        bg.spec.cluster_name,
        bg.metadata.name,
        endpoints,
        target_id,
        min_in_sync_replicas=effective_quorum(bg.spec).min_in_sync_replicas,
    )


async def _carry_over(client: RemotingClient, master: str, target: str) -> list[str]:
    """`control.topics.carry_over`, best effort: what it could not copy, the platforms' topic pass re-creates on
    the new master from what it saw on the old one (`GroupTopicMemory`), seconds later."""
    try:
        return await carry_over(TopicAdmin(client), master, target, timeout=2.0)
    except (RemotingException, OSError) as exc:
        return [f"could not copy topics and groups to {target} before the election: {exc or type(exc).__name__}"]


async def _copy_offsets(client: RemotingClient, master: str, target: str) -> list[str]:
    """The consumers' committed offsets onto the target before the fence (`control.offsets`: RocketMQ 5.5.0's
    slaves cannot copy them), so every consumer group resumes where it was on the old master. Best effort: what
    is committed to the old master after this, until the election, is read again (at least once)."""
    copied = await copy_offsets(client, master, [target])
    steps = [f"copied {copied.total} consumer offsets to {target}"] if copied.total else []
    return steps + copied.errors


async def _max_offset(client: RemotingClient, addr: str) -> int:
    return (await _store_end(client, addr))[0]


async def _store_end(client: RemotingClient, addr: str) -> tuple[int, int]:
    """The broker's commit-log end and how many bytes of it its consume queues have not indexed yet."""
    info = await client.get_runtime_info(addr, timeout=2.0)
    return int(info.get("commitLogMaxOffset", "0") or 0), int(info.get("dispatchBehindBytes", "0") or 0)


async def _wait_catch_up(client: RemotingClient, master: str, target: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        # Read the fenced master's end every time: a put that passed the permission check before the fence
        # may append after the first read. Done only when its end has not moved while the target was read: a
        # put appended in between could be acknowledged by another slave's ack and then truncated away under
        # the new master. And only once the target has indexed what it holds: promoted with bytes behind,
        # RocketMQ's change to master sleeps 100 ms at a time until they are (AutoSwitchHAService.changeToMaster)
        # with the group masterless; fenced, nothing new arrives and the index catches up in milliseconds.
        want = await _max_offset(client, master)
        have, behind = await _store_end(client, target)
        if have >= want and behind <= 0 and await _max_offset(client, master) == want:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"target at offset {have} ({behind} bytes not yet indexed) did not reach the fenced master's "
                f"{want} in {timeout_s}s"
            )
        await asyncio.sleep(CATCH_UP_POLL_S)


WRITABLE_TIMEOUT_S = 5.0  # a slave rejoins a new master within tens of ms; past this the policy re-attaches it


async def _wait_writable(client: RemotingClient, addr: str, min_in_sync_replicas: int, timeout_s: float) -> bool:
    """The master at ``addr`` counts at least ``min_in_sync_replicas`` in its SyncStateSet (itself included): it
    stores puts again."""

    async def writable() -> bool:
        status = await client.get_ha_status(addr, timeout=1.0)
        return status.master and status.in_sync_slave_nums + 1 >= min_in_sync_replicas

    return await until(writable, timeout_s, interval_s=0.02)


async def _wait_role(
    client: RemotingClient, addr: str, *, master: bool, timeout_s: float, interval_s: float = 0.05
) -> bool:
    """The broker at ``addr`` answers that it is (``master``) or is not a master."""

    async def in_role() -> bool:
        return (await client.get_ha_status(addr, timeout=1.0)).master == master

    return await until(in_role, timeout_s, interval_s)


async def _unfence(client: RemotingClient, addr: str, unfence: dict[str, str], timeout_s: float) -> bool:
    """The fence's keys back on ``addr``, asked again until the deadline (a fence left behind would make it a
    master refusing every put after a later election)."""

    async def ask() -> bool:
        await client.update_broker_config(addr, unfence)
        return True

    return await until(ask, timeout_s, interval_s=0.2)

"""Execute failover and switchover plans against real RocketMQ processes, and measure them.

Contract: decisions come from `core.failover` (pure); this module only carries out their actions in order,
with the remoting client, and stops at the first action that cannot be completed, undoing a fence it made.
Fencing a master that answers (`fence_config`) = raising its `minInSyncReplicas` above any SyncStateSet size,
so that the broker refuses every put that waits for replication (IN_SYNC_REPLICAS_NOT_ENOUGH, not stored;
`CommitLog.asyncPutMessage`, checked on every put in controller mode), and turning its write permission off
(`brokerPermission=4`), so that clients route away at their next route refresh. The permission alone is no
fence: RocketMQ checks it on a send only for ordered topics (`AbstractSendMessageProcessor.msgCheck`), and a
client with a cached route (the Java client refreshes every 30 s) keeps being acknowledged. Fencing a master that
does not answer, or a deposed one, is the platform's (`FailoverPlatform.fence`: the local supervisor kills the
process it owns; Kubernetes deletes the pod with grace period 0). `run_replication_policy` is the one policy
pass both platforms run after each observation: fence deposed masters, fail over a master that does not answer,
re-attach slaves, re-register a master a name server lost. `run_fences` keeps the replicas a user fenced
(`core.fence`) fenced with the same `fence_config`, and unfences them when asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control.observe import observe_groups
from rocketmq_operator.control.topics import carry_over
from rocketmq_operator.core.failover import (
    ActionKind,
    Decision,
    FenceSeen,
    GroupFacts,
    MasterEvidence,
    ProcessState,
    ReplicaFacts,
    confirmation_probe_s,
    plan_abandoned_fences,
    plan_failover,
    plan_fence_deposed,
    plan_fence_rollback,
    plan_reattach,
    plan_switchover,
    track_deposed,
    unconnected_slaves,
)
from rocketmq_operator.core.fence import FenceFacts, plan_fences
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.remoting import HaInfo, RemotingClient, RemotingException
from rocketmq_operator.remoting.admin import TopicAdmin
from rocketmq_operator.render.config import CONTROLLER_MODE_TIMINGS

PERM_READ = 4
PERM_READ_WRITE = 6
FENCED_MIN_IN_SYNC_REPLICAS = 1024
"""Above any SyncStateSet a group can have: a master with this `minInSyncReplicas` stores no put that waits for
replication (a put with waitStoreMsgOK=false skips the check, and is never acknowledged as replicated anyway)."""
FENCED_HEARTBEAT_MS = 3_600_000
"""`haSendHeartbeatInterval` of a fenced master: it sends its slaves nothing more. The target's HA client is shut
down when it is promoted; a frame it reads after that (RocketMQ 5.5 `AutoSwitchHAClient`: "State not matched",
then `closeMasterAndWait`) holds the promotion for 5 s, which an idle master's heartbeat every ~100 ms made
happen in about one switchover in ten (docs/benchmarks.md, Switchover)."""
DEFAULT_HEARTBEAT_MS = CONTROLLER_MODE_TIMINGS["haSendHeartbeatInterval"]


FENCE_DOOR_KEY = "startAcceptSendRequestTimeStamp"
"""A hot BrokerConfig key: `SendMessageProcessor.preSend` refuses every send while the broker's clock is before it."""
FENCE_FOREVER_MS = 4_102_444_800_000
"""`startAcceptSendRequestTimeStamp` of a user's fence (2100-01-01): it has no lease."""
FENCE_LEASE_S = 60.0
"""How long a switchover's fence keeps the send door shut: longer than a switchover may take (catch-up 10 s,
election, 20 s for each role change). A switchover that dies midway leaves a fence whose lease lapses, and the
replication policy gives it back (`core.failover.plan_abandoned_fences`)."""


CATCH_UP_POLL_S = 0.01
"""Catch-up and promotion polls: every poll interval is write pause (the master is fenced); a local request
costs ~1-5 ms."""


def fence_config(lease_until_ms: int | None = None) -> dict[str, str]:
    """The hot broker keys that fence a master which still answers (see the module doc).
    ``lease_until_ms``: a switchover's fence lapses then (wall clock, ms); a user's fence (None) never does."""
    return {
        "brokerPermission": str(PERM_READ),
        "minInSyncReplicas": str(FENCED_MIN_IN_SYNC_REPLICAS),
        "haSendHeartbeatInterval": str(FENCED_HEARTBEAT_MS),
        # Refuses every send at the door (SendMessageProcessor.preSend, before anything reads the broker's role):
        # a put that passed the role check as master and reaches the commit log after the demotion skips the
        # replication check and wait (CommitLog.needHandleHA reads the role again) and is answered PUT_OK from
        # the deposed master alone (docs/fencing.md). The store's minInSyncReplicas refusal cannot stop that one.
        FENCE_DOOR_KEY: str(FENCE_FOREVER_MS if lease_until_ms is None else lease_until_ms),
    }


def switchover_fence_config(now_s: float | None = None) -> dict[str, str]:
    """A switchover's fence: `fence_config` with a lease of `FENCE_LEASE_S` from ``now_s``."""
    now = time.time() if now_s is None else now_s
    return fence_config(int((now + FENCE_LEASE_S) * 1000))


def unfence_config(min_in_sync_replicas: int, heartbeat_ms: str | None) -> dict[str, str]:
    """The values a fence replaced: write permission, the group's `minInSyncReplicas`, the heartbeat the broker
    ran with before (read before the fence; the rendered default when unknown or itself a fence's), and the send
    door open (RocketMQ's default, which the project never renders otherwise)."""
    if heartbeat_ms is None or heartbeat_ms == str(FENCED_HEARTBEAT_MS):
        heartbeat_ms = DEFAULT_HEARTBEAT_MS
    return {
        "brokerPermission": str(PERM_READ_WRITE),
        "minInSyncReplicas": str(min_in_sync_replicas),
        "haSendHeartbeatInterval": heartbeat_ms,
        FENCE_DOOR_KEY: "0",
    }


def is_fenced(config: Mapping[str, str]) -> bool:
    """The broker's live config carries the fence (`fence_config`): write permission off, no put stored, the send
    door shut (a fence set before the door key existed is not whole: fenced again)."""
    return (
        config.get("brokerPermission") == str(PERM_READ)
        and config.get("minInSyncReplicas") == str(FENCED_MIN_IN_SYNC_REPLICAS)
        and _door_shut_until_ms(config) > 0
    )


def fence_lease_expired(config: Mapping[str, str], now_s: float | None = None) -> bool:
    """A fenced broker whose fence has a lease (a switchover's) that has passed. A user's fence never expires."""
    until = _door_shut_until_ms(config)
    now_ms = (time.time() if now_s is None else now_s) * 1000
    return is_fenced(config) and until < FENCE_FOREVER_MS and until <= now_ms


def _door_shut_until_ms(config: Mapping[str, str]) -> int:
    value = config.get(FENCE_DOOR_KEY, "0")
    return int(value) if value.lstrip("-").isdigit() else 0


@dataclass
class FenceOutcome:
    """What a fence pass did: the replicas fenced now (status.fenced), each step done, and each problem."""

    fenced: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def run_fences(
    client: RemotingClient,
    state: GroupState,
    wanted: Collection[str],
    recorded: Collection[str],
    known: Collection[str],
    *,
    min_in_sync_replicas: int,
    annotation: str = "rocketmq-operator.dev/fence",
    timeout: float = 3.0,
) -> FenceOutcome:
    """The user's fences (`core.fence.plan_fences`) on one observation: read the live config of every replica
    wanted or recorded, fence or unfence what the plan says (the switchover's `fence_config`; the unfence gives back
    write permission, the group's ``min_in_sync_replicas`` and the default heartbeat, which the hot-key pass then
    brings to the rendered value). A broker that does not answer is a problem of the outcome, never raised."""
    observed: dict[str, FenceFacts] = {}
    for replica in state.replicas:
        if replica.name not in wanted and replica.name not in recorded:
            continue
        if not replica.reachable:
            observed[replica.name] = FenceFacts(reachable=False)
            continue
        try:
            config = await client.get_broker_config(replica.address, timeout=timeout)
        except (RemotingException, OSError):
            observed[replica.name] = FenceFacts(reachable=False)
            continue
        # A switchover's fence (a lease) is not the user's: it lapses and the policy gives it back.
        user_fence = is_fenced(config) and _door_shut_until_ms(config) >= FENCE_FOREVER_MS
        observed[replica.name] = FenceFacts(reachable=True, fenced=user_fence)
    plan = plan_fences(wanted, recorded, known, observed, annotation=annotation)
    outcome = FenceOutcome(fenced=list(plan.fenced), problems=list(plan.problems))
    addresses = {r.name: r.address for r in state.replicas}
    for name, values, verb in [
        *((n, fence_config(), "fenced") for n in plan.fence),
        *((n, unfence_config(min_in_sync_replicas, None), "unfenced") for n in plan.unfence),
    ]:
        try:
            await client.update_broker_config(addresses[name], values, timeout=timeout)
        except (RemotingException, OSError) as exc:
            outcome.problems.append(f"{name} could not be {verb}, tried again next pass: {exc or type(exc).__name__}")
            if verb == "fenced":
                outcome.fenced.remove(name)
            else:
                outcome.fenced = sorted({*outcome.fenced, name})
            continue
        outcome.steps.append(f"{verb} {name} ({_show(values)})")
    return outcome


class OperationRefused(Exception):
    """The plan refused (message says why and what to do), or an action could not complete."""


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
    host = (info.master_ha_address or "127.0.0.1:0").rsplit(":", 1)[0]
    return dataclasses.replace(info, master_ha_address=f"{host}:0")  # port 0: every connect fails at once


async def observe_group(
    client: RemotingClient, controllers: Sequence[str], group: str, endpoints: Sequence[ReplicaEndpoint]
) -> GroupState:
    states = await observe_groups(client, controllers, {group: endpoints}, {group: True})
    return states[group]


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
        raise OperationRefused(f"switchover refused ({decision.reason}): {decision.message}")
    old = state.named_master
    target = state.replica_by_id(target_id)
    assert old is not None and target is not None  # plan_switchover checked both
    leader = state.controller_leader
    if leader is None:
        raise OperationRefused("switchover refused: no controller leader")
    fenced = electing = False
    unfence = unfence_config(min_in_sync_replicas, None)
    old_id = old.broker_id if old.broker_id is not None else -1
    all_but_old = {r.broker_id for r in state.replicas if r.broker_id is not None and r.broker_id != old_id}
    old_unfenced = False
    try:
        for action in decision.actions:
            if action.kind is ActionKind.FENCE:
                # Topics and groups the target lacks, copied while the master still takes writes (no pause);
                # those made meanwhile are copied again under the fence, below.
                report.steps.extend(await _carry_over(client, old.address, target.address))
                heartbeat = (await client.get_broker_config(old.address)).get("haSendHeartbeatInterval")
                unfence = unfence_config(min_in_sync_replicas, heartbeat)
                fence = switchover_fence_config()
                fenced = True  # before the request: a fence that took effect but timed out is rolled back too
                await client.update_broker_config(old.address, fence)
                report.fenced_at = time.time()
                report.steps.append(f"fenced broker {old.broker_id} ({old.address}): {_show(fence)}")
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
                report.steps.extend(await _unregister_master(client, cluster, group, old.address))
                electing = True  # from here a failed request may still have elected: see the rollback below
                result = await client.elect_master(leader, cluster, group, target_id, designate=True)
                fenced = electing = False  # the group has a new master; this fence no longer guards the only writer
                report.elected_at = time.time()
                report.new_master = result.master_broker_id
                report.epoch = result.master_epoch
                report.steps.append(
                    f"controller elected broker {result.master_broker_id} (epoch {result.master_epoch})"
                )
                # Serving before the old master is unfenced: the old master still holds its HA connection to the
                # target until it has changed to slave (it reports SLAVE before it drops them), and a heartbeat it
                # sends once unfenced, read by the target's HA client while that is shut down for the promotion,
                # holds the promotion for 5 s (RocketMQ 5.5 AutoSwitchHAClient; see FENCED_HEARTBEAT_MS).
                if await _wait_role(
                    client, target.address, master=True, timeout_s=serve_timeout_s, interval_s=CATCH_UP_POLL_S
                ):
                    report.new_master_serving_at = time.time()
                    await _attach_slaves_to(client, state, target, {old_id}, timeout=1.0)
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
                    report.steps.append(f"broker {old.broker_id} is a slave now; unfenced ({_show(unfence)})")
                    old_unfenced = True
                    if report.new_master_serving_at is not None:
                        # Demoted, it takes its HA address from a registration too.
                        await _attach_slaves_to(client, state, target, all_but_old, timeout=1.0)
                else:
                    # The election is done: a fenced slave refuses no put, but must not stay so (elected later,
                    # it would refuse every write).
                    report.steps.append(
                        f"broker {old.broker_id} is a slave now, but did not take {_show(unfence)} within "
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
        report.steps.extend(await _register_around(client, group, target, again, timeout=1.0))
    except (RemotingException, OSError, TimeoutError) as exc:
        if fenced:
            report.steps.append(
                await _roll_back_fence(client, controllers, group, old, state.master_epoch, unfence, electing)
            )
        raise OperationRefused(f"switchover to broker {target_id} failed: {exc}; steps: {report.steps}") from None
    return report


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
            f"unfences it (or set {_show(unfence)} now)"
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


async def _until(check: Callable[[], Awaitable[bool]], timeout_s: float, interval_s: float = 0.05) -> bool:
    """``True`` as soon as ``check`` does; ``False`` at the deadline. A broker that does not answer (or times out)
    is asked again: under load one request may miss its timeout while the next one is answered."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if await check():
                return True
        except (RemotingException, OSError):
            pass
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval_s)


async def _wait_writable(client: RemotingClient, addr: str, min_in_sync_replicas: int, timeout_s: float) -> bool:
    """The master at ``addr`` counts at least ``min_in_sync_replicas`` in its SyncStateSet (itself included): it
    stores puts again."""

    async def writable() -> bool:
        status = await client.get_ha_status(addr, timeout=1.0)
        return status.master and status.in_sync_slave_nums + 1 >= min_in_sync_replicas

    return await _until(writable, timeout_s, interval_s=0.02)


async def _wait_role(
    client: RemotingClient, addr: str, *, master: bool, timeout_s: float, interval_s: float = 0.05
) -> bool:
    """The broker at ``addr`` answers that it is (``master``) or is not a master."""

    async def in_role() -> bool:
        return (await client.get_ha_status(addr, timeout=1.0)).master == master

    return await _until(in_role, timeout_s, interval_s)


async def _unregister_master(client: RemotingClient, cluster: str, group: str, addr: str) -> list[str]:
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


async def _register_around(
    client: RemotingClient,
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
    wait for `registerNameServerPeriod` (30 s). Setting brokerPermission (to 6: slaves are never fenced)
    registers a broker with every name server (`AdminBrokerProcessor.updateBrokerConfig`). Best effort."""
    if not client.namesrv_addrs:
        return []

    async def listed() -> bool:
        for namesrv in client.namesrv_addrs:
            broker = (await client.get_cluster_info(namesrv=namesrv, timeout=timeout)).broker_addr_table.get(group)
            if broker is None or broker.broker_addrs.get(0) != master.address:
                return False
        return True

    if not await _until(listed, 1.0):
        with contextlib.suppress(RemotingException, OSError):
            await _register_again(client, master.address, timeout)
        if not await _until(listed, 1.0):
            return [f"not every name server lists the new master {master.address} yet: slaves learn it later"]
    registered: list[str] = []
    for r in replicas:
        if r.reachable and r.address != master.address:
            with contextlib.suppress(RemotingException, OSError):
                await _register_again(client, r.address, timeout, permission=str(PERM_READ_WRITE))
                registered.append(r.name)
    return [f"registered {', '.join(registered)} again: their name servers name the new master"] if registered else []


async def _register_again(client: RemotingClient, addr: str, timeout: float, *, permission: str | None = None) -> None:
    """Make the broker at ``addr`` register with every name server now: setting brokerPermission does
    (`AdminBrokerProcessor.updateBrokerConfig`); to ``permission``, else to the value it has."""
    if permission is None:
        config = await client.get_broker_config(addr, timeout=timeout)
        permission = config.get("brokerPermission", str(PERM_READ_WRITE))
    await client.update_broker_config(addr, {"brokerPermission": permission}, timeout=timeout)


def _show(config: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


async def _unfence(client: RemotingClient, addr: str, unfence: dict[str, str], timeout_s: float) -> bool:
    """The fence's keys back on ``addr``, asked again until the deadline (a fence left behind would make it a
    master refusing every put after a later election)."""

    async def ask() -> bool:
        await client.update_broker_config(addr, unfence)
        return True

    return await _until(ask, timeout_s, interval_s=0.2)


class FailoverPlatform(Protocol):
    """What only a platform can do to a replica: it owns the process (local) or the pod (Kubernetes)."""

    async def fence(self, replica: ReplicaObservation, *, started_before: float | None) -> str:
        """Make sure the replica's process cannot acknowledge anything: kill it now (it restarts and registers
        as whatever the controller says). ``started_before``: act only on a process started before that time
        (the one that was master), not on its restarted successor. Returns what was done, for the log."""
        ...

    async def restart(self, replica: ReplicaObservation) -> None:
        """A graceful restart (SIGTERM, or pod deletion with its grace period)."""
        ...

    async def freeze(self, replica: ReplicaObservation) -> bool:
        """Stop the replica's process where it stands without closing its connections (SIGSTOP): it sends
        nothing more, and the controller, whose channel to it stays open, does not elect on its own yet. False
        where the platform cannot (a pod cannot be frozen from outside)."""
        ...

    async def process_state(self, replica: ReplicaObservation) -> ProcessState:
        """What the platform sees of the replica's process (local: the process it owns; Kubernetes: unknown)."""
        ...


@dataclass
class PolicyMemory:
    """What one group's policy remembers between passes (in memory only: losing it restarts the grace periods
    and forgets deposed masters that have not answered as slaves yet, which the next master change re-learns)."""

    last_answered: dict[int, float] = field(default_factory=dict)  # broker id -> last observation it answered
    previous_master: int | None = None  # the master the controller named at the last readable observation
    deposed_at: dict[int, float] = field(default_factory=dict)  # see core.failover.track_deposed
    unconnected_since: dict[int, float] = field(default_factory=dict)
    woken: set[int] = field(default_factory=set)  # unconnected slaves woken once in this episode
    route_wrong_since: dict[str, float] = field(default_factory=dict)  # name server -> first seen without master
    fences_checked_at: float = 0.0  # the last look for fences a switchover left behind


@dataclass(frozen=True)
class PolicySettings:
    cluster: str
    allow_unclean: bool = False
    detection_s: float = 5.0
    name_servers: tuple[str, ...] = ()
    # A name server that lists another master: the new master re-registers itself on a role change, give it this
    # long. One that lists none (restarted, or only slaves registered so far) is given the route at once.
    route_grace_s: float = 0.5
    min_in_sync_replicas: int = 1  # the group's (its spec): what an unfence gives back


def policy_settings(bg: BrokerGroup, name_servers: Sequence[str]) -> PolicySettings:
    """A BrokerGroup's policy settings, on either platform."""
    return PolicySettings(
        cluster=bg.spec.cluster_name,
        allow_unclean=bg.spec.failover.allow_unclean,
        detection_s=bg.spec.failover.detection_seconds,
        name_servers=tuple(name_servers),
        min_in_sync_replicas=effective_quorum(bg.spec).min_in_sync_replicas,
    )


FENCE_CHECK_S = 5.0  # how often the policy reads the replicas' live config for fences left behind


@dataclass
class PolicyOutcome:
    decisions: list[Decision] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # what was done
    notes: list[str] = field(default_factory=list)  # what was judged and not acted on (logged: a master is slow)

    @property
    def acted(self) -> bool:
        return bool(self.steps)


def _remember(memory: PolicyMemory, state: GroupState, facts: GroupFacts) -> GroupFacts:
    for r in state.replicas:
        if r.broker_id is not None and r.reachable:
            memory.last_answered[r.broker_id] = state.observed_at
    if facts.controller_reachable:
        memory.deposed_at = track_deposed(memory.deposed_at, memory.previous_master, facts)
        if facts.master_broker_id is not None:
            memory.previous_master = facts.master_broker_id
    since: float | None = None
    master = facts.replicas.get(facts.master_broker_id) if facts.master_broker_id is not None else None
    if master is not None and not master.alive:
        # Never seen answering (the policy just started): count from now, never from the epoch.
        since = memory.last_answered.setdefault(master.broker_id, state.observed_at)
    return dataclasses.replace(facts, master_not_serving_since=since, deposed_at=dict(memory.deposed_at))


async def run_replication_policy(
    client: RemotingClient,
    state: GroupState,
    settings: PolicySettings,
    memory: PolicyMemory,
    platform: FailoverPlatform,
    *,
    timeout: float = 1.0,
) -> PolicyOutcome:
    """One pass of the replication policy for one controller-mode group, on one fresh observation. Order:
    fence deposed masters (they must never acknowledge a write), fail over a master that does not answer
    (fence, then elect), re-attach slaves to the confirmed master, make every name server list that master.
    Never raises for a broker or controller that does not answer: the next pass tries again."""
    outcome = PolicyOutcome()
    facts = _remember(memory, state, facts_from_state(state, time.time()))
    fence = plan_fence_deposed(facts)
    outcome.decisions.append(fence)
    for action in fence.actions:
        replica = state.replica_by_id(action.broker_id)
        if replica is not None:
            done = await platform.fence(replica, started_before=memory.deposed_at.get(action.broker_id))
            if done:
                outcome.steps.append(f"{fence.message}: {done}")
    failover = await _plan_failover_with_evidence(client, state, facts, settings, memory, platform)
    outcome.decisions.append(failover)
    if failover.reason in ("MasterSlow", "MasterUnconfirmed"):
        outcome.notes.append(failover.message)
    if failover.actions:
        await _fail_over(client, state, settings, failover, platform, outcome, memory, timeout)
        return outcome
    master = state.named_master
    master_ha: HaInfo | None = None
    if master is not None and master.reachable and master.is_master:
        with contextlib.suppress(RemotingException, OSError):
            master_ha = await client.get_ha_info(master.address, timeout=timeout)

    async def restart(replica: ReplicaObservation) -> None:
        outcome.steps.append(f"restart {replica.name}: not connected to the master")
        await platform.restart(replica)

    reattach = await reattach_slaves(
        client,
        state,
        unconnected_since=memory.unconnected_since,
        restart=restart,
        timeout=timeout,
        master_ha=master_ha,
        woken=memory.woken,
    )
    outcome.decisions.append(reattach)
    if reattach.actions:
        outcome.steps.append(reattach.message)
    route_master = _route_master(state)
    if route_master is not None and settings.name_servers:
        step = await _ensure_registered(client, state, route_master, settings, memory, timeout)
        if step:
            outcome.steps.append(step)
    if time.time() - memory.fences_checked_at >= FENCE_CHECK_S:
        memory.fences_checked_at = time.time()
        outcome.steps.extend(await _unfence_abandoned(client, state, facts, settings, timeout))
    return outcome


async def _plan_failover_with_evidence(
    client: RemotingClient,
    state: GroupState,
    facts: GroupFacts,
    settings: PolicySettings,
    memory: PolicyMemory,
    platform: FailoverPlatform,
) -> Decision:
    """`plan_failover` with what the platform sees of a silent master's process and, when the plan asks for it,
    one confirmation probe with a long timeout (an answer restarts the master's silence)."""

    def decide(evidence: MasterEvidence) -> Decision:
        return plan_failover(
            dataclasses.replace(facts, master_evidence=evidence),
            allow_unclean=settings.allow_unclean,
            detection_s=settings.detection_s,
        )

    def asks_confirmation(decision: Decision) -> bool:
        return any(a.kind is ActionKind.CONFIRM for a in decision.actions)

    decision = decide(MasterEvidence())
    master = state.named_master
    if master is None or not asks_confirmation(decision):
        return decision
    evidence = MasterEvidence(process=await platform.process_state(master))
    decision = decide(evidence)
    if asks_confirmation(decision):
        probe_s = confirmation_probe_s(settings.detection_s)
        answered = False
        with contextlib.suppress(RemotingException, OSError, TimeoutError):
            await client.get_ha_status(master.address, timeout=probe_s)
            answered = True
        if answered and master.broker_id is not None:
            memory.last_answered[master.broker_id] = time.time()
        decision = decide(dataclasses.replace(evidence, probe_answered=answered, probe_s=probe_s))
    return decision


async def _unfence_abandoned(
    client: RemotingClient, state: GroupState, facts: GroupFacts, settings: PolicySettings, timeout: float
) -> list[str]:
    """Fences a switchover left behind, once their lease has lapsed (`core.failover.plan_abandoned_fences`)."""
    seen: list[FenceSeen] = []
    for r in state.replicas:
        if not r.reachable or r.broker_id is None:
            continue
        try:
            config = await client.get_broker_config(r.address, timeout=timeout)
        except (RemotingException, OSError):
            continue
        if is_fenced(config):
            seen.append(FenceSeen(r.broker_id, r.is_master, fence_lease_expired(config)))
    decision = plan_abandoned_fences(facts, seen)
    if not decision.actions:
        return []
    unfence = unfence_config(settings.min_in_sync_replicas, None)
    done: list[str] = []
    for action in decision.actions:
        replica = state.replica_by_id(action.broker_id)
        if replica is None:
            continue
        try:
            await client.update_broker_config(replica.address, unfence, timeout=timeout)
            done.append(f"unfenced {replica.name}: {action.detail}, lease lapsed ({_show(unfence)})")
        except (RemotingException, OSError) as exc:
            done.append(f"could not unfence {replica.name} ({action.detail}): {exc}; tried again")
    return done


async def _fail_over(
    client: RemotingClient,
    state: GroupState,
    settings: PolicySettings,
    decision: Decision,
    platform: FailoverPlatform,
    outcome: PolicyOutcome,
    memory: PolicyMemory,
    timeout: float,
) -> None:
    old = state.master_broker_id
    for action in decision.actions:
        replica = state.replica_by_id(action.broker_id)
        if action.kind is ActionKind.FENCE and replica is not None:
            chosen: ReplicaObservation | None = None
            if await platform.freeze(replica):
                outcome.steps.append(f"froze master {replica.name}: {decision.message}")
                chosen = await _elect_most_caught_up(client, state, settings, outcome, timeout)
            # Killed right after that election: nothing may wake the deposed master in between.
            fenced_at = time.time()
            done = await platform.fence(replica, started_before=None)
            outcome.steps.append(f"fenced master {replica.name}: {done} ({decision.reason}: {decision.message})")
            if done:
                # Deposed as of the kill, not as of the next observation: a successor that started in between
                # (a container restarts in well under a pass) must not be taken for the deposed process.
                memory.deposed_at[action.broker_id] = min(memory.deposed_at.get(action.broker_id, fenced_at), fenced_at)
            if chosen is not None:
                await _attach_slaves_to(client, state, chosen, {old} if old is not None else set(), timeout)
        elif action.kind is ActionKind.ELECT:
            leader = state.controller_leader
            if leader is None:
                return
            try:
                # The controller may have elected on its own meanwhile (the fence closed the master's channels):
                # a second election would only bump the epoch again.
                now = (await client.get_sync_state_data(leader, [state.group], timeout=timeout)).get(state.group)
                if now is not None and now.master_broker_id not in (None, old):
                    outcome.steps.append(f"the controller already elected broker {now.master_broker_id}")
                    return
                result = await client.elect_master(
                    leader, settings.cluster, state.group, action.broker_id, designate=True, timeout=timeout
                )
                outcome.steps.append(
                    f"{decision.message}: elected broker {result.master_broker_id} (epoch {result.master_epoch})"
                )
            except (RemotingException, OSError) as exc:
                outcome.steps.append(f"election of broker {action.broker_id} failed: {exc}; retried next pass")
                return
            if replica is not None:
                await _attach_slaves_to(client, state, replica, {old} if old is not None else set(), timeout)


async def _elect_most_caught_up(
    client: RemotingClient, state: GroupState, settings: PolicySettings, outcome: PolicyOutcome, timeout: float
) -> ReplicaObservation | None:
    """With the master frozen its slaves' offsets are final, and, replication being one log that every
    acknowledged message reached on at least one slave, the SyncStateSet member with the highest offset holds
    every acknowledged message. Elected now, before the kill closes the master's channel: the controller would
    then elect on its own from offsets its heartbeats reported up to a second earlier, and could pick a member
    that lacks the last acknowledged messages (truncated when it becomes master: found by the chaos campaign)."""
    old, leader = state.master_broker_id, state.controller_leader
    if leader is None:
        return None
    offsets: dict[int, int] = {}
    for broker_id in state.sync_state_set:
        member = state.replica_by_id(broker_id)
        if broker_id == old or member is None or not member.reachable:
            continue
        with contextlib.suppress(RemotingException, OSError, ValueError):
            info = await client.get_runtime_info(member.address, timeout=timeout)
            offsets[broker_id] = int(info.get("commitLogMaxOffset") or "")
    if not offsets:
        return None
    best = max(offsets, key=lambda b: (offsets[b], -b))
    try:
        result = await client.elect_master(leader, settings.cluster, state.group, best, designate=True, timeout=timeout)
    except (RemotingException, OSError) as exc:
        outcome.steps.append(f"election of the most caught-up broker {best} failed: {exc}")
        return None
    outcome.steps.append(
        f"elected the most caught-up member, broker {result.master_broker_id} (offsets {dict(sorted(offsets.items()))},"
        f" epoch {result.master_epoch})"
    )
    return state.replica_by_id(best)


async def _attach_slaves_to(
    client: RemotingClient, state: GroupState, master: ReplicaObservation, skip: set[int], timeout: float
) -> None:
    """Right after an election, hand the other replicas the new master's HA address instead of waiting for the
    next pass (every put is refused under minInSyncReplicas until one of them is back in the SyncStateSet).
    Best effort: a replica that resets it on its own role change is pointed again by the next pass."""
    deadline = time.monotonic() + 2.0
    info: HaInfo | None = None
    while time.monotonic() < deadline:
        with contextlib.suppress(RemotingException, OSError):
            info = await client.get_ha_info(master.address, timeout=timeout)
            if info.master_ha_address:
                break
        await asyncio.sleep(0.05)
    if info is None or not info.master_ha_address:
        return
    for r in state.replicas:
        if r.reachable and r.broker_id is not None and r.broker_id not in skip and r.address != master.address:
            with contextlib.suppress(RemotingException, OSError):
                await client.set_ha_master(r.address, info, timeout=timeout)


def _route_master(state: GroupState) -> ReplicaObservation | None:
    """Whose route a name server must have: the controller's master when it answers as master; with the
    controller unreadable (restarting with the name servers it is hosted with), the one replica that answers as
    master. Brokers keep their role while the controller is down, and a deposed master that still answers as
    master is fenced by the same pass."""
    named = state.named_master
    if state.controller_reachable:
        return named if named is not None and named.reachable and named.is_master else None
    masters = [r for r in state.replicas if r.reachable and r.is_master]
    return masters[0] if len(masters) == 1 else None


async def _ensure_registered(
    client: RemotingClient,
    state: GroupState,
    master: ReplicaObservation,
    settings: PolicySettings,
    memory: PolicyMemory,
    timeout: float,
) -> str | None:
    """A name server that lists another master (or none) for the group, for longer than the grace, gets the
    master's route at once: setting brokerPermission (to the value it has) makes the broker register with every
    name server (AdminBrokerProcessor.updateBrokerConfig); RocketMQ would wait registerNameServerPeriod (30 s)."""
    now = time.time()
    wrong: list[str] = []
    for namesrv in settings.name_servers:
        try:
            info = await client.get_cluster_info(namesrv=namesrv, timeout=timeout)
        except (RemotingException, OSError):
            memory.route_wrong_since.pop(namesrv, None)  # a name server that is down is not wrong
            continue
        broker = info.broker_addr_table.get(state.group)
        listed = broker.broker_addrs.get(0) if broker is not None else None
        if listed == master.address:
            memory.route_wrong_since.pop(namesrv, None)
            continue
        since = memory.route_wrong_since.setdefault(namesrv, now)
        if listed is None or now - since >= settings.route_grace_s:
            wrong.append(f"{namesrv} lists {listed or 'no master'}")
    if not wrong:
        return None
    try:
        await _register_again(client, master.address, timeout)
    except (RemotingException, OSError):
        return None
    memory.route_wrong_since.clear()
    return f"re-registered master {master.name} with every name server ({'; '.join(wrong)})"

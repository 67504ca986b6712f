"""The replication policy: the one pass both platforms run after each observation of a controller-mode group.

Contract: decisions come from `core.failover` (pure: `plan_fence_deposed`, `plan_failover`, `plan_reattach`,
`plan_abandoned_fences`); this module only carries out their actions in order, with the remoting client and the
platform, and never raises for a broker or controller that does not answer: the next pass tries again.
`run_replication_policy`: fence deposed masters, fail over a master that does not answer, restart a named master
that stays a slave (`plan_named_master_as_slave`), re-attach slaves (`control.routes`), re-register a master a name
server lost, and unfence what a switchover that died left fenced once its lease has lapsed (`control.fence`).
Fencing a master that does not answer, or a deposed one, is the platform's (`FailoverPlatform.fence`: the local
supervisor kills the process it owns; Kubernetes deletes the pod, never by force); fencing one that answers is
`control.fence.fence_config`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.control.fence import fence_lease_expired, is_fenced, show, unfence_config
from rocketmq_operator.control.observe import facts_from_state
from rocketmq_operator.control.offsets import OFFSET_COPY_S, copy_offsets
from rocketmq_operator.control.routes import attach_slaves_to, reattach_slaves, register_again, route_master
from rocketmq_operator.core.failover import (
    ActionKind,
    Decision,
    FenceSeen,
    GroupFacts,
    MasterEvidence,
    ProcessState,
    confirmation_probe_s,
    plan_abandoned_fences,
    plan_failover,
    plan_fence_deposed,
    plan_named_master_as_slave,
    track_deposed,
)
from rocketmq_operator.core.observation import GroupState, ReplicaObservation
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.remoting import HaInfo, RemotingClient, RemotingException


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
    # broker id -> when a confirmation probe of it as a silent master failed: not asked again in that silence (each
    # probe holds the pass for its long timeout; on Kubernetes, asked on every pass, a frozen master was fenced
    # after 12.6 s of silence instead of 8)
    confirmation_failed: dict[int, float] = field(default_factory=dict)
    offsets_copied_at: float = 0.0  # the last copy of the master's consumer offsets to the slaves (control.offsets)
    named_slave_since: tuple[int, float] | None = None  # (the named master, when first seen answering as a slave)


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
# A confirmation probe's failure is judged at its end while the observation is at most this old (plan_failover
# refuses to act on one older than 10 s).
CONFIRMED_AT_PROBE_END_MAX_AGE_S = 8.0


@dataclass
class PolicyOutcome:
    decisions: list[Decision] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # what was done
    notes: list[str] = field(default_factory=list)  # what was judged and not acted on (logged: a master is slow)
    offsets_copied: int = 0  # consumer offsets written on slaves in this pass (routine upkeep, not an action)

    @property
    def acted(self) -> bool:
        return bool(self.steps)


def _remember(
    memory: PolicyMemory, state: GroupState, facts: GroupFacts, published_master: int | None = None
) -> GroupFacts:
    if memory.previous_master is None:
        # A policy that starts (an operator restarted) resumes from the master its last status named: if the
        # controller elected another meanwhile, that one is a deposed master to watch, hung or not.
        memory.previous_master = published_master
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
    if master is not None and master.alive and master.is_master is False:
        seen = memory.named_slave_since
        if seen is None or seen[0] != master.broker_id:  # another named master: its own grace
            memory.named_slave_since = (master.broker_id, state.observed_at)
    elif facts.controller_reachable:
        memory.named_slave_since = None
    return dataclasses.replace(
        facts,
        master_not_serving_since=since,
        deposed_at=dict(memory.deposed_at),
        named_master_slave_since=memory.named_slave_since[1] if memory.named_slave_since else None,
    )


async def run_replication_policy(
    client: RemotingClient,
    state: GroupState,
    settings: PolicySettings,
    memory: PolicyMemory,
    platform: FailoverPlatform,
    *,
    timeout: float = 1.0,
    published_master: int | None = None,
) -> PolicyOutcome:
    """One pass of the replication policy for one controller-mode group, on one fresh observation. Order:
    fence deposed masters (they must never acknowledge a write), fail over a master that does not answer
    (fence, then elect), re-attach slaves to the confirmed master, make every name server list that master.
    Never raises for a broker or controller that does not answer: the next pass tries again.
    ``published_master``: the broker id the group's published status names as master (where the policy resumes
    watching from when its memory is new)."""
    outcome = PolicyOutcome()
    facts = _remember(memory, state, facts_from_state(state, time.time()), published_master)
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
    named = plan_named_master_as_slave(facts)
    outcome.decisions.append(named)
    if named.actions:
        replica = state.named_master
        if replica is not None:
            memory.named_slave_since = None  # a new grace for the restarted broker
            outcome.steps.append(f"restart {replica.name}: {named.message}")
            await platform.restart(replica)
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
    routed = route_master(state)
    if routed is not None and settings.name_servers:
        step = await _ensure_registered(client, state, routed, settings, memory, timeout)
        if step:
            outcome.steps.append(step)
    if time.time() - memory.fences_checked_at >= FENCE_CHECK_S:
        memory.fences_checked_at = time.time()
        outcome.steps.extend(await _unfence_abandoned(client, state, facts, settings, timeout))
    if master_ha is not None and master is not None and time.time() - memory.offsets_copied_at >= OFFSET_COPY_S:
        # RocketMQ 5.5.0's slaves cannot copy them themselves (core.offsets): a new master would resume every
        # consumer group from stale offsets or none.
        memory.offsets_copied_at = time.time()
        slaves = [r.address for r in state.replicas if r.reachable and r.address != master.address]
        copied = await copy_offsets(client, master.address, slaves)
        outcome.offsets_copied = copied.total
        outcome.notes.extend(copied.errors)
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

    def decide(evidence: MasterEvidence, now: float | None = None) -> Decision:
        return plan_failover(
            dataclasses.replace(facts, master_evidence=evidence, now=facts.now if now is None else now),
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
        bid = master.broker_id
        failed_at = memory.confirmation_failed.get(bid) if bid is not None else None
        answered = False
        # One probe per silence: a master that answers again answers the pass's own observation first.
        if failed_at is None or bid is None or failed_at < memory.last_answered.get(bid, 0.0):
            with contextlib.suppress(RemotingException, OSError, TimeoutError):
                await client.get_ha_status(master.address, timeout=probe_s)
                answered = True
            if bid is not None:
                if answered:
                    memory.last_answered[bid] = time.time()
                else:
                    memory.confirmation_failed[bid] = time.time()
        # Judged at the end of the probe, since the master stayed silent through it (judged at the observation's
        # time, a frozen master on Kubernetes waited one more pass, 5 s, for its "twice the detection time"),
        # unless that would make the observation too old to act on (a 10 s probe of a 60 s detection time).
        probe_end = time.time()
        now = probe_end if probe_end - facts.observed_at <= CONFIRMED_AT_PROBE_END_MAX_AGE_S else None
        decision = decide(dataclasses.replace(evidence, probe_answered=answered, probe_s=probe_s), now)
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
            done.append(f"unfenced {replica.name}: {action.detail}, lease lapsed ({show(unfence)})")
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
            said = done or "already being stopped"
            outcome.steps.append(f"fenced master {replica.name}: {said} ({decision.reason}: {decision.message})")
            if done:
                # Deposed as of the kill, not as of the next observation: a successor that started in between
                # (a container restarts in well under a pass) must not be taken for the deposed process.
                memory.deposed_at[action.broker_id] = min(memory.deposed_at.get(action.broker_id, fenced_at), fenced_at)
            if chosen is not None:
                await attach_slaves_to(client, state, chosen, {old} if old is not None else set(), timeout)
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
                await attach_slaves_to(client, state, replica, {old} if old is not None else set(), timeout)


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
    name server (AdminBrokerProcessor.updateBrokerConfig); RocketMQ would wait registerNameServerPeriod (10 s as
    rendered). Each name server is asked for this group's members only (GET_BROKER_MEMBER_GROUP): its whole
    cluster table (GET_BROKER_CLUSTER_INFO) would make every group's pass grow with the number of groups."""
    now = time.time()
    wrong: list[str] = []
    for namesrv in settings.name_servers:
        try:
            members = await client.get_broker_member_group(
                settings.cluster, state.group, namesrv=namesrv, timeout=timeout
            )
        except (RemotingException, OSError):
            memory.route_wrong_since.pop(namesrv, None)  # a name server that is down is not wrong
            continue
        listed = members.master_addr
        if listed == master.address:
            memory.route_wrong_since.pop(namesrv, None)
            continue
        since = memory.route_wrong_since.setdefault(namesrv, now)
        if listed is None or now - since >= settings.route_grace_s:
            wrong.append(f"{namesrv} lists {listed or 'no master'}")
    if not wrong:
        return None
    try:
        await register_again(client, master.address, timeout)
    except (RemotingException, OSError):
        return None
    memory.route_wrong_since.clear()
    return f"re-registered master {master.name} with every name server ({'; '.join(wrong)})"

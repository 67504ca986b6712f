"""Carry out rolling restarts and hot config changes, one step per policy pass, on both platforms.

Contract: `run_roll_step` builds `core.roll.RollFacts` from one fresh `GroupState`, the platform's revisions
(what each replica runs, what it should run) and the previous `RolloutStatus`, asks `core.roll.plan_roll` for
the next step and performs it: a restart through the platform (`RollPlatform.roll_restart`: the local
supervisor SIGTERMs the process and starts it on its new revision; Kubernetes deletes the pod), a switchover
through `control.switchover.switchover`. It returns the new `RolloutStatus` (None when there is nothing to roll and
nothing was rolled): the platform persists it (local: `status/<group>.rollout.json`; Kubernetes:
`status.rollout`) so that a restarted supervisor or operator resumes where the roll was. Never raises for a
broker or controller that does not answer: the step is retried on the next pass, and a wait that lasts past the
timeout turns into `phase: Blocked` with the reason and the fix (the `RolloutBlocked` condition).

`apply_hot_config` sends hot keys (`core.config_change.HOT_BROKER_KEYS`) to every replica with
UPDATE_BROKER_CONFIG and reads them back with GET_BROKER_CONFIG.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from rocketmq_operator.api.models import BrokerGroup, RolloutStatus
from rocketmq_operator.control.clock import now_iso
from rocketmq_operator.control.switchover import OperationRefused, switchover
from rocketmq_operator.core.conditions import condition
from rocketmq_operator.core.config_change import group_revision
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.core.quorum import effective_quorum
from rocketmq_operator.core.roll import (
    APPROVE_ANNOTATION,
    PAUSE_ANNOTATION,
    RollFacts,
    RollReplica,
    StepKind,
    plan_roll,
)
from rocketmq_operator.remoting import RemotingClient, RemotingException


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Revisions:
    current: str  # what the running process was started from
    desired: str
    node: str | None = None  # the node it runs on (Kubernetes: the pod's spec.nodeName); None: not known


@dataclass(frozen=True)
class RollSettings:
    cluster: str
    controllers: tuple[str, ...]
    endpoints: tuple[ReplicaEndpoint, ...]
    min_in_sync_replicas: int
    all_ack_in_sync_state_set: bool = False
    strategy: str = "switchover"
    paused: bool = False
    approved_revision: str | None = None  # the supervised approval annotation's value
    timeout_s: float = 300.0
    removing: frozenset[str] = frozenset()  # replicas a scale-in removes


class RollPlatform(Protocol):
    """What only the platform knows or can do for a roll."""

    def revisions(self, group: str) -> Mapping[str, Revisions]:
        """Per replica name of ``group``: the revision it runs and the one it should run."""
        ...

    async def roll_restart(self, replica: ReplicaObservation) -> str:
        """Restart the replica onto its desired revision (graceful); returns what was done, for the log."""
        ...

    async def remove_replica(self, replica: ReplicaObservation) -> str:
        """Stop a replica a scale-in removes, for good (graceful); the platform forgets it once it is down
        (`forget_replicas`). Returns what was done, for the log."""
        ...


def roll_facts(
    state: GroupState, revisions: Mapping[str, Revisions], settings: RollSettings, rollout: RolloutStatus, now: float
) -> RollFacts:
    observed = {r.name for r in state.replicas}
    replicas = tuple(
        RollReplica(
            name=r.name,
            current_revision=revisions[r.name].current,
            desired_revision=revisions[r.name].desired,
            alive=r.reachable,
            broker_id=r.broker_id,
            is_master=r.is_master,
            max_offset=r.max_offset,
            node=revisions[r.name].node,
        )
        for r in state.replicas
        if r.name in revisions
    ) + tuple(
        # Known to the platform but not observable (a pod being recreated has no address yet): down, so the
        # roll waits for it instead of passing over it.
        RollReplica(name=name, current_revision=rev.current, desired_revision=rev.desired, alive=False)
        for name, rev in sorted(revisions.items())
        if name not in observed
    )
    return RollFacts(
        now=now,
        controller_reachable=state.controller_reachable,
        master_broker_id=state.master_broker_id,
        sync_state_set=state.sync_state_set,
        replicas=replicas,
        min_in_sync_replicas=settings.min_in_sync_replicas,
        all_ack_in_sync_state_set=settings.all_ack_in_sync_state_set,
        strategy=settings.strategy,
        paused=settings.paused,
        master_approved=settings.approved_revision in ("true", rollout.target_revision),
        last_restarted=rollout.last_restarted,
        waiting_since=rollout.waiting_since,
        timeout_s=settings.timeout_s,
        switched_from=rollout.switched_from,
        removing=settings.removing,
    )


def roll_settings(
    bg: BrokerGroup,
    controllers: Sequence[str],
    endpoints: Sequence[ReplicaEndpoint],
    removing: frozenset[str] = frozenset(),
) -> RollSettings:
    """The roll's settings from the BrokerGroup (quorum floor, strategy, pause and approval annotations) and
    what the platform knows (controller addresses, replica endpoints, replicas a scale-in removes)."""
    params = effective_quorum(bg.spec)
    annotations = bg.metadata.annotations
    return RollSettings(
        cluster=bg.spec.cluster_name,
        controllers=tuple(controllers),
        endpoints=tuple(endpoints),
        min_in_sync_replicas=params.min_in_sync_replicas,
        all_ack_in_sync_state_set=params.all_ack_in_sync_state_set,
        strategy=bg.spec.upgrade.strategy,
        paused=annotations.get(PAUSE_ANNOTATION, "").lower() == "true",
        approved_revision=annotations.get(APPROVE_ANNOTATION),
        removing=removing,
    )


def rollout_blocked_condition(rollout: RolloutStatus | None) -> dict[str, Any] | None:
    """The RolloutBlocked condition while a roll is blocked (its reason and message say why and the fix); its
    lastTransitionTime is now (the status writer keeps an earlier one while the roll stays blocked)."""
    if rollout is None or rollout.phase != "Blocked":
        return None
    return condition("RolloutBlocked", "True", rollout.reason or "", rollout.message, now_iso())


PHASES = {
    StepKind.RESTART: "Rolling",
    StepKind.SWITCHOVER: "Rolling",
    StepKind.WAIT: "Waiting",
    StepKind.BLOCKED: "Blocked",
    StepKind.DONE: "Complete",
    StepKind.REMOVE: "Rolling",
}


async def _switchover_step(
    client: RemotingClient,
    state: GroupState,
    settings: RollSettings,
    replica: str | None,
    target_broker_id: int,
    out: RolloutStatus,
    now: float,
) -> bool:
    """The roll's switchover away from the master; False (and the rollout says why) when it failed: the next
    pass tries again."""
    try:
        report = await switchover(
            client,
            settings.controllers,
            settings.cluster,
            state.group,
            settings.endpoints,
            target_broker_id,
            min_in_sync_replicas=settings.min_in_sync_replicas,
        )
    except (OperationRefused, RemotingException, OSError) as exc:
        out.waiting_since = out.waiting_since or now
        out.message = f"switchover to broker {target_broker_id} failed, tried again next pass: {exc}"
        return False
    out.switchovers += 1
    out.switched_from = replica
    out.last_restarted = None
    out.waiting_since = None
    pause = report.write_pause_s
    out.current_step = f"switchover {replica} -> broker {target_broker_id}" + (
        f" (writes refused {pause:.3f}s)" if pause is not None else ""
    )
    return True


async def run_roll_step(
    client: RemotingClient,
    state: GroupState,
    settings: RollSettings,
    rollout: RolloutStatus | None,
    platform: RollPlatform,
    *,
    now: float | None = None,
) -> RolloutStatus | None:
    """One step of the group's roll on one fresh observation; the new rollout status (see the module doc)."""
    now = time.time() if now is None else now
    revisions = platform.revisions(state.group)
    if not revisions:
        return rollout
    target = group_revision([r.desired for name, r in revisions.items() if name not in settings.removing])
    pending = [name for name, r in revisions.items() if r.current != r.desired or name in settings.removing]
    if rollout is None or rollout.target_revision != target:
        if not pending:
            # Nothing to roll: remember the revision (a later change starts a roll from it).
            return rollout if rollout is not None else RolloutStatus(target_revision=target, phase="Complete")
        rollout = RolloutStatus(target_revision=target, phase="Rolling", started=_iso(now), last_transition=_iso(now))
    elif rollout.phase == "Complete" and not pending:
        return rollout
    out = rollout.model_copy(deep=True)
    step = plan_roll(roll_facts(state, revisions, settings, out, now))
    out.replicas_done = sorted(
        name for name, r in revisions.items() if r.current == r.desired and name not in settings.removing
    )
    out.reason = step.reason
    out.message = step.text
    phase = "Paused" if step.reason == "RolloutPaused" else PHASES[step.kind]
    if step.kind is StepKind.RESTART and step.replica is not None:
        replica = next((r for r in state.replicas if r.name == step.replica), None)
        if replica is not None:
            done = await platform.roll_restart(replica)
            out.restarts += 1
            out.last_restarted = step.replica
            out.switched_from = None
            out.waiting_since = None
            out.current_step = f"restart {step.replica}: {step.message}" + (f" ({done})" if done else "")
    elif step.kind is StepKind.REMOVE and step.replica is not None:
        replica = next((r for r in state.replicas if r.name == step.replica), None)
        if replica is not None:
            done = await platform.remove_replica(replica)
            if replica.broker_id is not None and replica.broker_id not in out.removed_broker_ids:
                out.removed_broker_ids.append(replica.broker_id)  # forgotten by the controller once it is gone
            out.last_restarted = None
            out.waiting_since = None
            out.current_step = f"remove {step.replica}" + (f" ({done})" if done else "")
    elif step.kind is StepKind.SWITCHOVER and step.target_broker_id is not None:
        if not await _switchover_step(client, state, settings, step.replica, step.target_broker_id, out, now):
            phase = "Waiting"
    elif step.kind is StepKind.WAIT:
        out.waiting_since = out.waiting_since or now
    elif step.kind is StepKind.DONE:
        out.last_restarted = None
        out.switched_from = None
        out.waiting_since = None
        out.finished = out.finished or _iso(now)
        out.current_step = ""
    if phase != out.phase:
        out.last_transition = _iso(now)
    out.phase = phase
    return out


@dataclass(frozen=True)
class HotApplyResult:
    applied: dict[str, dict[str, str]]  # address -> keys read back with the wanted value
    failed: dict[str, str]  # address -> why

    @property
    def ok(self) -> bool:
        return not self.failed


async def apply_hot_config(
    client: RemotingClient, addresses: Sequence[str], changes: Mapping[str, str], *, timeout: float = 3.0
) -> HotApplyResult:
    """UPDATE_BROKER_CONFIG with ``changes`` on every address, then GET_BROKER_CONFIG: a key counts as applied
    only when it reads back with the new value. A broker that does not answer is reported, not raised."""
    applied: dict[str, dict[str, str]] = {}
    failed: dict[str, str] = {}
    for addr in addresses:
        try:
            await client.update_broker_config(addr, dict(changes), timeout=timeout)
            found = await client.get_broker_config(addr, timeout=timeout)
        except (RemotingException, OSError) as exc:
            failed[addr] = str(exc) or type(exc).__name__
            continue
        wrong = {k: found.get(k) for k, v in changes.items() if found.get(k) != v}
        if wrong:
            failed[addr] = f"read back {wrong}, wanted {dict(changes)}"
        else:
            applied[addr] = {k: found[k] for k in changes}
    return HotApplyResult(applied, failed)


async def forget_replicas(
    client: RemotingClient, settings: RollSettings, group: str, broker_ids: Sequence[int], *, timeout: float = 3.0
) -> str | None:
    """After a scale-in, once the removed replicas are down: the controller forgets them (CLEAN_BROKER_DATA), so
    they never count as SyncStateSet candidates again. It refuses while its heartbeat table still holds one of
    them alive (up to controllerHeartBeatTimeoutMills after the stop). None when done, else why (tried again on
    the next pass)."""
    try:
        meta = await client.find_controller_leader(list(settings.controllers), timeout=timeout)
        if meta.leader_address is None:
            return "no controller leader"
        await client.clean_broker_data(meta.leader_address, settings.cluster, group, broker_ids, timeout=timeout)
    except (RemotingException, OSError) as exc:
        return str(exc) or type(exc).__name__
    return None

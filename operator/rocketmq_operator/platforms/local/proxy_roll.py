"""The supervisor's side of a Proxy roll: one `core.proxy_roll.plan_proxy_roll` step per Proxy per policy pass.

Contract:

* A proxy process is pending while its `revision` differs from its `target_revision` (set by `local apply`'s
  `apply` request, `roll.handle_apply`); its target config waits in `conf/<proxy>.target.conf` and its argv in
  `target_argv`, as a broker's do. A restart asks for the target (`roll.request_roll_restart`: `roll_requested`,
  then SIGTERM; the supervisor's back-off starts it on the target).
* A proxy serves when the supervisor's process for it runs and every port of it (gRPC, remoting) accepts a
  connection: what `local status` and `local up --wait` call `ready` (`ports.ports_answer`).
* Progress is a `RolloutStatus` in `status/<proxy>.rollout.json`, the BrokerGroups' document (`local status`
  shows both), written after every step that changed it; a restarted supervisor reads it back and goes on:
  the facts of a step are the revisions in state.json plus the rollout's `lastRestarted`, `waitingSince` and
  `servingSince` (when the proxy restarted last was first seen serving: the next waits the Proxy's
  `spec.minReadySeconds` from it, as a Deployment does).
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from rocketmq_operator.api.models import Proxy, RolloutStatus
from rocketmq_operator.control.clock import iso_time
from rocketmq_operator.control.roll import PHASES
from rocketmq_operator.core.config_change import group_revision
from rocketmq_operator.core.proxy_roll import ProxyProcess, ProxyRollFacts, plan_proxy_roll
from rocketmq_operator.core.roll import StepKind
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.roll import (
    RollHost,
    read_rollout,
    remember_rollout,
    request_roll_restart,
)
from rocketmq_operator.platforms.local.state import LocalState, ReplicaProcess


class ProxyRollHost(RollHost, Protocol):
    """What the roll needs of the supervisor (a fake in the unit tests)."""

    state: LocalState
    layout: StateLayout

    def save(self) -> None: ...

    async def proxy_serves(self, r: ReplicaProcess) -> bool: ...


def _desired(r: ReplicaProcess) -> str:
    return r.target_revision or r.revision


def _min_ready_seconds(state: LocalState, proxy: str) -> int:
    """The Proxy's spec.minReadySeconds as recorded in the state (the resource `local up`/`apply` last took)."""
    found = next((r for r in load_resources(state) if isinstance(r, Proxy) and r.metadata.name == proxy), None)
    return found.spec.min_ready_seconds if found is not None else 0


class LocalProxyRoll:
    def __init__(self, host: ProxyRollHost) -> None:
        self.host = host
        self.rollouts: dict[str, RolloutStatus | None] = {}

    async def run(self, now: float | None = None) -> list[str]:
        """One step for every Proxy; the log lines of the steps that did or changed something."""
        lines: list[str] = []
        for group in self.host.state.groups:
            if group.kind == "Proxy":
                line = await self.step(group.name, time.time() if now is None else now)
                if line:
                    lines.append(f"{group.name}: {line}")
        return lines

    async def step(self, name: str, now: float) -> str | None:
        procs = [r for r in self.host.state.replicas if r.kind == "Proxy" and r.group == name]
        if not procs:
            return None
        layout = self.host.layout
        before = self.rollouts[name] if name in self.rollouts else read_rollout(layout, name)
        after = await self._next(before, procs, now)
        if not remember_rollout(layout, self.rollouts, name, before, after):
            return None
        if self.host.dirty:
            self.host.save()
        if after.started is None:
            return None  # no roll ran: the revision noted, nothing to say
        changed = before is None or (after.phase, after.message) != (before.phase, before.message)
        shown = after.current_step if after.phase == "Rolling" else after.message
        return f"rollout {after.phase}: {shown}" if changed else None

    async def _next(self, rollout: RolloutStatus | None, procs: list[ReplicaProcess], now: float) -> RolloutStatus:
        target = group_revision([_desired(r) for r in procs])
        pending = [r.name for r in procs if r.revision != _desired(r)]
        if rollout is None or rollout.target_revision != target:
            if not pending:  # nothing to roll: remember the revision (a later change starts a roll from it)
                return rollout if rollout is not None else RolloutStatus(target_revision=target, phase="Complete")
            rollout = RolloutStatus(
                target_revision=target, phase="Rolling", started=iso_time(now), last_transition=iso_time(now)
            )
        elif rollout.phase == "Complete" and not pending:
            return rollout
        serving = await asyncio.gather(*(self.host.proxy_serves(r) for r in procs))
        serving_since = rollout.serving_since
        if serving_since is None and any(
            r.name == rollout.last_restarted and ok and r.revision == _desired(r)
            for r, ok in zip(procs, serving, strict=True)
        ):
            serving_since = now  # first seen serving on its new revision: spec.minReadySeconds count from here
        facts = ProxyRollFacts(
            processes=tuple(
                ProxyProcess(r.name, r.revision, _desired(r), ok) for r, ok in zip(procs, serving, strict=True)
            ),
            now=now,
            last_restarted=rollout.last_restarted,
            waiting_since=rollout.waiting_since,
            serving_since=serving_since,
            settle_s=float(_min_ready_seconds(self.host.state, procs[0].group)),
        )
        step = plan_proxy_roll(facts)
        out = rollout.model_copy(deep=True)
        out.serving_since = serving_since
        out.replicas_done = sorted(r.name for r in procs if r.revision == _desired(r))
        out.reason = step.reason
        out.message = step.text
        if step.kind is StepKind.RESTART and step.replica is not None:
            r = next(r for r in procs if r.name == step.replica)
            done = await request_roll_restart(self.host, r)
            out.restarts += 1
            out.last_restarted = r.name
            out.waiting_since = None
            out.serving_since = None
            out.current_step = f"restart {r.name}: {step.message} ({done})"
        elif step.kind in (StepKind.WAIT, StepKind.BLOCKED):
            out.waiting_since = out.waiting_since or now
        elif step.kind is StepKind.DONE:
            out.last_restarted = None
            out.waiting_since = None
            out.serving_since = None
            out.finished = out.finished or iso_time(now)
            out.current_step = ""
        phase = PHASES[step.kind]
        if phase != out.phase:
            out.last_transition = iso_time(now)
        out.phase = phase
        return out

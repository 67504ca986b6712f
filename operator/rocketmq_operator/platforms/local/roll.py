"""Rolling restarts on the local platform: revisions, and the supervisor's side of a roll (`local apply`, the user's
command that starts one, is `platforms.local.apply`).

Contract:

* A replica's **revision** is `core.config_change.revision` of its rendered config (hot keys left out; a
  proxy's rmq-proxy.json read by `core.proxy_roll.proxy_config_keys`), its RocketMQ version and its java argv.
  `desired_state` is `placement.build_state` with every process on the distribution of its resource's
  `spec.version` (one distribution per version, `distribution.ensure_distribution`) and `revision ==
  target_revision` set.
* `conf/<replica>.conf` is what the replica runs; a pending revision's config waits in
  `conf/<replica>.target.conf` and its argv in `ReplicaProcess.target_argv`. A start takes the target only when
  the roll asked for it (`roll_requested`, set by `LocalRoll.roll_restart`): a crash restart, or `local up` after a
  killed supervisor, restarts every replica on the revision it ran, and the roll goes on from
  `status/<group>.rollout.json`.
* `LocalRoll` is the supervisor's `control.roll.RollPlatform`: one `control.roll.run_roll_step` per group per
  policy pass; the rollout status is persisted after every step. A Proxy's processes roll by
  `platforms.local.proxy_roll` (the same revisions, target configs and `roll_restart`).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ControllerGroup, Proxy, RolloutStatus
from rocketmq_operator.control.roll import (
    Revisions,
    RollSettings,
    forget_replicas,
    roll_settings,
    rollout_blocked_condition,
    run_roll_step,
)
from rocketmq_operator.core.config_change import revision
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.core.proxy_roll import proxy_config_keys
from rocketmq_operator.platforms.local.distribution import ROCKETMQ_VERSION, dist_dir, ensure_distribution
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import build_state, load_resources
from rocketmq_operator.platforms.local.state import (
    STOPPED,
    GroupInfo,
    LocalState,
    ReplicaProcess,
    pid_alive,
    write_json_atomic,
)
from rocketmq_operator.remoting import RemotingClient, parse_properties_text

if TYPE_CHECKING:
    from rocketmq_operator.platforms.local.supervisor import Supervisor


def versions_of(resources: Sequence[AnyResource]) -> dict[str, str]:
    """Owning resource name -> its RocketMQ version."""
    return {r.metadata.name: r.spec.version for r in resources if isinstance(r, BrokerGroup | ControllerGroup | Proxy)}


def config_keys(kind: str, text: str) -> dict[str, str]:
    """A rendered config as keys: a broker's or controller's properties, a proxy's rmq-proxy.json (JSON)."""
    return proxy_config_keys(text) if kind == "Proxy" else parse_properties_text(text)


def target_config(layout: StateLayout, replica: str) -> Path:
    return layout.conf_dir / f"{replica}.target.conf"


def rollout_path(layout: StateLayout, group: str) -> Path:
    return layout.status_dir / f"{group}.rollout.json"


def desired_state(
    resources: Sequence[AnyResource],
    ports: Mapping[str, int],
    layout: StateLayout,
    *,
    files: Sequence[str],
    texts: Mapping[str, str],
    log: Any = print,
) -> LocalState:
    """`build_state` with per-version distributions and revisions (``texts``: rendered config per replica)."""
    default_home = str(dist_dir(ROCKETMQ_VERSION))
    state = build_state(
        resources, ports, layout, files=files, distribution=default_home, rocketmq_version=ROCKETMQ_VERSION
    )
    versions = versions_of(resources)
    for r in state.replicas:
        version = versions.get(r.group, ROCKETMQ_VERSION)
        home = str(ensure_distribution(version, log=log))
        if home != default_home:
            r.argv = [a.replace(default_home, home) for a in r.argv]
        r.revision = r.target_revision = revision(config_keys(r.kind, texts[r.name]), version, r.argv)
    return state


def adoptable(existing: LocalState | None, digest: str) -> set[int]:
    """Pids a killed supervisor left running for the same manifest: the next supervisor adopts them."""
    if existing is None or existing.manifest_digest != digest:
        return set()
    return {r.pid for r in existing.replicas if r.pid is not None and pid_alive(r.pid, r.run_config)}


def carry_over(existing: LocalState | None, state: LocalState) -> None:
    """A roll in progress survives `local up` after a killed supervisor: processes still running are kept (the
    next supervisor adopts them), and replicas not rolled yet keep the revision they ran (argv and config), with
    the new one as their target."""
    if existing is None or existing.manifest_digest != state.manifest_digest:
        return
    for r in state.replicas:
        old = existing.replica(r.name)
        if old is None:
            continue
        if old.pid is not None and pid_alive(old.pid, old.run_config):
            r.pid, r.started_at, r.starts, r.restarts = old.pid, old.started_at, old.starts, old.restarts
        if old.revision == r.target_revision or not old.revision:
            continue
        r.target_argv, r.argv = r.argv, list(old.argv)
        r.revision = old.revision
        r.roll_requested = old.roll_requested


def write_configs(
    layout: StateLayout, state: LocalState, texts: Mapping[str, str], existing: LocalState | None
) -> None:
    """conf/<replica>.conf for replicas on their target revision, conf/<replica>.target.conf for the others."""
    for r in state.replicas:
        target = target_config(layout, r.name)
        old = existing.replica(r.name) if existing is not None else None
        if old is None or old.revision == r.target_revision or not old.revision:
            layout.config(r.name).write_text(texts[r.name], encoding="utf-8")
            target.unlink(missing_ok=True)
        else:
            target.write_text(texts[r.name], encoding="utf-8")


def promote_target(r: ReplicaProcess, layout: StateLayout) -> None:
    """Before a start the roll asked for: the pending revision becomes the running one."""
    if not r.roll_requested:
        return
    r.roll_requested = False
    target = target_config(layout, r.name)
    if target.exists():
        target.replace(r.config)
    if r.target_argv is not None:
        r.argv = r.target_argv
        r.target_argv = None
    r.revision = r.target_revision


def handle_apply(state: LocalState, body: Mapping[str, Any], now: float | None = None) -> dict[str, Any]:
    """The supervisor's `apply` request: the new desired state (resources, digest, argv and revisions), and the
    replicas a scale-out adds (started at once, on their desired revision)."""
    replicas: Mapping[str, Mapping[str, Any]] = body.get("replicas") or {}
    added = [ReplicaProcess.from_json(r) for r in body.get("added") or []]
    removed = set(body.get("removed") or [])
    running = {r.name for r in state.replicas} - removed
    missing = sorted(set(replicas) ^ (running | {r.name for r in added}))
    if missing:
        return {"ok": False, "message": f"the replicas differ from the running ones: {missing}"}
    for r in added:
        r.pid, r.next_start_at = None, time.time() if now is None else now
        state.replicas.append(r)
    if body.get("groups"):
        state.groups = [GroupInfo.from_json(g) for g in body["groups"]]
    for r in state.replicas:
        if r.name in removed:
            r.removing = True  # stopped and forgotten by the roll, one at a time, never as master
            info = state.group(r.group)
            if info is not None and r.name not in info.replicas:
                info.replicas.append(r.name)  # observed until it is gone
    for r in state.replicas:
        if r.name in removed:
            continue
        want = replicas[r.name]
        if str(want["revision"]) == r.revision:
            r.argv, r.target_argv, r.roll_requested = list(want["argv"]), None, False
        else:
            r.target_argv = list(want["argv"])
        r.target_revision = str(want["revision"])
    state.resources = list(body["resources"])
    state.manifest_digest = str(body["manifestDigest"])
    state.files = list(body["files"])
    pending = [r.name for r in state.replicas if r.revision != r.target_revision]
    return {"ok": True, "message": f"applied; {len(pending)} replica(s) to restart", "pending": pending}


def remember_rollout(
    layout: StateLayout,
    rollouts: dict[str, RolloutStatus | None],
    name: str,
    before: RolloutStatus | None,
    after: RolloutStatus | None,
) -> bool:
    """Keep ``after`` as the rollout of ``name``, written to its status file when it changed (so a restarted
    supervisor resumes from it). True when it changed."""
    rollouts[name] = after
    if after is None or after == before:
        return False
    write_json_atomic(rollout_path(layout, name), after.model_dump(mode="json", by_alias=True))
    return True


class RollHost(Protocol):
    """The supervisor, as a roll restarts one of its processes."""

    dirty: bool

    async def restart_process(self, r: ReplicaProcess) -> None: ...


async def request_roll_restart(host: RollHost, r: ReplicaProcess) -> str:
    """Restart a process onto its pending revision: its next start takes the target (`promote_target`); a
    running one gets SIGTERM (graceful), one that is down starts on it. Returns what was done, for the log."""
    r.roll_requested = True
    r.failures = 0  # a roll's restart is not a crash: no longer back-off
    host.dirty = True
    if r.pid is None:
        return f"{r.name} starts on revision {r.target_revision}"
    await host.restart_process(r)
    return f"SIGTERM to {r.name}; it starts on revision {r.target_revision}"


def read_rollout(layout: StateLayout, group: str) -> RolloutStatus | None:
    try:
        return RolloutStatus.model_validate_json(rollout_path(layout, group).read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def with_rollout(doc: dict[str, Any], layout: StateLayout, group: str) -> None:
    """`local status`: the supervisor's last rollout, and the RolloutBlocked condition while it is blocked."""
    rollout = read_rollout(layout, group)
    if rollout is None:
        return
    doc["rollout"] = rollout.model_dump(mode="json", by_alias=True)
    blocked = rollout_blocked_condition(rollout)
    if blocked is not None:
        doc.setdefault("conditions", []).append(blocked)


def local_roll_settings(bg: BrokerGroup, state: LocalState) -> RollSettings:
    info = state.group(bg.metadata.name)
    endpoints = [
        ReplicaEndpoint(name, rp.address) for name in (info.replicas if info else []) if (rp := state.replica(name))
    ]
    removing = frozenset(r.name for r in state.replicas if r.group == bg.metadata.name and r.removing)
    return roll_settings(bg, info.controllers if info else (), endpoints, removing)


class LocalRoll:
    """The supervisor's `RollPlatform`: revisions from state.json, restarts through the supervisor."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.rollouts: dict[str, RolloutStatus | None] = {}
        self.last_forget_error = ""

    def revisions(self, group: str) -> Mapping[str, Revisions]:
        return {
            r.name: Revisions(r.revision, r.revision if r.removing else r.target_revision or r.revision)
            for r in self.supervisor.state.replicas
            if r.group == group and r.kind == "BrokerGroup"
        }

    async def roll_restart(self, replica: ReplicaObservation) -> str:
        r = self.supervisor.state.replica(replica.name)
        if r is None:
            return ""
        return await request_roll_restart(self.supervisor, r)

    async def remove_replica(self, replica: ReplicaObservation) -> str:
        r = self.supervisor.state.replica(replica.name)
        if r is None:
            return ""
        r.removed_broker_id = replica.broker_id if replica.broker_id is not None else r.removed_broker_id
        self.supervisor.dirty = True
        if r.pid is None:
            r.desired = STOPPED
            return f"{r.name} is down"
        if r.desired == STOPPED:
            return ""  # stopping already (a broker takes 10-20 s to exit)
        answer = self.supervisor._signal(r, "TERM", no_restart=True, now=time.time())
        return f"SIGTERM to {r.name}; it is not restarted" if answer.get("ok") else str(answer.get("message"))

    async def _forget_removed(self, client: RemotingClient, settings: RollSettings, name: str, bg: BrokerGroup) -> str:
        """Removed replicas that are down: the controller forgets them, then so does the platform (their data is
        kept unless spec.storage.reclaimPolicy is Delete)."""
        state = self.supervisor.state
        gone = [r for r in state.replicas if r.group == name and r.removing and r.desired == STOPPED and r.pid is None]
        if not gone:
            return ""
        ids = [r.removed_broker_id for r in gone if r.removed_broker_id is not None]
        if ids:
            why = await forget_replicas(client, settings, name, ids)
            if why is not None:
                text = f"the controller could not forget brokers {ids} yet: {why}"
                said, self.last_forget_error = self.last_forget_error, text
                return "" if said == text else text  # retried every pass, said once
        for r in gone:
            state.replicas.remove(r)
            info = state.group(name)
            if info is not None and r.name in info.replicas:
                info.replicas.remove(r.name)
            if bg.spec.storage.reclaim_policy == "Delete":
                shutil.rmtree(r.data_dir, ignore_errors=True)
        self.supervisor.save()
        return f"removed {', '.join(r.name for r in gone)}; the controller forgot brokers {ids}"

    async def run(self, client: RemotingClient, name: str, group: GroupState) -> str | None:
        """One roll step for one group; the step's text when something was done or changed."""
        layout = self.supervisor.layout
        bg = next(
            (
                r
                for r in load_resources(self.supervisor.state)
                if isinstance(r, BrokerGroup) and r.metadata.name == name
            ),
            None,
        )
        if bg is None:
            return None
        settings = local_roll_settings(bg, self.supervisor.state)
        forgotten = await self._forget_removed(client, settings, name, bg)
        before = self.rollouts[name] if name in self.rollouts else read_rollout(layout, name)
        after = await run_roll_step(client, group, settings, before, self)
        if forgotten and after is not None:
            after = after.model_copy(update={"current_step": forgotten})
        if not remember_rollout(layout, self.rollouts, name, before, after):
            return None
        assert after is not None  # remember_rollout: changed
        if self.supervisor.dirty:
            self.supervisor.save()
        if forgotten:
            return forgotten
        changed = before is None or (after.phase, after.message) != (before.phase, before.message)
        shown = after.current_step if after.phase == "Rolling" else after.message
        return f"rollout {after.phase}: {shown}" if changed else None

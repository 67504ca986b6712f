"""Rolling restarts and hot config changes of a BrokerGroup on Kubernetes: `control.roll`, with pods as replicas.

Contract:

* The StatefulSet (updateStrategy OnDelete) holds the desired pod template. Its controller names that
  template's revision (`status.updateRevision`) and stamps every pod it creates with the revision it was
  created from (label `controller-revision-hash`). `PodRoll` reads both as the roll's revisions, and restarts a
  replica by deleting its pod gracefully (the broker's shutdown hook runs), so that the StatefulSet recreates it
  on the desired revision. Until the StatefulSet controller has seen the latest spec (`observedGeneration`)
  there are no revisions to compare and the roll waits.
* The pod template carries only what a restart changes (image, JVM options, restart-only keys): a change of
  hot keys only (`core.config_change.HOT_BROKER_KEYS`) gives no new revision. `apply_hot_keys` brings every
  running broker's hot keys to the rendered values (UPDATE_BROKER_CONFIG, read back), on every pass, so a
  broker restarted or recreated meanwhile converges too.
* `roll_pass` runs one `control.roll.run_roll_step` and writes `status.rollout` (and the RolloutBlocked
  condition) only when it changed: a restarted operator resumes the roll from there.
* **Scale-in** of a controller-mode group goes through the roll, never through the StatefulSet alone (which
  removes the highest ordinals whatever their role): the reconciler keeps the StatefulSet's replica count
  (`render.kubernetes.broker_group.serving_replicas`), the roll switches the master off a removed ordinal, then
  `PodRoll.remove_replica` lowers the count by one (the StatefulSet deletes that pod gracefully; its PVC follows
  `spec.storage.reclaimPolicy` through `whenScaled`). Once no removed pod is left, the controller forgets their
  broker ids (`status.rollout.removedBrokerIds`, so an operator restart does not lose them).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, RolloutStatus
from rocketmq_operator.control.fence import hot_changes_past_fence
from rocketmq_operator.control.roll import (
    Revisions,
    RollSettings,
    apply_hot_config,
    forget_replicas,
    roll_settings,
    rollout_blocked_condition,
    run_roll_step,
)
from rocketmq_operator.core.config_change import HOT_BROKER_KEYS
from rocketmq_operator.core.observation import GroupState, ReplicaEndpoint, ReplicaObservation
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.platforms.kubernetes.status_writer import StatusChange, write_status
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.render.config import BrokerPlacement, broker_config

JSON = dict[str, Any]
LABEL_POD_REVISION = "controller-revision-hash"


def _ordinal(pod_name: str) -> int | None:
    tail = pod_name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else None


def pod_revisions(sts: JSON | None, pods: list[JSON]) -> dict[str, Revisions]:
    """Per replica (pod name): the revision its pod was created from and the StatefulSet's update revision.
    A replica whose pod is gone or terminating (deleted by the roll, the replication policy or a user) comes back
    from the update revision (an OnDelete StatefulSet creates every missing pod from it): it counts as on the
    desired revision, and `roll_pass` marks it down, so the roll waits for it instead of restarting it again.
    Empty while the StatefulSet controller has not observed the latest spec: the roll waits for it."""
    if sts is None:
        return {}
    status = sts.get("status") or {}
    desired = status.get("updateRevision")
    if not desired or status.get("observedGeneration") != sts["metadata"].get("generation"):
        return {}
    by_name = {p["metadata"]["name"]: p for p in pods}
    out: dict[str, Revisions] = {}
    for ordinal in range(int((sts.get("spec") or {}).get("replicas") or 0)):
        name = f"{sts['metadata']['name']}-{ordinal}"
        pod = by_name.get(name)
        running = pod is not None and not pod["metadata"].get("deletionTimestamp")
        current = str((pod or {})["metadata"].get("labels", {}).get(LABEL_POD_REVISION, "")) if running else desired
        out[name] = Revisions(
            current, str(desired), ((pod or {}).get("spec") or {}).get("nodeName") if running else None
        )
    return out


def replaced_pods(sts: JSON | None, pods: list[JSON]) -> set[str]:
    """Replicas whose pod is gone or terminating: deleted by the roll, the replication policy or a user, and
    being replaced by the StatefulSet. A terminating broker may still answer while it shuts down; it is
    going away all the same."""
    if sts is None:
        return set()
    live = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    count = int((sts.get("spec") or {}).get("replicas") or 0)
    return {f"{sts['metadata']['name']}-{i}" for i in range(count)} - live


def removing_pods(bg: BrokerGroup, sts: JSON | None) -> frozenset[str]:
    """The StatefulSet's pods beyond `spec.replicas`: what a scale-in still has to remove."""
    count = int(((sts or {}).get("spec") or {}).get("replicas") or 0)
    return frozenset(f"{bg.metadata.name}-{i}" for i in range(bg.spec.replicas, count))


class PodRoll:
    """`control.roll.RollPlatform` on Kubernetes: revisions from the StatefulSet and its pods; a restart deletes
    the pod, unless it is being replaced already; a removal lowers the StatefulSet's replica count."""

    def __init__(
        self,
        kube: KubeClient,
        namespace: str,
        revisions: Mapping[str, Revisions],
        replaced: set[str],
        sts: JSON | None = None,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self._revisions = dict(revisions)
        self.replaced = replaced
        self.sts = sts

    def revisions(self, group: str) -> Mapping[str, Revisions]:
        return self._revisions

    async def roll_restart(self, replica: ReplicaObservation) -> str:
        if replica.name in self.replaced:
            return f"pod {replica.name} is being replaced already; the roll waits for it"
        await self.kube.delete("Pod", self.namespace, replica.name)
        wanted = self._revisions.get(replica.name)
        return f"deleted pod {replica.name}; the StatefulSet recreates it on {wanted.desired if wanted else '?'}"

    async def remove_replica(self, replica: ReplicaObservation) -> str:
        if self.sts is None:
            return ""
        name = self.sts["metadata"]["name"]
        count = int((self.sts.get("spec") or {}).get("replicas") or 0)
        ordinal = _ordinal(replica.name)
        if ordinal is None or ordinal != count - 1:
            # The StatefulSet removes its highest ordinal only; the roll removes highest first, so this is a
            # stale observation: the next pass sees the new count.
            return f"pod {replica.name} is not the StatefulSet's highest ordinal ({count - 1}); waiting"
        await self.kube.patch("StatefulSet", self.namespace, name, {"spec": {"replicas": ordinal}})
        return f"StatefulSet {name} scaled to {ordinal}: pod {replica.name} is deleted gracefully"


async def roll_pass(
    kube: KubeClient,
    client: RemotingClient,
    bg: BrokerGroup,
    state: GroupState,
    controllers: list[str],
    endpoints: list[ReplicaEndpoint],
    pods: list[JSON],
    before: RolloutStatus | None,
    announce: Callable[[RolloutStatus | None, RolloutStatus], None],
) -> RolloutStatus | None:
    """One roll step for the group; writes `status.rollout` when it changed. Returns the new rollout.

    `announce(before, after)` runs before the write: a step the roll took is said (an Event) even when the write
    is cut off after the API server stored it, where the next pass would read the step as already taken."""
    ns, name = bg.metadata.namespace or "default", bg.metadata.name
    sts = await kube.get("StatefulSet", ns, name)
    revisions = pod_revisions(sts, pods)
    replaced = replaced_pods(sts, pods)
    # A replica being replaced counts as down whatever it still answers: no other restart while it is away.
    state = dataclasses.replace(
        state,
        replicas=tuple(dataclasses.replace(r, reachable=False) if r.name in replaced else r for r in state.replicas),
    )
    removing = removing_pods(bg, sts)
    settings = roll_settings(bg, controllers, endpoints, removing)
    forgotten = await _forget_removed(client, settings, bg, before, pods, removing)
    after = await run_roll_step(client, state, settings, forgotten, PodRoll(kube, ns, revisions, replaced, sts))
    if after is not None and after != before:
        announce(before, after)
        change = StatusChange(
            fields={"rollout": after.model_dump(mode="json", by_alias=True)},
            conditions={"RolloutBlocked": rollout_blocked_condition(after)},
        )
        # The status as this pass read it is not at hand: the writer reads it (only when the rollout moved).
        await write_status(kube, {"kind": "BrokerGroup", "metadata": {"namespace": ns, "name": name}}, change)
    return after


async def _forget_removed(
    client: RemotingClient,
    settings: RollSettings,
    bg: BrokerGroup,
    rollout: RolloutStatus | None,
    pods: list[JSON],
    removing: frozenset[str],
) -> RolloutStatus | None:
    """Once every pod a scale-in removed is gone (terminating ones included), the controller forgets their broker
    ids. It refuses while its heartbeat table still holds one alive: tried again on the next pass."""
    if rollout is None or not rollout.removed_broker_ids or removing:
        return rollout
    if any((_ordinal(p["metadata"]["name"]) or 0) >= bg.spec.replicas for p in pods):
        return rollout
    if await forget_replicas(client, settings, bg.metadata.name, rollout.removed_broker_ids) is not None:
        return rollout
    return rollout.model_copy(update={"removed_broker_ids": []})


async def apply_hot_keys(
    client: RemotingClient,
    bg: BrokerGroup,
    placement: BrokerPlacement,
    state: GroupState,
    fenced: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """Bring each answering broker's hot keys to the rendered values, except the fence's keys on a replica a fence
    holds (the user's: ``fenced``; a switchover's or a lease agent's: its send door shut; `hot_changes_past_fence`).
    Returns what was done or failed, per replica (empty when every broker already had them)."""
    done: dict[str, str] = {}
    for replica in state.replicas:
        ordinal = _ordinal(replica.name)
        if not replica.reachable or ordinal is None or ordinal >= bg.spec.replicas:
            continue
        wanted = {k: v for k, v in broker_config(bg, ordinal, placement).items() if k in HOT_BROKER_KEYS}
        try:
            live = await client.get_broker_config(replica.address, timeout=3.0)
        except (RemotingException, OSError):
            continue  # observed again next pass
        changes = hot_changes_past_fence(
            wanted, live, user_fenced=replica.name in fenced, now_ms=int(time.time() * 1000)
        )
        if not changes:
            continue
        result = await apply_hot_config(client, [replica.address], changes)
        keys = ", ".join(f"{k}={v}" for k, v in sorted(changes.items()))
        done[replica.name] = (
            f"hot keys applied: {keys}" if result.ok else f"hot keys {keys} not applied: {result.failed}"
        )
    return done

"""The switchover before a node drain: move the master off a cordoned node while it still serves. Pure.

Contract: `plan_drain(facts)` looks at one observation of a controller-mode group, where each replica's pod runs
and what is known of those nodes, and returns one `DrainStep`:

* `NONE`: nothing to do. The master's node is schedulable, or there is no serving master to move (the failover
  policy's business), or the master's pod is not on a node.
* `SWITCHOVER(target)`: the master's node is cordoned (`spec.unschedulable: true`, which `kubectl drain` sets
  before it evicts): switch over to the in-sync slave whose pod runs on a schedulable node, one alone on its node
  first, then the most caught-up
  (`core.roll.best_target`, the roll's own choice), by the one switchover operation the roll and the
  `switchover-to` annotation use.
* `HOLD(reason, fix)`: the master's node is cordoned, or cannot be read, and the master is not moved now:
  paused (`rollout-paused`), a roll in progress (it moves the master itself, last: never fought), the controller
  unreadable, the node unreadable, or no in-sync slave on a schedulable node. Shown, never acted on.

It cannot loop: once switched, the master's pod runs on a schedulable node and the step is NONE. A node that
cannot be read is never taken as schedulable, so a slave on it is no target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from rocketmq_operator.core.roll import PAUSE_ANNOTATION, best_target

CONDITION = "DrainSwitchover"


class DrainKind(StrEnum):
    NONE = "None"
    SWITCHOVER = "Switchover"
    HOLD = "Hold"


@dataclass(frozen=True)
class NodeFacts:
    name: str
    schedulable: bool | None  # not spec.unschedulable; None: unknown (see `error`; "" there: not found)
    error: str = ""


@dataclass(frozen=True)
class DrainReplica:
    name: str  # the pod
    broker_id: int | None
    alive: bool
    max_offset: int | None = None
    node: str | None = None  # the pod's spec.nodeName; None: not scheduled (or no pod)
    terminating: bool = False  # the pod is being deleted (evicted): no target


@dataclass(frozen=True)
class DrainFacts:
    controller_reachable: bool
    master_broker_id: int | None
    sync_state_set: tuple[int, ...]
    replicas: tuple[DrainReplica, ...]
    nodes: Mapping[str, NodeFacts] = field(default_factory=dict)  # the nodes read; absent: not read
    paused: bool = False  # the rollout-paused annotation
    roll_phase: str | None = None  # status.rollout.phase of a roll in progress (None: none, or Complete)


@dataclass(frozen=True)
class DrainStep:
    kind: DrainKind
    reason: str
    message: str = ""
    fix: str = ""
    master: str | None = None  # the master's pod
    node: str | None = None  # its node
    target_broker_id: int | None = None
    target: str | None = None  # the target's pod

    @property
    def text(self) -> str:
        return f"{self.message}; fix: {self.fix}" if self.fix else self.message


def _why_not(facts: DrainFacts, r: DrainReplica) -> str | None:
    """Why slave `r` cannot take the master over from a cordoned node (None: it can)."""
    if r.broker_id is None or r.broker_id not in facts.sync_state_set:
        return "not in the SyncStateSet"
    if not r.alive:
        return "not answering"
    if r.terminating:
        return "its pod is being deleted"
    if r.node is None:
        return "its pod is not scheduled"
    node = facts.nodes.get(r.node)
    if node is None or node.schedulable is None:
        return f"node {r.node} unknown"
    if not node.schedulable:
        return f"node {r.node} cordoned too"
    return None


def plan_drain(facts: DrainFacts) -> DrainStep:
    """The step for one observation; see the module docstring."""
    master = next(
        (r for r in facts.replicas if r.broker_id is not None and r.broker_id == facts.master_broker_id), None
    )
    if master is None or not master.alive:
        return DrainStep(DrainKind.NONE, "NoServingMaster", "no serving master to move (the failover policy acts)")
    if master.node is None:
        return DrainStep(DrainKind.NONE, "MasterNotScheduled", f"the master's pod {master.name} is on no node")
    node = facts.nodes.get(master.node)
    where = f"master {master.name} (broker {master.broker_id}) on node {master.node}"
    if node is None or node.schedulable is None:
        why = f"cannot be read ({node.error})" if node is not None and node.error else "does not exist"
        return DrainStep(
            DrainKind.HOLD,
            "NodeUnknown",
            f"node {master.node} of {where} {why}: a drain of it is not seen, and the master would be evicted "
            "without a switchover; rule: the master is moved off a node only once the node is read as cordoned",
            "let the operator get Nodes (chart value rbac.clusterRead: true)",
            master=master.name,
            node=master.node,
        )
    if node.schedulable:
        return DrainStep(DrainKind.NONE, "MasterNodeSchedulable", f"{where}, schedulable", master=master.name)
    cordoned = f"node {master.node} of {where} is cordoned (spec.unschedulable: a drain evicts its pods next)"
    if facts.paused:
        return DrainStep(
            DrainKind.HOLD,
            "Paused",
            f"{cordoned}; the {PAUSE_ANNOTATION} annotation holds every switchover",
            f"remove the {PAUSE_ANNOTATION} annotation to move the master, or uncordon {master.node}",
            master=master.name,
            node=master.node,
        )
    if facts.roll_phase is not None:
        return DrainStep(
            DrainKind.HOLD,
            "RolloutInProgress",
            f"{cordoned}; a roll is in progress (status.rollout.phase {facts.roll_phase}) and moves the master "
            "itself, last: not fought",
            f"wait for the roll to finish (the master is moved then), or uncordon {master.node} meanwhile",
            master=master.name,
            node=master.node,
        )
    if not facts.controller_reachable:
        return DrainStep(
            DrainKind.HOLD,
            "ControllerUnavailable",
            f"{cordoned}; the controller quorum is unreadable: no switchover while the SyncStateSet is unknown",
            f"bring the controllers back, or uncordon {master.node} meanwhile",
            master=master.name,
            node=master.node,
        )
    others = [r for r in facts.replicas if r is not master]
    candidates = [r for r in others if _why_not(facts, r) is None]
    if not candidates:
        excluded = "; ".join(f"{r.name}: {_why_not(facts, r)}" for r in others) or "the group has no other replica"
        return DrainStep(
            DrainKind.HOLD,
            "NoSchedulableTarget",
            f"{cordoned}; no in-sync slave runs on a schedulable node ({excluded}): the master is not moved, and "
            "its PodDisruptionBudget holds a drain's eviction of it",
            f"uncordon {master.node} (kubectl uncordon {master.node}) or add a node where a slave can run, and let "
            "it rejoin the SyncStateSet; or delete the master's pod by hand (writes pause until the controller "
            "elects)",
            master=master.name,
            node=master.node,
        )
    target = best_target(candidates, facts.replicas)
    return DrainStep(
        DrainKind.SWITCHOVER,
        "SwitchoverBeforeDrain",
        f"{cordoned}: switching the master over to {target.name} (broker {target.broker_id}, the best-placed, "
        f"most caught-up in-sync slave on a schedulable node {target.node}) before the eviction",
        master=master.name,
        node=master.node,
        target_broker_id=target.broker_id,
        target=target.name,
    )

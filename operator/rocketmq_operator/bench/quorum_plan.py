"""`bench quorum`, the pure half: the cells, their manifests, what `explain` predicts and the cell summary.

Contract: no I/O and no clock. A cell is (replicas, mode, condition). `manifest` gives the resources a cell's
group runs with; `predicted_statuses` says which put statuses RocketMQ's rules (`core.quorum.predict_put`, the
same function `explain` prints) allow while the condition holds; `summarize_cell` turns what the producer saw
into the JSON cell, with `explain_agrees` true when every observed status is one of the predicted ones.

The modes are RIP-34's comparison (`../shared/reference/rocketmq-facts.md` §2.2, §9):

* `async`: ASYNC_MASTER, never waits for a slave;
* `allSync`: plain SYNC_MASTER waiting for every replica (inSyncReplicas = replicas);
* `quorum`: plain SYNC_MASTER waiting for a majority (2 of 3, 3 of 5), any slave's ack counts;
* `autoDegrade`: slave-acting-master, inSyncReplicas = replicas, lowered to the replicas in sync (a slave more
  than `AUTO_DEGRADE_GAP` behind is not) down to a majority;
* `allAck`: controller mode with allAckInSyncStateSet: every SyncStateSet member acks; the master drops a
  member that has not caught up for 15 s (haMaxTimeSlaveNotCatchup).

Conditions: `healthy`; `stalled`: one slave SIGSTOPped (alive to the name server, connected, silent); `slow`: one
slave under a CPU quota. A stalled slave passes through two states the predictions cover: *noticed by nobody*
(still alive and in sync, but no ack arrives) and *dropped* (out of the SyncStateSet, or beyond the in-sync
gap). A slow slave may be anywhere between healthy and stalled, so its prediction is the union.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.core.quorum import PutOutcome, QuorumParams, effective_quorum, predict_put
from rocketmq_operator.tools.stats import percentile

MODES = ("async", "allSync", "quorum", "autoDegrade", "allAck")
CONDITIONS = ("healthy", "stalled", "slow")
REPLICAS = (3, 5)
AUTO_DEGRADE_GAP = "256Ki"
"""The autoDegrade cell's maxGapNotInSync: RocketMQ's 256 MiB default would take the bench's producer minutes
to open behind a stalled slave, so the degrade would never show within a cell."""
STORED = frozenset({"PUT_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"})
CONTROLLER = "quorum-ctl"
GROUP = "quorum-bench"


class QuorumBenchError(ValueError):
    """Options that name no cell; the message names the option, the value, the rule and the fix."""


@dataclass(frozen=True)
class CellGroup:
    """One group the bench brings up: the conditions run one after the other on it."""

    replicas: int
    mode: str


def majority(replicas: int) -> int:
    return replicas // 2 + 1


def plan_groups(replicas: Sequence[int], modes: Sequence[str], conditions: Sequence[str]) -> list[CellGroup]:
    """The groups to bring up, in order; refuses unknown modes/conditions and sizes below 3."""
    for mode in modes:
        if mode not in MODES:
            raise QuorumBenchError(f"--modes: {mode!r} is not a mode; use some of {', '.join(MODES)}")
    for condition in conditions:
        if condition not in CONDITIONS:
            raise QuorumBenchError(
                f"--conditions: {condition!r} is not a condition; use some of {', '.join(CONDITIONS)}"
            )
    for n in replicas:
        if n < 3:
            raise QuorumBenchError(
                f"--replicas: {n} leaves no slave to stall beside a quorum; use 3 or more (the issue's 3 and 5)"
            )
    if not (replicas and modes and conditions):
        raise QuorumBenchError("--replicas, --modes and --conditions each need at least one value")
    return [CellGroup(n, mode) for n in replicas for mode in modes]


def broker_spec(group: CellGroup) -> dict[str, Any]:
    """The BrokerGroup spec fields that make the mode (the rest are the defaults)."""
    n, mode = group.replicas, group.mode
    if mode == "async":
        return {"haMode": "async", "upgrade": {"strategy": "restart"}}
    if mode == "allSync":
        return {"haMode": "sync", "quorum": {"inSyncReplicas": n}, "upgrade": {"strategy": "restart"}}
    if mode == "quorum":
        return {"haMode": "sync", "quorum": {"inSyncReplicas": majority(n)}, "upgrade": {"strategy": "restart"}}
    if mode == "autoDegrade":
        return {
            "haMode": "slaveActingMaster",
            "quorum": {
                "inSyncReplicas": n,
                "minInSyncReplicas": majority(n),
                "autoDegrade": True,
                "maxGapNotInSync": AUTO_DEGRADE_GAP,
            },
            "upgrade": {"strategy": "restart"},
        }
    return {
        "haMode": "controller",
        "quorum": {"allAckInSyncStateSet": True, "minInSyncReplicas": majority(n)},
    }


def manifest(group: CellGroup, heap: str = "384Mi") -> list[dict[str, Any]]:
    """A ControllerGroup (the name server; the controller for allAck) and the cell's BrokerGroup."""
    api = "rocketmq-operator.dev/v1alpha1"
    spec: dict[str, Any] = {"replicas": group.replicas, "jvm": {"heap": heap}, **broker_spec(group)}
    spec["controllerRef"] = {"name": CONTROLLER}
    return [
        {"apiVersion": api, "kind": "ControllerGroup", "metadata": {"name": CONTROLLER}, "spec": {"replicas": 1}},
        {"apiVersion": api, "kind": "BrokerGroup", "metadata": {"name": GROUP}, "spec": spec},
    ]


def _outcomes(params: QuorumParams, condition: str) -> set[PutOutcome]:
    n = params.total_replicas
    healthy = {predict_put(params, n, n).outcome}
    unnoticed = predict_put(params, n, n, in_sync_alive=n - 1, acking=n - 1).outcome
    dropped = predict_put(params, n, n - 1, acking=n - 1).outcome
    stalled = {unnoticed, dropped}
    if condition == "healthy":
        return healthy
    if condition == "stalled":
        return stalled
    return healthy | stalled


def predicted_statuses(params: QuorumParams, condition: str) -> list[str]:
    """The put statuses `explain`'s rules allow while ``condition`` holds, sorted."""
    return sorted(str(o) for o in _outcomes(params, condition))


def explain_agrees(observed: dict[str, int], predicted: Sequence[str]) -> bool:
    """Every status a send ended with is one the prediction allows (a client-side timeout is not a put status
    and never agrees: the bench's producer waits longer than the broker's slaveTimeout)."""
    return all(status in predicted for status, count in observed.items() if count)


@dataclass(frozen=True)
class SendOutcome:
    status: str
    latency_ms: float
    stored: bool


def summarize_cell(
    group: CellGroup,
    condition: str,
    params: QuorumParams,
    sends: Sequence[SendOutcome],
    seconds: float,
) -> dict[str, Any]:
    """One JSON cell: latency percentiles of every send, acknowledged messages per second, status counts."""
    latencies = [s.latency_ms for s in sends]
    statuses = dict(sorted(Counter(s.status for s in sends).items()))
    predicted = predicted_statuses(params, condition)

    def pct(p: float) -> float | None:
        return round(percentile(latencies, p), 3) if latencies else None

    return {
        "replicas": group.replicas,
        "mode": group.mode,
        "condition": condition,
        "sends": len(sends),
        "p50_ms": pct(50),
        "p99_ms": pct(99),
        "p999_ms": pct(99.9),
        "msgs_per_s": round(sum(1 for s in sends if s.stored) / seconds, 1) if seconds > 0 else None,
        "statuses": statuses,
        "predicted_statuses": predicted,
        "explain_agrees": explain_agrees(statuses, predicted),
    }


def quorum_params(group: CellGroup) -> QuorumParams:
    """What the cell's brokers run with (the same resolution `explain` and the renderer use)."""
    bg = BrokerGroup.model_validate(manifest(group)[1])
    return effective_quorum(bg.spec)


def headline(cells: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per replica count, the stalled/healthy p99 ratio of the quorum and allSync cells (RIP-34's claim: a
    stalled slave must not stall every send)."""
    out: list[dict[str, Any]] = []
    by_key = {(c["replicas"], c["mode"], c["condition"]): c for c in cells}
    for n in sorted({c["replicas"] for c in cells}):
        row: dict[str, Any] = {"replicas": n}
        for mode in ("quorum", "allSync"):
            healthy, stalled = by_key.get((n, mode, "healthy")), by_key.get((n, mode, "stalled"))
            if healthy and stalled and healthy["p99_ms"] and stalled["p99_ms"] is not None:
                row[f"{mode}_stalled_over_healthy_p99"] = round(stalled["p99_ms"] / healthy["p99_ms"], 2)
        if len(row) > 1:
            out.append(row)
    return out


def quorum_svg(cells: Sequence[dict[str, Any]]) -> str:
    """A bar per cell for p50 and p99 send latency, on a log scale from 1 ms to 10 s; a cell whose statuses
    disagree with the prediction is marked."""
    left, width, row, top = 230, 620, 18, 40
    lo, hi = 0.0, 4.0  # log10 ms

    def x(ms: float | None) -> float:
        value = math.log10(max(1.0, min(ms or 1.0, 10**hi)))
        return left + (value - lo) / (hi - lo) * width

    height = top + row * len(cells) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 40}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="{left}" y="16" font-size="13">bench quorum: send latency per cell (p50 light, p99 dark; log '
        "scale)</text>",
    ]
    for tick in range(int(lo), int(hi) + 1):
        tx = x(10.0**tick)
        label = f"{10**tick} ms" if tick < 3 else f"{10 ** (tick - 3)} s"
        out.append(f'<line x1="{tx:.1f}" y1="{top - 6}" x2="{tx:.1f}" y2="{height - 30}" stroke="#ddd"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 16}" text-anchor="middle">{label}</text>')
    for i, cell in enumerate(cells):
        y = top + i * row
        mark = "" if cell.get("explain_agrees", True) else " (!)"
        label = f"{cell['replicas']} {cell['mode']} {cell['condition']}{mark}"
        out.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{label}</text>')
        for key, colour in (("p99_ms", "#1f4e79"), ("p50_ms", "#9dc3e6")):
            out.append(
                f'<rect x="{left}" y="{y + 3}" width="{x(cell.get(key)) - left:.1f}" height="11" fill="{colour}"/>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"


__all__ = [
    "AUTO_DEGRADE_GAP",
    "CONDITIONS",
    "MODES",
    "REPLICAS",
    "STORED",
    "CellGroup",
    "QuorumBenchError",
    "SendOutcome",
    "broker_spec",
    "explain_agrees",
    "headline",
    "manifest",
    "plan_groups",
    "predicted_statuses",
    "quorum_params",
    "quorum_svg",
    "summarize_cell",
]

"""Human explanations of what a validated group means in RocketMQ terms (used by `rocketmq-operator explain`).

Pure text building on top of `quorum`; no I/O.
"""

from __future__ import annotations

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, HAMode
from rocketmq_operator.api.modes import MODES
from rocketmq_operator.api.validation import Problem
from rocketmq_operator.core.quorum import PutOutcome, effective_quorum, explain_table, quorum_keys

_OUTCOME_TEXT: dict[PutOutcome, str] = {
    PutOutcome.PUT_OK: "PUT_OK",
    PutOutcome.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT (stored on master, not replicated enough)",
    PutOutcome.IN_SYNC_REPLICAS_NOT_ENOUGH: "IN_SYNC_REPLICAS_NOT_ENOUGH (refused, not stored)",
    PutOutcome.NO_MASTER: "no master",
}


def explain_broker_group(bg: BrokerGroup, warnings: list[Problem]) -> str:
    q = effective_quorum(bg.spec)
    lines = [
        f"BrokerGroup {bg.metadata.name} ({bg.spec.replicas} replicas, cluster {bg.spec.cluster_name})",
        f"  mode: {MODES[q.mode].summary}",
    ]
    keys = [f"totalReplicas={q.total_replicas}", *(f"{k}={v}" for k, v in quorum_keys(q).items())]
    lines.append("  broker keys: " + ", ".join(keys))
    in_sync_label = "in SyncStateSet" if q.mode is HAMode.CONTROLLER else "in sync"
    header = f"  {'alive':>5}  {in_sync_label:>15}  {'acks needed':>11}  outcome of a put"
    lines.append("")
    lines.append(header)
    for row in explain_table(q):
        p = row.prediction
        lines.append(f"  {row.alive:>5}  {row.in_sync:>15}  {p.need_acks:>11}  {_OUTCOME_TEXT[p.outcome]}")
    lines.append("  (alive and in-sync counts include the master; a put needs the master alive)")
    if warnings:
        lines.append("")
        lines.append("  warnings:")
        lines.extend(f"    {w}" for w in warnings)
    return "\n".join(lines)


def explain_controller_group(cg: ControllerGroup, warnings: list[Problem]) -> str:
    tolerates = (cg.spec.replicas - 1) // 2
    where = (
        "standalone controllers beside separate name servers"
        if cg.spec.standalone
        else ("controllers inside the name servers (enableControllerInNamesrv)")
    )
    lines = [
        f"ControllerGroup {cg.metadata.name} ({cg.spec.replicas} replicas, a Raft quorum by "
        f"{'JRaft' if cg.spec.type == 'jraft' else 'DLedger'})",
        f"  deployment: {where}",
        f"  tolerates {tolerates} controller failure(s); with the quorum down, brokers keep serving but no "
        "master can be elected and SyncStateSets cannot shrink",
    ]
    if warnings:
        lines.append("  warnings:")
        lines.extend(f"    {w}" for w in warnings)
    return "\n".join(lines)

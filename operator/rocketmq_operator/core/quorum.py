"""Mode-aware quorum-write semantics: how many acks a put needs, and what the producer gets back.

Pure functions over plain values. They follow RocketMQ 5's CommitLog/GroupTransferService logic
(`../shared/reference/rocketmq-facts.md` §2.2 and §9), per HA mode:

* `async`: an ASYNC_MASTER never waits: PUT_OK.
* `sync` (plain SYNC_MASTER): need = inSyncReplicas, static; acks come from any connected slave; missing acks
  give FLUSH_SLAVE_TIMEOUT after slaveTimeout, and the message **is stored** on the master.
* `slaveActingMaster`: inSync = min(alive, in sync within haMaxGapNotInSync); need = calcNeedAckNums(inSync)
  (clamped to [minInSyncReplicas, inSyncReplicas] when autoDegrade); need > inSync → IN_SYNC_REPLICAS_NOT_ENOUGH,
  **not stored**.
* `controller`: SyncStateSet size < minInSyncReplicas → IN_SYNC_REPLICAS_NOT_ENOUGH (not stored); need is
  inSyncReplicas (static, any connection) or, with allAckInSyncStateSet, every SyncStateSet member.

In every synchronous mode a need of 0 or 1 returns PUT_OK at once: inSyncReplicas=1 is asynchronous replication.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from rocketmq_operator.api.models import BrokerGroupSpec, HAMode
from rocketmq_operator.api.modes import (
    ALL_ACK_IN_SYNC_STATE_SET,
    AUTO_IN_SYNC_REPLICAS,
    HA_MAX_GAP_NOT_IN_SYNC,
    IN_SYNC_REPLICAS,
    MIN_IN_SYNC_REPLICAS,
    MODES,
    in_sync_replicas,
    min_in_sync_replicas,
)
from rocketmq_operator.api.quantity import parse_bytes

ROCKETMQ_DEFAULT_HA_MAX_GAP_NOT_IN_SYNC = 256 * 1024 * 1024


class PutOutcome(StrEnum):
    PUT_OK = "PUT_OK"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    IN_SYNC_REPLICAS_NOT_ENOUGH = "IN_SYNC_REPLICAS_NOT_ENOUGH"
    NO_MASTER = "NO_MASTER"


@dataclass(frozen=True)
class QuorumParams:
    """The broker-side values that decide a put, after defaults. These are exactly what is rendered."""

    mode: HAMode
    total_replicas: int
    in_sync_replicas: int
    min_in_sync_replicas: int
    auto_degrade: bool
    all_ack_in_sync_state_set: bool
    ha_max_gap_not_in_sync: int


@dataclass(frozen=True)
class PutPrediction:
    need_acks: int
    outcome: PutOutcome
    stored: bool
    why: str

    @property
    def writable(self) -> bool:
        """Would a producer get an acknowledged (stored) put: PUT_OK or FLUSH_SLAVE_TIMEOUT."""
        return self.stored


def effective_quorum(spec: BrokerGroupSpec) -> QuorumParams:
    """Resolve spec defaults (`api.modes`) into the values the brokers will run with."""
    q = spec.quorum
    gap = parse_bytes(q.max_gap_not_in_sync) if q.max_gap_not_in_sync else ROCKETMQ_DEFAULT_HA_MAX_GAP_NOT_IN_SYNC
    return QuorumParams(
        mode=HAMode(spec.ha_mode),
        total_replicas=spec.replicas,
        in_sync_replicas=in_sync_replicas(spec),
        min_in_sync_replicas=min_in_sync_replicas(spec),
        auto_degrade=bool(q.auto_degrade),
        all_ack_in_sync_state_set=bool(q.all_ack_in_sync_state_set),
        ha_max_gap_not_in_sync=gap,
    )


def config_text(value: object) -> str:
    """How RocketMQ's properties files spell a value (booleans in lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def quorum_keys(params: QuorumParams) -> dict[str, str]:
    """The quorum keys this mode's broker reads (`api.modes.MODES`), in render order, with their values."""
    values: dict[str, bool | int] = {
        IN_SYNC_REPLICAS: params.in_sync_replicas,
        MIN_IN_SYNC_REPLICAS: params.min_in_sync_replicas,
        ALL_ACK_IN_SYNC_STATE_SET: params.all_ack_in_sync_state_set,
        AUTO_IN_SYNC_REPLICAS: params.auto_degrade,
        HA_MAX_GAP_NOT_IN_SYNC: params.ha_max_gap_not_in_sync,
    }
    return {key: config_text(values[key]) for key in MODES[params.mode].quorum_keys}


def calc_need_ack_nums(params: QuorumParams, in_sync: int) -> int:
    """RocketMQ's calcNeedAckNums (slave-acting-master): static, or clamped when auto-degrade is on."""
    need = params.in_sync_replicas
    if params.auto_degrade:
        need = max(min(params.in_sync_replicas, in_sync), params.min_in_sync_replicas)
    return need


def predict_put(
    params: QuorumParams,
    alive: int,
    in_sync: int,
    in_sync_alive: int | None = None,
    master_alive: bool = True,
    acking: int | None = None,
) -> PutPrediction:
    """What one put gets, given the group's state.

    alive: replicas up and replicating, master included. in_sync: the replicas the master counts as in sync,
    itself included (controller mode: its SyncStateSet size; slave-acting-master: within haMaxGapNotInSync).
    in_sync_alive: members of that set that still ack (controller mode, before a dead slave is removed);
    defaults to min(alive, in_sync). acking: the replicas whose acks arrive, master included (defaults to
    alive): a hung slave is still alive to the name server, and in sync until the master notices, but sends no
    ack.
    """
    if not master_alive or alive < 1:
        return PutPrediction(0, PutOutcome.NO_MASTER, False, "no master is serving writes")
    in_sync = max(1, min(in_sync, params.total_replicas))
    acks = alive if acking is None else min(acking, alive)
    members_acking = min(in_sync, acks) if in_sync_alive is None else min(in_sync, acks, in_sync_alive)
    mode = params.mode

    if mode is HAMode.ASYNC:
        return PutPrediction(1, PutOutcome.PUT_OK, True, "ASYNC_MASTER does not wait for slaves")

    if mode is HAMode.SLAVE_ACTING_MASTER:
        effective_in_sync = min(alive, in_sync)
        need = calc_need_ack_nums(params, effective_in_sync)
        if need > effective_in_sync:
            return PutPrediction(
                need,
                PutOutcome.IN_SYNC_REPLICAS_NOT_ENOUGH,
                False,
                f"needs {need} in sync, only {effective_in_sync} are: refused before append",
            )
        return _wait_for_acks(need, acks, "any connected slave's ack counts")

    if mode is HAMode.CONTROLLER:
        if in_sync < params.min_in_sync_replicas:
            return PutPrediction(
                params.in_sync_replicas if not params.all_ack_in_sync_state_set else in_sync,
                PutOutcome.IN_SYNC_REPLICAS_NOT_ENOUGH,
                False,
                f"SyncStateSet has {in_sync} < minInSyncReplicas {params.min_in_sync_replicas}: refused",
            )
        if params.all_ack_in_sync_state_set:
            if in_sync <= 1:
                return PutPrediction(1, PutOutcome.PUT_OK, True, "SyncStateSet is the master alone")
            if members_acking >= in_sync:
                return PutPrediction(in_sync, PutOutcome.PUT_OK, True, "every SyncStateSet member acks")
            return PutPrediction(
                in_sync,
                PutOutcome.FLUSH_SLAVE_TIMEOUT,
                True,
                "a SyncStateSet member does not ack: stored on the master, timed out",
            )
        return _wait_for_acks(params.in_sync_replicas, acks, "any connected slave's ack counts")

    # Plain SYNC_MASTER: static count, never refuses.
    return _wait_for_acks(params.in_sync_replicas, acks, "static inSyncReplicas, no degrade")


def _wait_for_acks(need: int, acking: int, how: str) -> PutPrediction:
    if need <= 1:
        return PutPrediction(need, PutOutcome.PUT_OK, True, "needs only the master's own write")
    if acking >= need:
        return PutPrediction(need, PutOutcome.PUT_OK, True, f"{need} acks available ({how})")
    return PutPrediction(
        need,
        PutOutcome.FLUSH_SLAVE_TIMEOUT,
        True,
        f"needs {need} acks, {acking} replicas can ack: stored on the master, FLUSH_SLAVE_TIMEOUT",
    )


@dataclass(frozen=True)
class ExplainRow:
    alive: int
    in_sync: int
    prediction: PutPrediction


def explain_table(params: QuorumParams) -> list[ExplainRow]:
    """Every converged state (in_sync ≤ alive), healthiest first."""
    rows: list[ExplainRow] = []
    for alive in range(params.total_replicas, 0, -1):
        for in_sync in range(alive, 0, -1):
            if params.mode in (HAMode.ASYNC, HAMode.SYNC) and in_sync != alive:
                continue  # these modes do not look at "in sync": one row per alive count
            rows.append(ExplainRow(alive, in_sync, predict_put(params, alive, in_sync)))
    return rows

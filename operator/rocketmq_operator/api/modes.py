"""What each HA mode means, written once: the broker keys it reads, the quorum defaults, a one-line summary.

Contract: `MODES[mode].quorum_keys` are the quorum keys a broker of that mode reads, in the order they are
rendered; `render.config` renders exactly these, `api.validation` warns about a set field whose key the mode
does not read, `core.explain` lists them, and `core.quorum` resolves their values. The quorum defaults
(`in_sync_replicas`, `min_in_sync_replicas`) are defined here in Python and, for the CRD's CEL rules, as
`CEL_IN_SYNC_REPLICAS` / `CEL_MIN_IN_SYNC_REPLICAS`; a unit test evaluates both on the same specs.
This lives in `api` (not `core`) because validation, the lowest reader, must not import upward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketmq_operator.api.models import BrokerGroupSpec, HAMode

IN_SYNC_REPLICAS = "inSyncReplicas"
MIN_IN_SYNC_REPLICAS = "minInSyncReplicas"
ALL_ACK_IN_SYNC_STATE_SET = "allAckInSyncStateSet"
AUTO_IN_SYNC_REPLICAS = "enableAutoInSyncReplicas"
HA_MAX_GAP_NOT_IN_SYNC = "haMaxGapNotInSync"

QUORUM_FIELDS: Mapping[str, str] = {
    IN_SYNC_REPLICAS: "spec.quorum.inSyncReplicas",
    MIN_IN_SYNC_REPLICAS: "spec.quorum.minInSyncReplicas",
    ALL_ACK_IN_SYNC_STATE_SET: "spec.quorum.allAckInSyncStateSet",
    AUTO_IN_SYNC_REPLICAS: "spec.quorum.autoDegrade",
    HA_MAX_GAP_NOT_IN_SYNC: "spec.quorum.maxGapNotInSync",
}
"""Broker key → the BrokerGroup field that sets it."""


@dataclass(frozen=True)
class ModeSemantics:
    quorum_keys: tuple[str, ...]
    summary: str

    def reads(self, key: str) -> bool:
        return key in self.quorum_keys


MODES: Mapping[HAMode, ModeSemantics] = {
    HAMode.CONTROLLER: ModeSemantics(
        (IN_SYNC_REPLICAS, MIN_IN_SYNC_REPLICAS, ALL_ACK_IN_SYNC_STATE_SET),
        "controller mode: the RocketMQ controller elects masters from the SyncStateSet; "
        "the master proposes SyncStateSet changes",
    ),
    HAMode.SLAVE_ACTING_MASTER: ModeSemantics(
        (IN_SYNC_REPLICAS, MIN_IN_SYNC_REPLICAS, AUTO_IN_SYNC_REPLICAS, HA_MAX_GAP_NOT_IN_SYNC),
        "slave-acting-master: a slave serves for a dead master; the ack count can "
        "degrade with the replicas in sync (autoDegrade)",
    ),
    HAMode.SYNC: ModeSemantics(
        (IN_SYNC_REPLICAS,),
        "classic SYNC_MASTER/SLAVE: a static ack count, no automatic failover",
    ),
    HAMode.ASYNC: ModeSemantics((), "classic ASYNC_MASTER/SLAVE: no replica acks, no automatic failover"),
}


def majority(replicas: int) -> int:
    return replicas // 2 + 1


def in_sync_replicas(spec: BrokerGroupSpec) -> int:
    """inSyncReplicas after defaults: the spec's value, else a majority of replicas."""
    q = spec.quorum
    return q.in_sync_replicas if q.in_sync_replicas is not None else majority(spec.replicas)


def min_in_sync_replicas(spec: BrokerGroupSpec) -> int:
    """minInSyncReplicas after defaults: the spec's value, else inSyncReplicas."""
    q = spec.quorum
    return q.min_in_sync_replicas if q.min_in_sync_replicas is not None else in_sync_replicas(spec)


# The same defaults in CEL, on the spec as the API server sees it (`self` is the spec).
CEL_IN_SYNC_REPLICAS = "(has(self.quorum.inSyncReplicas) ? self.quorum.inSyncReplicas : self.replicas / 2 + 1)"
CEL_MIN_IN_SYNC_REPLICAS = (
    f"(has(self.quorum.minInSyncReplicas) ? self.quorum.minInSyncReplicas : {CEL_IN_SYNC_REPLICAS})"
)


def waits_for_in_sync_replicas(spec: BrokerGroupSpec) -> bool:
    """Does a put wait for inSyncReplicas acks (controller mode with allAckInSyncStateSet counts members instead)."""
    mode = MODES[HAMode(spec.ha_mode)]
    return mode.reads(IN_SYNC_REPLICAS) and not (
        mode.reads(ALL_ACK_IN_SYNC_STATE_SET) and bool(spec.quorum.all_ack_in_sync_state_set)
    )

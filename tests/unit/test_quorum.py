"""Quorum semantics per HA mode, pinned against rocketmq-facts.md §2.2 (CommitLog, GroupTransferService)."""

from __future__ import annotations

import pytest

from rocketmq_operator.api.models import HAMode
from rocketmq_operator.core.quorum import PutOutcome, QuorumParams, calc_need_ack_nums, explain_table, predict_put

OK, TIMEOUT, REFUSED = (
    PutOutcome.PUT_OK,
    PutOutcome.FLUSH_SLAVE_TIMEOUT,
    PutOutcome.IN_SYNC_REPLICAS_NOT_ENOUGH,
)


def params(
    mode: HAMode, total: int, in_sync: int, min_in_sync: int = 1, auto: bool = False, all_ack: bool = False
) -> QuorumParams:
    return QuorumParams(mode, total, in_sync, min_in_sync, auto, all_ack, 256 * 1024 * 1024)


# (mode params, alive, in_sync, in_sync_alive, expected need, outcome, stored)
TABLE = [
    # async: never waits
    (params(HAMode.ASYNC, 3, 2), 1, 1, None, 1, OK, True),
    # plain sync: static count from any connection; missing acks → FLUSH_SLAVE_TIMEOUT, stored
    (params(HAMode.SYNC, 2, 2), 2, 2, None, 2, OK, True),
    (params(HAMode.SYNC, 2, 2), 1, 1, None, 2, TIMEOUT, True),
    (params(HAMode.SYNC, 3, 1), 1, 1, None, 1, OK, True),  # inSyncReplicas=1 trap: asynchronous
    (params(HAMode.SYNC, 3, 3), 2, 2, None, 3, TIMEOUT, True),
    # slave-acting-master without degrade: need > inSync → refused, not stored
    (params(HAMode.SLAVE_ACTING_MASTER, 2, 2, 1), 1, 1, None, 2, REFUSED, False),
    (params(HAMode.SLAVE_ACTING_MASTER, 2, 2, 1), 2, 1, None, 2, REFUSED, False),  # slave lags > gap
    (params(HAMode.SLAVE_ACTING_MASTER, 2, 2, 1), 2, 2, None, 2, OK, True),
    # with auto-degrade: clamp to [min, inSyncReplicas] by the replicas in sync
    (params(HAMode.SLAVE_ACTING_MASTER, 2, 2, 1, auto=True), 1, 1, None, 1, OK, True),
    (params(HAMode.SLAVE_ACTING_MASTER, 3, 3, 2, auto=True), 2, 2, None, 2, OK, True),
    (params(HAMode.SLAVE_ACTING_MASTER, 3, 3, 2, auto=True), 1, 1, None, 2, REFUSED, False),
    # inSync is min(alive, in sync within the gap)
    (params(HAMode.SLAVE_ACTING_MASTER, 3, 3, 1, auto=True), 2, 3, None, 2, OK, True),
    # controller: SyncStateSet below minInSyncReplicas → refused, not stored
    (params(HAMode.CONTROLLER, 3, 2, 2), 1, 1, None, 2, REFUSED, False),
    (params(HAMode.CONTROLLER, 3, 2, 2), 3, 1, None, 2, REFUSED, False),
    (params(HAMode.CONTROLLER, 3, 2, 2), 2, 2, None, 2, OK, True),
    # controller, static count over any connection: a slave outside the set still acks
    (params(HAMode.CONTROLLER, 3, 2, 1), 2, 1, None, 2, OK, True),
    (params(HAMode.CONTROLLER, 3, 2, 1), 1, 1, None, 2, TIMEOUT, True),
    # controller, autoDegrade is ignored (no calcNeedAckNums)
    (params(HAMode.CONTROLLER, 3, 3, 1, auto=True), 2, 2, None, 3, TIMEOUT, True),
    # controller allAck: every member of the set; a set of 1 is immediate
    (params(HAMode.CONTROLLER, 3, 2, 1, all_ack=True), 3, 3, None, 3, OK, True),
    (params(HAMode.CONTROLLER, 3, 2, 1, all_ack=True), 1, 1, None, 1, OK, True),
    (
        params(HAMode.CONTROLLER, 3, 2, 1, all_ack=True),
        2,
        3,
        2,
        3,
        TIMEOUT,
        True,
    ),  # dead member not yet removed
    (params(HAMode.CONTROLLER, 3, 2, 2, all_ack=True), 1, 1, None, 1, REFUSED, False),  # floor still applies
]


@pytest.mark.parametrize(("p", "alive", "in_sync", "in_sync_alive", "need", "outcome", "stored"), TABLE)
def test_predict_put(
    p: QuorumParams,
    alive: int,
    in_sync: int,
    in_sync_alive: int | None,
    need: int,
    outcome: PutOutcome,
    stored: bool,
) -> None:
    prediction = predict_put(p, alive, in_sync, in_sync_alive)
    assert (prediction.need_acks, prediction.outcome, prediction.stored) == (need, outcome, stored)


def test_calc_need_ack_nums_clamp() -> None:
    p = params(HAMode.SLAVE_ACTING_MASTER, 5, 4, 2, auto=True)
    assert [calc_need_ack_nums(p, n) for n in (5, 4, 3, 2, 1)] == [4, 4, 3, 2, 2]
    static = params(HAMode.SLAVE_ACTING_MASTER, 5, 4, 2)
    assert {calc_need_ack_nums(static, n) for n in (5, 1)} == {4}


def test_no_master() -> None:
    assert predict_put(params(HAMode.CONTROLLER, 3, 2), 2, 2, master_alive=False).outcome is PutOutcome.NO_MASTER


def test_explain_table_shapes() -> None:
    assert len(explain_table(params(HAMode.CONTROLLER, 3, 2, 2))) == 6
    assert len(explain_table(params(HAMode.SYNC, 3, 2))) == 3


# A hung slave: alive to the name server and in sync until the master notices, but no ack arrives.
# (mode params, alive, in_sync, in_sync_alive, acking, outcome)
HUNG_SLAVE = [
    (params(HAMode.SYNC, 3, 3), 3, 3, None, 2, TIMEOUT),  # all-sync waits for the hung one
    (params(HAMode.SYNC, 3, 2), 3, 3, None, 2, OK),  # quorum: the other slave's ack is enough
    (params(HAMode.SYNC, 5, 3), 5, 5, None, 4, OK),
    (params(HAMode.ASYNC, 3, 1), 3, 3, None, 1, OK),
    # slave-acting-master, degrade on: still counted in sync (gap not yet open) → needs 3, 2 ack
    (params(HAMode.SLAVE_ACTING_MASTER, 3, 3, 2, auto=True), 3, 3, None, 2, TIMEOUT),
    # ... and once it is beyond haMaxGapNotInSync the need degrades to 2
    (params(HAMode.SLAVE_ACTING_MASTER, 3, 3, 2, auto=True), 3, 2, None, 2, OK),
    # controller allAck: a member that does not ack times the put out until the master drops it
    (params(HAMode.CONTROLLER, 3, 2, 2, all_ack=True), 3, 3, 2, 2, TIMEOUT),
    (params(HAMode.CONTROLLER, 3, 2, 2, all_ack=True), 3, 2, None, 2, OK),
    # controller, static inSyncReplicas=2 from any connection
    (params(HAMode.CONTROLLER, 3, 2, 2), 3, 3, 2, 2, OK),
    # acking never exceeds alive
    (params(HAMode.SYNC, 3, 3), 2, 2, None, 3, TIMEOUT),
]


@pytest.mark.parametrize("p, alive, in_sync, in_sync_alive, acking, outcome", HUNG_SLAVE)
def test_a_slave_that_sends_no_ack(
    p: QuorumParams, alive: int, in_sync: int, in_sync_alive: int | None, acking: int, outcome: PutOutcome
) -> None:
    assert predict_put(p, alive, in_sync, in_sync_alive, acking=acking).outcome is outcome

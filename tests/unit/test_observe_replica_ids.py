"""`control.observe.replica_ids`: the broker id the operator gives each replica address when the controller's
replica table lists one address under two ids (a broker's id application timed out and it applied again)."""

from __future__ import annotations

import pytest

from rocketmq_operator.control.observe import replica_ids
from rocketmq_operator.remoting.controller import ReplicaIdentity, SyncStateInfo

A, B, C = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"


def _sync(in_sync: list[tuple[int, str, bool]], not_in_sync: list[tuple[int, str, bool]]) -> SyncStateInfo:
    def idents(rows: list[tuple[int, str, bool]]) -> tuple[ReplicaIdentity, ...]:
        return tuple(ReplicaIdentity("broker-a", i, addr, alive) for i, addr, alive in rows)

    return SyncStateInfo("broker-a", 1, A, 1, 3, idents(in_sync), idents(not_in_sync))


@pytest.mark.parametrize(
    ("in_sync", "not_in_sync", "expected"),
    [
        # one id per address: as listed
        ([(1, A, True), (2, B, True)], [(3, C, True)], {A: (1, True), B: (2, True), C: (3, True)}),
        # seen on Kubernetes (2026-12-02): C applied twice, got 3 then 4; 4 is in the SyncStateSet, 3 is left over
        ([(1, A, True), (2, B, True), (4, C, True)], [(3, C, False)], {A: (1, True), B: (2, True), C: (4, True)}),
        # the same, the left-over id listed alive too: the SyncStateSet still decides
        ([(1, A, True), (4, C, True)], [(3, C, True)], {A: (1, True), C: (4, True)}),
        # neither in sync: the alive one
        ([(1, A, True)], [(3, C, True), (4, C, False)], {A: (1, True), C: (3, True)}),
        # neither in sync nor alive: the latest id
        ([(1, A, True)], [(3, C, False), (4, C, False)], {A: (1, True), C: (4, False)}),
    ],
)
def test_one_id_per_address(
    in_sync: list[tuple[int, str, bool]],
    not_in_sync: list[tuple[int, str, bool]],
    expected: dict[str, tuple[int, bool]],
) -> None:
    assert replica_ids(_sync(in_sync, not_in_sync)) == expected


def test_no_controller_answer_gives_no_ids() -> None:
    assert replica_ids(None) == {}

"""Elections beyond the expected ones (`extra_elections` of `bench failover` and `bench switchover`), counted
from plain (time, master, epoch) samples."""

from __future__ import annotations

from rocketmq_operator.bench.elections import Sample, Window, elections_in, epochs_seen, extra_elections

# A failover trial: fault at 10, election at ~12, recovery at 13; the next fault at 30, recovery at 33; end at 50.
CLEAN = [
    Sample(9.0, 0, 1),
    Sample(11.0, 0, 1),
    Sample(12.5, 1, 2),
    Sample(13.0, 1, 2),
    Sample(20.0, 1, 2),
    Sample(29.0, 1, 2),
    Sample(32.0, 2, 3),
    Sample(33.0, 2, 3),
    Sample(50.0, 2, 3),
]
QUIET = [Window(13.0, 30.0, expected=0), Window(33.0, 50.0, expected=0)]


def test_one_election_per_fault_is_no_extra() -> None:
    assert extra_elections(CLEAN, QUIET) == [0, 0]


def test_a_master_change_after_the_recovery_is_extra() -> None:
    # The killed broker came back and took the master role again before the next fault.
    samples = [
        *CLEAN[:4],
        Sample(20.0, 0, 3),
        Sample(29.0, 0, 3),
        Sample(32.0, 2, 4),
        Sample(33.0, 2, 4),
        Sample(50.0, 2, 4),
    ]
    assert extra_elections(samples, QUIET) == [1, 0]


def test_a_read_answered_after_the_next_fault_belongs_to_no_window() -> None:
    # Seen under load (2026-11-29): a read sent at 29.9, before the next fault at 30, answered at 30.4 after that
    # fault's own election. Dated by its send time it made the next trial's election an extra one of this trial.
    samples = [*CLEAN[:6], Sample(29.9, 2, 3, 30.4), *CLEAN[6:]]
    assert extra_elections(samples, QUIET) == [0, 0]
    assert epochs_seen(samples, 13.0, 30.0) == [[2, 1]]
    # A read wholly inside the window still counts: the same election seen before the fault is extra.
    assert extra_elections([*CLEAN[:6], Sample(29.5, 2, 3, 29.8), *CLEAN[6:]], QUIET) == [1, 0]


def test_bumps_a_poll_missed_still_count() -> None:
    # Two elections between two samples, in the settle time after the last trial: the epoch rose by 2.
    samples = [*CLEAN[:-1], Sample(50.0, 2, 5)]
    assert extra_elections(samples, QUIET) == [0, 2]


def test_a_lagging_read_does_not_count_twice() -> None:
    samples = [Sample(1.0, 0, 4), Sample(2.0, 0, 3), Sample(3.0, 0, 4), Sample(4.0, 1, 5)]
    assert elections_in(samples, 0.0, 5.0) == 1


def test_unknown_epochs_fall_back_to_master_changes() -> None:
    samples = [Sample(1.0, 0, None), Sample(2.0, None, None), Sample(3.0, 1, None), Sample(4.0, 1, None)]
    assert elections_in(samples, 0.0, 5.0) == 1


def test_samples_outside_the_windows_are_not_counted() -> None:
    # Before the first fault (the cluster's first election) and inside a fault's own window.
    samples = [Sample(0.5, None, 0), Sample(1.0, 0, 1), *CLEAN]
    assert extra_elections(samples, QUIET) == [0, 0]


def test_switchover_windows_expect_one_election_each() -> None:
    samples = [Sample(1.0, 0, 1), Sample(2.0, 1, 2), Sample(5.0, 1, 2), Sample(6.0, 2, 3), Sample(7.0, 0, 4)]
    windows = [Window(1.0, 5.0, expected=1), Window(5.0, 9.0, expected=1)]
    assert extra_elections(samples, windows) == [0, 1]
    # A switchover that elected no one is not a negative extra.
    assert extra_elections([Sample(1.0, 0, 1), Sample(2.0, 0, 1)], [Window(0.0, 3.0, expected=1)]) == [0]


def test_epochs_seen_lists_each_change_once() -> None:
    assert epochs_seen(CLEAN, 10.0, 30.0) == [[1, 0], [2, 1]]
    assert epochs_seen(CLEAN, 60.0, 70.0) == []

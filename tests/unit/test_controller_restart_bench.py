"""`bench controller-restart`'s reading of the controllers' logs: pure functions on plain text (lines in the form
RocketMQ 5.5.0's controller writes them, times in GMT+8)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rocketmq_operator.bench.controller_restart import (
    everyone_heard,
    parse_controller_log,
    round_outcome,
    summary,
)

DELETED = datetime(2026, 12, 3, 20, 34, 29, 400000, tzinfo=timezone(timedelta(hours=8))).timestamp()


def _hb(t: str, broker: str, i: int) -> str:
    return (
        f"2026-12-03 {t} INFO ControllerRequestExecutorThread_10 - broker BrokerIdentityInfo{{clusterName="
        f"'DefaultCluster', brokerName='{broker}', brokerId={i}}} heart beat"
    )


LEADER = "\n".join(
    [
        _hb("20:34:20", "broker-cj", 2),  # before the deletion: not this round's
        _hb("20:34:45", "broker-cj", 1),  # refused (a follower still), but the JRaft leader's first heartbeat
        "2026-12-03 20:34:49 INFO JRaft-FSMCaller-Disruptor-0 - Elect new master 2 for broker broker-cj",  # replay
        "2026-12-03 20:34:54 INFO JRaft-FSMCaller-Disruptor-0 - Controller start leadership, term: 65.",
        _hb("20:34:55", "broker-cj", 1),
        "2026-12-03 20:35:00 INFO JRaft-FSMCaller-Disruptor-0 - Elect new master 1 for broker broker-cj",
        _hb("20:35:02", "broker-cj", 2),
    ]
)
FOLLOWER = "2026-12-03 20:34:20 INFO JRaft-FSMCaller-Disruptor-0 - Controller start leadership, term: 64.\n"


def test_the_log_lines_are_read_with_their_gmt8_times() -> None:
    log = parse_controller_log(LEADER)
    assert log.leaderships == [(DELETED + 24.6, 65)]
    assert [(round(t - DELETED, 1), n, i) for t, n, i in log.heartbeats] == [
        (-9.4, "broker-cj", 2),
        (15.6, "broker-cj", 1),
        (25.6, "broker-cj", 1),
        (32.6, "broker-cj", 2),
    ]
    assert [(n, i) for _, n, i in log.elections] == [("broker-cj", 2), ("broker-cj", 1)]


def test_fault_173_as_a_round_the_late_master_and_its_deposition() -> None:
    logs = {"chaos-jraft-2": parse_controller_log(LEADER), "chaos-jraft-0": parse_controller_log(FOLLOWER)}
    out = round_outcome(logs, DELETED, [("broker-cj", 1), ("broker-cj", 2), ("broker-cj", 3)])
    assert out["leader"] == "chaos-jraft-2" and out["leader_s"] == 24.6  # term 64 started before the deletion
    assert out["heard_s"] == {"broker-cj": {"1": 15.6, "2": 32.6, "3": None}}
    assert out["spread_s"] == {"broker-cj": {"1": 0.0, "2": 17.0, "3": None}}
    assert out["elections"] == {"broker-cj": 1}  # the replayed election came before the leadership
    assert not everyone_heard(out)


def test_no_leadership_since_the_deletion_is_no_outcome() -> None:
    out = round_outcome({"chaos-jraft-0": parse_controller_log(FOLLOWER)}, DELETED, [("broker-cj", 1)])
    assert out["leader"] is None and not everyone_heard(out)


def test_the_summary_counts_late_brokers_and_the_larger_election_count() -> None:
    late = {
        "outcome": {"spread_s": {"a": {"1": 0.0, "2": 12.0}, "b": {"1": 0.0, "2": 1.0}}, "elections": {"a": 1}},
        "epoch_rise": {"a": 1, "b": 1},  # the status saw one election of b the log did not show
    }
    quiet = {"outcome": {"spread_s": {"a": {"1": 0.0, "2": None}, "b": {"1": 2.0}}, "elections": {}}, "epoch_rise": {}}
    assert summary([late, quiet]) == {
        "a": {
            "rounds": 2,
            "spread_s_median": 0.0,
            "spread_s_max": 12.0,
            "heard_10s_or_more_late": 1,
            "never_heard": 1,
            "elections": 1,
        },
        "b": {
            "rounds": 2,
            "spread_s_median": 1.0,
            "spread_s_max": 2.0,
            "heard_10s_or_more_late": 0,
            "never_heard": 0,
            "elections": 1,
        },
    }

"""`bench controller-restart`'s reading of the controllers' logs: pure functions on plain text (lines in the form
RocketMQ 5.5.0's controller writes them, times in GMT+8)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rocketmq_operator.bench.controller_restart import parse_controller_log, round_outcome, settled, summary

DELETED = datetime(2026, 12, 3, 20, 34, 29, 400000, tzinfo=timezone(timedelta(hours=8))).timestamp()


def _hb(t: str, broker: str, i: int) -> str:
    return (
        f"2026-12-03 {t} INFO ControllerRequestExecutorThread_10 - broker BrokerIdentityInfo{{clusterName="
        f"'DefaultCluster', brokerName='{broker}', brokerId={i}}} heart beat"
    )


STARTED = "INFO main - Controller <chaos-jraft/chaos-jraft-2.chaos-jraft-headless.chaos.svc:9880> started."
LEADER = "\n".join(
    [
        f"2026-12-03 20:30:00 {STARTED}",  # the deleted pod's process (the log is on the pod's volume)
        "2026-12-03 20:30:10 INFO JRaft-FSMCaller-Disruptor-0 - Controller start leadership, term: 64.",
        _hb("20:34:29", "broker-cj", 2),  # the deleted process, in the second of the deletion
        f"2026-12-03 20:34:41 {STARTED}",
        _hb("20:34:45", "broker-cj", 1),  # refused (a follower still), but the JRaft leader's first heartbeat
        "2026-12-03 20:34:50 INFO RaftBrokerHeartbeatManager_scheduledService_1 - has not received any heartbeat "
        "from broker, skip scan not active broker",
        "2026-12-03 20:34:54 INFO JRaft-FSMCaller-Disruptor-0 - Controller start leadership, term: 65.",
        _hb("20:34:55", "broker-cj", 1),
        "2026-12-03 20:35:00 INFO RaftBrokerHeartbeatManager_scheduledService_1 - start scan not active broker",
        _hb("20:35:02", "broker-cj", 2),
    ]
)
FOLLOWER = "\n".join(
    [
        f"2026-12-03 20:34:40 {STARTED}",
        "2026-12-03 20:34:42 INFO JRaft-FSMCaller-Disruptor-0 - Controller start leadership, term: 63.",  # stale term
    ]
)


def test_the_log_lines_are_read_with_their_gmt8_times() -> None:
    log = parse_controller_log(LEADER)
    assert [round(t - DELETED, 1) for t in log.starts] == [-269.4, 11.6]
    assert [(round(t - DELETED, 1), term) for t, term in log.leaderships] == [(-259.4, 64), (24.6, 65)]
    assert [round(t - DELETED, 1) for t in log.scans] == [30.6]  # "skip scan" is not a scan
    assert [(round(t - DELETED, 1), n, i) for t, n, i in log.heartbeats] == [
        (-0.4, "broker-cj", 2),
        (15.6, "broker-cj", 1),
        (25.6, "broker-cj", 1),
        (32.6, "broker-cj", 2),
    ]


def test_fault_173_as_a_round_the_master_heard_after_the_scan() -> None:
    logs = {"chaos-jraft-2": parse_controller_log(LEADER), "chaos-jraft-0": parse_controller_log(FOLLOWER)}
    out = round_outcome(logs, DELETED, [("broker-cj", 1), ("broker-cj", 2), ("broker-cj", 3)])
    # The highest term since the deletion; the old process's lines (its heartbeat at the deletion) do not count.
    assert (out["leader"], out["leader_s"], out["first_scan_s"]) == ("chaos-jraft-2", 24.6, 30.6)
    assert out["heard_s"] == {"broker-cj": {"1": 15.6, "2": 32.6, "3": None}}
    assert out["spread_s"] == {"broker-cj": {"1": 0.0, "2": 17.0, "3": None}}
    assert not settled(out)  # broker 3 not heard yet
    assert settled(round_outcome(logs, DELETED, [("broker-cj", 1), ("broker-cj", 2)]))


def test_no_process_or_no_leadership_since_the_deletion_is_no_outcome() -> None:
    old = "2026-12-03 20:30:00 " + STARTED + "\n2026-12-03 20:30:10 INFO x - Controller start leadership, term: 64."
    for text in (old, FOLLOWER.split("\n")[0]):
        out = round_outcome({"chaos-jraft-0": parse_controller_log(text)}, DELETED, [("broker-cj", 1)])
        assert out["leader"] is None and out["heard_s"] == {"broker-cj": {"1": None}} and not settled(out)


def test_the_summary_counts_late_and_unheard_brokers_and_the_epochs_rise() -> None:
    late = {"outcome": {"spread_s": {"a": {"1": 0.0, "2": 12.0}, "b": {"1": 0.0, "2": 1.0}}}, "epoch_rise": {"a": 1}}
    quiet = {"outcome": {"spread_s": {"a": {"1": 0.0, "2": None}, "b": {"1": 2.0}}}, "epoch_rise": {"a": 0, "b": 0}}
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
            "elections": 0,
        },
    }

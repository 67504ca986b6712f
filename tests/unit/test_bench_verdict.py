"""Why `bench failover`, `switchover` and `upgrade` failed: one stderr line per failed check with its figures
(`bench.verdict`, from the JSON result alone), the exit code from the same reasons; `--load` validated. No bench
runs: the results are plain data, and the CLI tests stand a coroutine in for the bench."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.bench import verdict
from rocketmq_operator.cli import bench as bench_cli
from rocketmq_operator.cli.main import main


def passed(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "acknowledged": 1000,
        "lost": 0,
        "deposed_acks": 0,
        "stale_route_acks": 0,
        "stale_route_acks_after_election": 0,
        "extra_elections": 0,
        "per_trial": [{"extra_elections": 0}, {"extra_elections": 0}],
        "per_switchover": [{"extra_elections": 0}, {"extra_elections": 0}],
        "phase": "Complete",
        "rollout_message": None,
        "to_version": "5.3.2",
    }
    return doc | changes


def test_a_passing_result_has_no_reason() -> None:
    assert verdict.failover_failures(passed()) == []
    assert verdict.switchover_failures(passed()) == []
    assert verdict.upgrade_failures(passed()) == []


def test_switchover_deposed_ack_with_the_stale_route_figure() -> None:
    doc = passed(deposed_acks=1, stale_route_acks_after_election=1)
    assert verdict.switchover_failures(doc) == [
        "1 acknowledgement by a deposed master (deposed_acks=1); "
        "1 acknowledgement through a stale route after the election"
    ]


def test_one_reason_per_failed_check() -> None:
    doc = passed(
        lost=3,
        deposed_acks=2,
        extra_elections=2,
        per_trial=[{"extra_elections": 0}, {"extra_elections": 2}],
    )
    assert verdict.failover_failures(doc) == [
        "3 acknowledged messages not read back afterwards (lost=3 of acknowledged=1000)",
        "2 acknowledgements by a deposed master (deposed_acks=2)",
        "2 elections beyond one per trial (extra_elections=2) in trial 2 (2)",
    ]


def test_no_master_at_the_end_is_an_unchecked_deposed_count() -> None:
    assert verdict.failover_failures(passed(deposed_acks=-1)) == [
        "acknowledgements by a deposed master not checked: no master at the end (deposed_acks=-1)"
    ]


def test_switchover_extra_elections_name_the_switchovers() -> None:
    doc = passed(extra_elections=1, per_switchover=[{"extra_elections": 1}, {"extra_elections": 0}])
    assert verdict.switchover_failures(doc) == [
        "1 election beyond one per switchover (extra_elections=1) in switchover 1 (1)"
    ]


def test_a_failed_switchover_is_a_reason_with_its_message() -> None:
    doc = passed(
        switchovers=3,
        per_switchover=[
            {"extra_elections": 0, "refused": None},
            {"extra_elections": 0, "refused": "switchover to broker 2 failed: no controller leader"},
            {"extra_elections": 0, "refused": "switchover to broker 1 failed: timed out"},
        ],
    )
    assert verdict.switchover_failures(doc) == [
        "2 of 3 switchovers failed; the first: switchover to broker 2 failed: no controller leader"
    ]


def test_upgrade_roll_not_complete_and_lost() -> None:
    doc = passed(lost=1, phase="Blocked", rollout_message="replica b-1 is not ready")
    assert verdict.upgrade_failures(doc) == [
        "1 acknowledged message not read back afterwards (lost=1 of acknowledged=1000)",
        "the roll to 5.3.2 did not complete (phase=Blocked: replica b-1 is not ready)",
    ]
    assert verdict.upgrade_failures(passed(phase=None)) == ["the roll to 5.3.2 did not complete (phase=None)"]


def stand_in(monkeypatch: pytest.MonkeyPatch, module: str, doc: dict[str, Any]) -> None:
    import importlib

    async def run_bench(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return dict(doc)

    monkeypatch.setattr(importlib.import_module(f"rocketmq_operator.bench.{module}"), "run_bench", run_bench)
    monkeypatch.setattr(bench_cli, "stderr_terminal", lambda: None)


def test_cli_switchover_says_why_it_failed_and_keeps_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in(monkeypatch, "switchover", passed(deposed_acks=1, stale_route_acks_after_election=1))
    code = main(["bench", "switchover", "-f", "x.yaml", "--state-dir", str(tmp_path), "--json"])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        "bench switchover: FAILED: 1 acknowledgement by a deposed master (deposed_acks=1); "
        "1 acknowledgement through a stale route after the election"
    ]
    doc = json.loads(out)
    assert doc["deposed_acks"] == 1
    assert doc["load_processes"] == 0


def test_cli_failover_extra_elections_fail_the_bench(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = passed(extra_elections=1, per_trial=[{"extra_elections": 0}, {"extra_elections": 1}])
    stand_in(monkeypatch, "failover", doc)
    code = main(["bench", "failover", "-f", "x.yaml", "--state-dir", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert err.splitlines() == [
        "bench failover: FAILED: 1 election beyond one per trial (extra_elections=1) in trial 2 (1)"
    ]
    assert json.loads(out)["extra_elections"] == 1


def test_cli_upgrade_passing_is_silent_on_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in(monkeypatch, "upgrade", passed())
    assert main(["bench", "upgrade", "-f", "x.yaml", "--state-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out)["load_processes"] == 0


@pytest.mark.parametrize("bench", ["failover", "switchover", "upgrade"])
def test_cli_negative_load_is_a_one_line_usage_error(
    bench: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in(monkeypatch, bench, passed())
    assert main(["bench", bench, "-f", "x.yaml", "--state-dir", str(tmp_path), "--load", "-1"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "error: --load -1: the number of busy processes must be 0 or more; fix: e.g. --load 2\n"


@pytest.mark.parametrize("fault", ["kill", "stop"])
def test_cli_proxy_failover_passes_the_fault_and_fails_on_a_lost_key(
    fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rocketmq_operator.bench import proxy

    asked: list[str] = []

    async def run_proxy_failover(*args: Any) -> dict[str, Any]:
        asked.append(args[-1])
        return passed(lost=1, lost_keys=["k-1"], fault=args[-1])

    monkeypatch.setattr(proxy, "run_proxy_failover", run_proxy_failover)
    monkeypatch.setattr(bench_cli, "stderr_terminal", lambda: None)
    code = main(["bench", "proxy-failover", "-f", "x.yaml", "--state-dir", str(tmp_path), "--fault", fault])
    out, err = capsys.readouterr()
    assert asked == [fault]
    assert code == 1 and "bench proxy-failover: FAILED" in err and len(err.splitlines()) == 1, err
    assert json.loads(out)["fault"] == fault


def test_cli_proxy_failover_refuses_an_unknown_fault_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "proxy-failover", "-f", "x.yaml", "--state-dir", str(tmp_path), "--fault", "pause"])
    assert exc.value.code == 2
    assert "--fault: invalid choice: 'pause'" in capsys.readouterr().err

"""`rocketmq-operator bench …` / `chaos` on a terminal and on Ctrl-C (cli.bench): a spinner with the elapsed time
and the bench's phase on stderr's terminal, nothing more elsewhere; Ctrl-C says whether the bench took its
cluster down, or what is left running and how to stop it. No bench runs: the coroutines are stand-ins."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from rocketmq_operator.bench import phase
from rocketmq_operator.cli import bench as bench_cli


async def phases_then(result: Any = None, interrupt: bool = False) -> Any:
    phase.announce(phase.cli_phase(("local", "up", "--wait")))
    await asyncio.sleep(0.3)  # long enough for a refresh of the spinner
    phase.announce("waiting for the group's health")
    await asyncio.sleep(0.3)
    if interrupt:
        raise KeyboardInterrupt
    return result


def test_spinner_shows_the_elapsed_time_and_the_phase_on_a_terminal(tmp_path: Path) -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200)
    assert bench_cli.run_live("bench failover", tmp_path, False, phases_then(7), console) == 7
    text = screen.getvalue()
    assert "bench failover: starting the local cluster (local up)" in text
    assert "bench failover: waiting for the group's health" in text
    assert "s] bench failover:" in text  # the elapsed time in front


def test_no_terminal_no_spinner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_cli.run_live("bench routes", tmp_path, False, phases_then(3), None) == 3
    assert capsys.readouterr() == ("", "")


def test_ctrl_c_after_the_teardown_says_the_cluster_was_taken_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench_cli, "our_pids", lambda layout: [])
    with pytest.raises(bench_cli.Interrupted) as caught:
        bench_cli.run_live("bench failover", tmp_path, False, phases_then(interrupt=True), None)
    assert caught.value.message == f"interrupted: the bench took its local cluster down; nothing runs from {tmp_path}"


def test_ctrl_c_during_the_teardown_says_what_is_left_and_how_to_stop_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench_cli, "our_pids", lambda layout: [1, 2, 3])
    monkeypatch.setattr(bench_cli, "stderr_terminal", lambda: None)

    async def run_bench(*args: Any, **kwargs: Any) -> Any:
        return await phases_then(interrupt=True)

    import rocketmq_operator.bench.switchover as switchover

    monkeypatch.setattr(switchover, "run_bench", run_bench)
    args = argparse.Namespace(files=["x.yaml"], state_dir=str(tmp_path), switchovers=1, rate=1.0, keep=False,
                              json=False, load=0)  # fmt: skip
    assert bench_cli.cmd_switchover(args) == 130
    assert capsys.readouterr().err.strip() == (
        f"interrupted: still running (the teardown was interrupted): 3 processes from {tmp_path}; "
        f"stop them: rocketmq-operator local down --state-dir {tmp_path}"
    )


def test_chaos_ctrl_c_with_keep_names_what_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench_cli, "our_pids", lambda layout: [1, 2])
    monkeypatch.setattr(bench_cli, "stderr_terminal", lambda: None)

    async def run_chaos(*args: Any, **kwargs: Any) -> Any:
        return await phases_then(interrupt=True)

    import rocketmq_operator.bench.chaos as chaos

    monkeypatch.setattr(chaos, "run_chaos", run_chaos)
    args = argparse.Namespace(files=["x.yaml"], state_dir=str(tmp_path), families="kill", plot=None, faults=1,
                              platform="local", seed=1, hold=1.0, recover=1.0, rate=1.0, keep=True,
                              json=False, spare_operator=False, journal=None)  # fmt: skip
    assert bench_cli.cmd_chaos(args) == 130
    journal = tmp_path.parent / "chaos-1.journal.jsonl"  # the plot's name (chaos-SEED.svg next to the state dir)
    assert capsys.readouterr().err.strip() == (
        f"interrupted: every fault was healed; the faults so far are in {journal}; "
        f"still running (--keep): 2 processes from {tmp_path}; "
        f"stop them: rocketmq-operator local down --state-dir {tmp_path}"
    )


def test_sigterm_cancels_the_bench_which_cleans_up_then_says_what_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bench_cli, "our_pids", lambda layout: [])
    cleaned: list[str] = []

    async def bench() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # as a CI timeout or `kill PID` sends it
            await asyncio.sleep(30)
        finally:
            cleaned.append("healed and taken down")

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(bench_cli.Interrupted) as caught:
        bench_cli.run_live("chaos", tmp_path, False, bench(), None)
    assert cleaned == ["healed and taken down"]
    assert caught.value.message.startswith("interrupted: the bench took its local cluster down")
    assert signal.getsignal(signal.SIGTERM) is before

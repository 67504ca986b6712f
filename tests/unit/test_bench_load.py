"""`--load N` (`bench.load.CpuLoad`): N busy processes while the block runs, all gone afterwards whatever ended
it; what the JSON records. No timing is asserted."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.bench.load import CpuLoad
from rocketmq_operator.cli import bench as bench_cli
from rocketmq_operator.cli.main import main


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_starts_n_busy_processes_and_stops_them() -> None:
    with CpuLoad(2) as load:
        pids = [p.pid for p in load.processes]
        assert len(pids) == 2
        assert all(p.poll() is None for p in load.processes)
    assert all(p.returncode is not None for p in load.processes)
    assert all(gone(pid) for pid in pids)
    record = load.record()
    assert record["load_processes"] == 2
    assert set(record) == {"load_processes", "load_avg_1m_start", "load_avg_1m_end"}
    assert isinstance(record["load_avg_1m_start"], float)
    assert isinstance(record["load_avg_1m_end"], float)


@pytest.mark.parametrize("raised", [RuntimeError("the bench failed"), KeyboardInterrupt()])
def test_an_error_or_ctrl_c_stops_them_too(raised: BaseException) -> None:
    load = CpuLoad(1)
    with pytest.raises(type(raised)), load:
        raise raised
    assert [p.returncode is not None for p in load.processes] == [True]
    assert gone(load.processes[0].pid)


def test_no_load_starts_nothing() -> None:
    with CpuLoad(0) as load:
        assert load.processes == []
    assert load.record()["load_processes"] == 0


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="processes must be >= 0, got -1"):
        CpuLoad(-1)


def test_ctrl_c_of_a_bench_stops_its_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started: list[CpuLoad] = []

    class Recorded(CpuLoad):
        def __enter__(self) -> CpuLoad:
            started.append(self)
            return super().__enter__()

    async def run_bench(*args: Any, **kwargs: Any) -> Any:
        assert [p.poll() for p in started[0].processes] == [None]  # running while the bench runs
        raise KeyboardInterrupt

    import rocketmq_operator.bench.failover as failover

    monkeypatch.setattr(failover, "run_bench", run_bench)
    monkeypatch.setattr(bench_cli, "CpuLoad", Recorded)
    monkeypatch.setattr(bench_cli, "stderr_terminal", lambda: None)
    monkeypatch.setattr(bench_cli, "our_pids", lambda layout: [])
    assert main(["bench", "failover", "-f", "x.yaml", "--state-dir", str(tmp_path), "--load", "1"]) == 130
    assert capsys.readouterr().err.startswith("interrupted: the bench took its local cluster down")
    assert len(started) == 1 and len(started[0].processes) == 1
    assert gone(started[0].processes[0].pid)

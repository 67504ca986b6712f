"""`bench spark --keep`: the spelling of every other command (`--keep-up`, the old one, is a hidden alias)."""

from __future__ import annotations

import argparse
import subprocess
from typing import Any

import pytest

from rocketmq_operator.cli import bench_spark
from rocketmq_operator.cli.main import build_parser
from rocketmq_operator.spark import bench as spark_bench


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Run `bench spark ARGV` on a cluster "brought up here"; the `local` commands it ran."""
    local: list[tuple[str, ...]] = []

    def fake_local(args: argparse.Namespace, *command: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        local.append(command)
        return subprocess.CompletedProcess(["local", *command], 0, "", "")

    monkeypatch.setattr(bench_spark, "_ensure_group", lambda args: ("127.0.0.1:9876", True))
    monkeypatch.setattr(bench_spark, "_local", fake_local)
    monkeypatch.setattr(spark_bench, "run_bench", lambda *a, **k: {"count_ok": True})
    args = build_parser().parse_args(["bench", "spark", "-f", "quickstart.yaml", "--json", *argv])
    assert args.func(args) == 0
    return local


@pytest.mark.parametrize("flag", ["--keep", "--keep-up"])
def test_keep_leaves_the_cluster_running(flag: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run([flag], monkeypatch) == []


def test_without_keep_the_cluster_brought_up_is_brought_down(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run([], monkeypatch) == [("down",)]


def test_help_shows_keep_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "spark", "--help"])
    out: Any = capsys.readouterr().out
    assert "--keep " in out and "--keep-up" not in out

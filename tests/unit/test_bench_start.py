"""`bench start`'s pure parts: which role a process is, one /proc stat line, the summary and its ratio, and the
CLI's refusal of a malformed --compare."""

from __future__ import annotations

import pytest

from rocketmq_operator.bench.start import _ticks, role_of, summarize
from rocketmq_operator.cli.bench import _key_values


@pytest.mark.parametrize(
    ("argv", "role"),
    [
        (["java", "-cp", "lib/*", "org.apache.rocketmq.broker.BrokerStartup", "-c", "b.conf"], "broker"),
        (["java", "org.apache.rocketmq.namesrv.NamesrvStartup"], "namesrv"),
        (["java", "org.apache.rocketmq.controller.ControllerStartup"], "controller"),
        (["java", "org.apache.rocketmq.proxy.ProxyStartup", "-pc", "p.json"], "proxy"),
        (["python", "-m", "rocketmq_operator.platforms.local.supervisor", "--state-dir", "s"], "supervisor"),
        (["java", "-Dx=BrokerStartup.conf", "Other"], "supervisor"),
    ],
)
def test_role_of_reads_the_main_class(argv: list[str], role: str) -> None:
    assert role_of(argv) == role


def test_ticks_of_a_thread_whose_name_has_spaces_and_parentheses() -> None:
    line = "4242 (C2 Compiler (x)) S 1 2 3 0 -1 4194368 0 0 0 0 150 25 0 0 20 0 1 0 100 0 0"
    assert _ticks(line) == ("C2 Compiler (x)", 175)


def _round(variant: str, broker: float, spin: float, ready: float) -> dict[str, object]:
    return {"variant": variant, "cpu_s": {"broker": broker}, "transaction_flush_cpu_s": spin, "ready_s": ready}


def test_summary_medians_and_the_ratio_of_compared_over_rendered() -> None:
    rounds = [
        _round("rendered", 9.0, 1.0, 4.0),
        _round("compared", 24.0, 15.0, 5.0),
        _round("rendered", 8.0, 0.9, 3.0),
        _round("compared", 22.0, 14.0, 6.0),
        _round("rendered", 10.0, 1.1, 5.0),
        _round("compared", 26.0, 16.0, 4.0),
    ]
    summary = summarize(rounds)
    assert summary["rendered"] == {
        "rounds": 3,
        "broker_cpu_s_median": 9.0,
        "transaction_flush_cpu_s_median": 1.0,
        "ready_s_median": 4.0,
    }
    assert summary["compared"]["broker_cpu_s_median"] == 24.0
    assert summary["broker_cpu_ratio"] == round(24.0 / 9.0, 2)


def test_summary_without_a_comparison_has_no_ratio() -> None:
    summary = summarize([_round("rendered", 9.0, 1.0, 4.0)])
    assert "compared" not in summary and "broker_cpu_ratio" not in summary


@pytest.mark.parametrize("pair", ["transactionMetricFlushInterval", "=10000", ""])
def test_a_malformed_compare_is_one_line_naming_it_and_the_fix(pair: str) -> None:
    error = _key_values([pair])
    assert isinstance(error, str) and "\n" not in error
    assert f"--compare {pair!r}" in error and "fix: e.g. --compare transactionMetricFlushInterval=10000" in error


def test_compare_pairs_become_a_mapping() -> None:
    assert _key_values(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}

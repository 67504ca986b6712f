"""`bench proxy`'s document from plain runs (`bench.proxy.proxy_bench_document`): the median throughput of the
saturated rounds per path, latency percentiles over every acknowledged send of the fixed-rate runs, the ratios
proxy / direct, the gRPC row, and failures counted so that the verdict refuses figures with failed sends in them.
No cluster: the runs are plain `ProduceReport`s and `GrpcSend`s."""

from __future__ import annotations

import pytest

from rocketmq_operator.bench import verdict
from rocketmq_operator.bench.proxy import proxy_bench_document, ratio
from rocketmq_operator.tools.grpc_client import GrpcSend
from rocketmq_operator.tools.produce import ProduceReport, SendRecord


def report(latencies_ms: list[float], elapsed_s: float, failed: int = 0) -> ProduceReport:
    records = [
        SendRecord(seq=i, key=f"k{i}", start=0.0, end=0.0, latency_ms=ms, status="PUT_OK", stored=True, attempts=1)
        for i, ms in enumerate(latencies_ms)
    ]
    records += [
        SendRecord(seq=len(records) + i, key=f"f{i}", start=0.0, end=0.0, latency_ms=3000.0, status="TIMEOUT",
                   stored=False, attempts=3)
        for i in range(failed)
    ]  # fmt: skip
    return ProduceReport.from_records("t", "k", 1024, records, elapsed_s)


def grpc_send(seq: int, start: float, ms: float, ok: bool = True) -> GrpcSend:
    return GrpcSend(seq=seq, key=f"g{seq}", start=start, end=start + ms / 1000, ok=ok, status="OK" if ok else "X")


def document(**changes: object) -> dict[str, object]:
    saturated = {
        "direct": [report([1.0] * 100, 1.0), report([1.0] * 100, 0.5), report([1.0] * 100, 2.0)],
        "proxy": [report([2.0] * 100, 2.0), report([2.0] * 100, 1.0), report([2.0] * 100, 4.0)],
    }
    fixed = {"direct": [report([1.0] * 98 + [10.0, 10.0], 1.0)], "proxy": [report([3.0] * 98 + [40.0, 40.0], 1.0)]}
    grpc = [grpc_send(i, float(i), 5.0) for i in range(10)]
    args: dict[str, object] = {"saturated": saturated, "fixed": fixed, "grpc": grpc} | changes
    return proxy_bench_document(
        args["saturated"],  # type: ignore[arg-type]
        args["fixed"],  # type: ignore[arg-type]
        args["grpc"],  # type: ignore[arg-type]
        concurrency=8,
        rate=100.0,
        seconds=1.0,
        size=1024,
        topic="t",
    )


def test_throughput_is_the_median_round_and_the_ratio_is_proxy_over_direct() -> None:
    doc = document()
    sat = doc["saturated"]
    assert isinstance(sat, dict)
    assert sat["direct"]["per_round"] == [100.0, 200.0, 50.0]
    assert sat["direct"]["msgs_per_s"] == 100.0
    assert sat["proxy"]["msgs_per_s"] == 50.0
    assert sat["proxy_over_direct_msgs_per_s"] == 0.5
    assert doc["rounds"] == 3


def test_latency_percentiles_cover_every_acknowledged_send_of_the_fixed_rate_runs() -> None:
    fixed = document()["fixed_rate"]
    assert isinstance(fixed, dict)
    assert fixed["direct"]["latency_ms"] == {"p50": 1.0, "p99": 10.0, "max": 10.0}
    assert fixed["proxy"]["latency_ms"] == {"p50": 3.0, "p99": 40.0, "max": 40.0}
    assert fixed["proxy_over_direct_p50"] == 3.0
    assert fixed["proxy_over_direct_p99"] == 4.0
    assert fixed["direct"]["achieved_msgs_per_s"] == 100.0


def test_the_grpc_row_and_a_clean_run_pass_the_verdict() -> None:
    doc = document()
    row = doc["grpc_via_proxy"]
    assert isinstance(row, dict)
    assert row["acknowledged"] == 10 and row["latency_ms"]["p50"] == 5.0
    assert doc["failed"] == 0 and doc["failures"] == {}
    assert verdict.proxy_bench_failures(doc) == []


def test_a_failed_send_on_any_path_fails_the_verdict_naming_the_count() -> None:
    doc = document(
        fixed={"direct": [report([1.0] * 10, 1.0)], "proxy": [report([1.0] * 10, 1.0, failed=2)]},
        grpc=[grpc_send(0, 0.0, 5.0), grpc_send(1, 1.0, 5.0, ok=False)],
    )
    assert doc["failed"] == 3
    assert doc["failures"] == {"TIMEOUT": 2, "X": 1}
    reasons = verdict.proxy_bench_failures(doc)
    assert len(reasons) == 1 and reasons[0].startswith("3 of ") and "sends failed" in reasons[0], reasons


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [(2.0, 1.0, 2.0), (1.0, 3.0, 0.333), (None, 1.0, None), (1.0, None, None), (1.0, 0.0, None)],
)
def test_ratio_is_none_when_a_side_is_missing(
    numerator: float | None, denominator: float | None, expected: float | None
) -> None:
    assert ratio(numerator, denominator) == expected

"""`bench operator-scale`, the pure half: the sizes asked for, one size's figures from its counters, and where the
cost stops being linear.

Contract: no I/O and no clock.

* `parse_group_sizes(text)` reads ``--groups`` (comma-separated whole numbers, each 1..`MAX_GROUPS`) into an
  ascending list without repeats; `ScaleBenchError` (one line: the flag, the value, the rule, the fix) otherwise.
* `WindowCounts` is what the runner read at the start and the end of a measured window (the operator process's
  CPU seconds, the API server's request counter, the simulated RocketMQ's request counter and its count of
  SyncStateSet reads per group: one per observation pass of the group); `window_figures` turns two of them,
  and the API server's requests over an equally long window with the operator stopped (the baseline: the
  controller manager's own and the bench's reads), into the per-pass figures. A *pass* is one observation pass
  of one BrokerGroup; a *round* is every group observed once.
* `lag_summary` is p50/p99/max of the observation lags (seconds), nearest rank (`tools.stats.percentile`).
* `memory_slopes` is the resident memory per added group between consecutive sizes.
* `linear_until(sizes, per_group)` is the largest size up to which the cost per group stays within
  `LINEAR_TOLERANCE` of the smallest size's; `lag_bound` checks the acceptance rule: the largest size's lag p99
  at most `LAG_P99_FACTOR` times the smallest size's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.tools.stats import latency_summary

MAX_GROUPS = 1000
"""Above this the simulated addresses (3 per group in 127.77.0.0/16) and the API server's etcd on a developer's
machine are the limit, not the operator."""
LINEAR_TOLERANCE = 1.25
"""Cost per group within 25% of the smallest size's still counts as linear (a shared 2-core machine's noise)."""
LAG_P99_FACTOR = 2.0
GROUPS_FIX = "fix: e.g. --groups 10,50,200"


class ScaleBenchError(ValueError):
    """A bad argument or a bench that cannot run; the message is one line."""


def parse_group_sizes(text: str) -> list[int]:
    """``"10,50,200"`` -> ``[10, 50, 200]`` (sorted, no repeats); ScaleBenchError naming the bad part."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise ScaleBenchError(
            f"--groups {text!r}: expected comma-separated numbers of BrokerGroups with no empty item; {GROUPS_FIX}"
        )
    sizes: set[int] = set()
    for part in parts:
        if not part.isdigit():
            raise ScaleBenchError(f"--groups {text!r}: {part!r} is not a whole number of BrokerGroups; {GROUPS_FIX}")
        size = int(part)
        if not 1 <= size <= MAX_GROUPS:
            raise ScaleBenchError(
                f"--groups {text!r}: {size} is outside 1..{MAX_GROUPS} (each size is a number of BrokerGroups, "
                f"at least 1); {GROUPS_FIX}"
            )
        sizes.add(size)
    return sorted(sizes)


def check_passes(passes: int) -> int:
    if passes < 1:
        raise ScaleBenchError(
            f"--passes {passes}: the window must hold at least 1 observation pass of every group; fix: e.g. --passes 15"
        )
    return passes


@dataclass(frozen=True)
class WindowCounts:
    """Counters read at one instant of a size's run (see the module docstring)."""

    at: float
    operator_cpu_s: float
    apiserver_requests: float
    remoting_requests: Mapping[str, int]
    sync_state_reads: Mapping[str, int]
    apiserver_by_kind: Mapping[str, float] = field(default_factory=dict)


def _per(total: float, count: int) -> float | None:
    return round(total / count, 6) if count > 0 else None


def window_figures(
    start: WindowCounts,
    end: WindowCounts,
    groups: int,
    *,
    baseline_requests: float,
    baseline_seconds: float,
    bench_requests: float = 0.0,
    whole_pass_requests: Mapping[str, int] | None = None,
) -> dict[str, object]:
    """One size's per-pass figures over the window from ``start`` to ``end``.

    ``baseline_requests`` is the API server's requests over ``baseline_seconds`` with the operator stopped; it is
    scaled to the window's length and subtracted, as are ``bench_requests`` (the bench's own during the window).
    ``whole_pass_requests`` are the groups' own remoting requests in exactly the window's passes (None when they
    could not be counted): the exact per-pass figures, where the window's counters also hold parts of the passes
    in flight at its two ends.
    """
    seconds = max(end.at - start.at, 1e-9)
    passes = sum(
        max(0, end.sync_state_reads.get(g, 0) - start.sync_state_reads.get(g, 0)) for g in end.sync_state_reads
    )
    per_group = [end.sync_state_reads.get(g, 0) - start.sync_state_reads.get(g, 0) for g in end.sync_state_reads]
    cpu = max(0.0, end.operator_cpu_s - start.operator_cpu_s)
    baseline = baseline_requests * seconds / baseline_seconds if baseline_seconds > 0 else 0.0
    api_total = max(0.0, end.apiserver_requests - start.apiserver_requests)
    api_operator = max(0.0, api_total - baseline - bench_requests)
    remoting: dict[str, int] = {
        code: n - start.remoting_requests.get(code, 0)
        for code, n in sorted(end.remoting_requests.items())
        if n - start.remoting_requests.get(code, 0) > 0
    }
    remoting_total = sum(remoting.values())
    by_kind = {
        kind: round(n - start.apiserver_by_kind.get(kind, 0.0), 1)
        for kind, n in end.apiserver_by_kind.items()
        if n - start.apiserver_by_kind.get(kind, 0.0) > 0
    }
    mean_interval = round(seconds * groups / passes, 3) if passes else None
    return {
        "window_s": round(seconds, 3),
        "passes": passes,
        "passes_per_group_min": min(per_group) if per_group else 0,
        "passes_per_group_max": max(per_group) if per_group else 0,
        "mean_pass_interval_s": mean_interval,
        "operator_cpu_s": round(cpu, 3),
        "cpu_s_per_pass": _per(cpu, passes),
        "cpu_share_of_one_core": round(cpu / seconds, 3),
        "apiserver_requests": round(api_total, 1),
        "apiserver_requests_baseline": round(baseline, 1),
        "apiserver_requests_operator": round(api_operator, 1),
        "apiserver_requests_per_pass": _per(api_operator, passes),
        "apiserver_requests_by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
        "remoting_requests": remoting_total,
        "remoting_requests_per_pass": _per(float(remoting_total), passes),
        "remoting_requests_by_code_per_pass": {k: _per(float(v), passes) for k, v in remoting.items()},
        "group_requests_per_whole_pass": (
            None if whole_pass_requests is None else _per(float(sum(whole_pass_requests.values())), passes)
        ),
        "group_requests_by_code_per_whole_pass": (
            None
            if whole_pass_requests is None
            else {k: _per(float(v), passes) for k, v in sorted(whole_pass_requests.items())}
        ),
    }


def lag_summary(lags_s: Sequence[float]) -> dict[str, float | int | None]:
    """`tools.stats.latency_summary` of the lags, its keys in seconds (``p50_s``, ...), with their count."""
    return {"count": len(lags_s), **{f"{k}_s": v for k, v in latency_summary(lags_s).items()}}


def linear_until(sizes: Sequence[int], per_group: Sequence[float | None]) -> int | None:
    """The largest size whose cost per group is within LINEAR_TOLERANCE of the smallest size's (sizes ascending);
    None without a figure for the smallest size."""
    if not sizes or per_group[0] is None or per_group[0] <= 0:
        return None
    reference = per_group[0]
    last = sizes[0]
    for size, cost in zip(sizes, per_group, strict=True):
        if cost is None or cost > reference * LINEAR_TOLERANCE:
            break
        last = size
    return last


def memory_slopes(sizes: Sequence[int], rss_mib: Sequence[float | None]) -> list[dict[str, object]]:
    """The resident memory each added group costs, between consecutive sizes (MiB per group)."""
    out: list[dict[str, object]] = []
    for (a, ra), (b, rb) in zip(
        zip(sizes, rss_mib, strict=True), zip(sizes[1:], rss_mib[1:], strict=True), strict=False
    ):
        slope = None if ra is None or rb is None or b == a else round((rb - ra) / (b - a), 3)
        out.append({"from": a, "to": b, "mib_per_group": slope})
    return out


def lag_bound(small_p99: float | None, large_p99: float | None) -> dict[str, object]:
    """The acceptance rule: the largest size's observation lag p99 at most LAG_P99_FACTOR × the smallest's."""
    if small_p99 is None or large_p99 is None or small_p99 <= 0:
        return {"met": None, "ratio": None, "factor": LAG_P99_FACTOR}
    ratio = large_p99 / small_p99
    return {"met": ratio <= LAG_P99_FACTOR, "ratio": round(ratio, 3), "factor": LAG_P99_FACTOR}


def apiserver_total(metrics_text: str) -> tuple[float, dict[str, float]]:
    """The sum of kube-apiserver's ``apiserver_request_total`` samples in a /metrics text, and the same summed per
    ``VERB resource[/subresource]``."""
    total = 0.0
    by_kind: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value_text = line.rpartition("} ")
        try:
            value = float(value_text)
        except ValueError:
            continue
        labels = _labels(labels_text[len("apiserver_request_total{") :])
        total += value
        kind = labels.get("resource") or "(non-resource)"
        if labels.get("subresource"):
            kind += "/" + labels["subresource"]
        key = f"{labels.get('verb', '?')} {kind}"
        by_kind[key] = by_kind.get(key, 0.0) + value
    return total, by_kind


def _labels(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split('",'):
        name, sep, value = item.partition('="')
        if sep:
            out[name.strip(",")] = value.rstrip('"')
    return out

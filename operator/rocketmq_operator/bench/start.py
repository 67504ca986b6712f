"""`rocketmq-operator bench start`: the CPU a group's processes use from their start, on the local platform.

Each round brings the manifests up in a fresh state directory (`local up --wait`), waits until `seconds` have
passed since the up began, reads every process's own CPU time since its start (`/proc/PID/stat`, user + system,
children not counted) and each broker thread's, then takes the cluster down. Rounds alternate between the
manifests as rendered (`rendered`) and, with `compare`, the same manifests with those `brokerConfig` keys set on
every BrokerGroup (`compared`), so both variants see the same machine in the same run: the figure to quote is the
ratio of their medians (`broker_cpu_ratio`), not either absolute value. `transaction_flush_cpu_s` is the broker
threads named `TransactionFlushService` (the kernel keeps 15 characters of a thread's name): RocketMQ's start
spin that `render.config.BROKER_START_SPIN_FIX` bounds.

Linux only (it reads /proc). The JVMs run with whatever `ROCKETMQ_OPERATOR_JAVA_OPTS` says (nothing: the JVM's
defaults).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocketmq_operator.bench import phase
from rocketmq_operator.bench.failover import edited_broker_groups, run_cli
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import our_pids
from rocketmq_operator.platforms.local.state import argv_of

ROLES = {
    "BrokerStartup": "broker",
    "NamesrvStartup": "namesrv",
    "ControllerStartup": "controller",
    "ProxyStartup": "proxy",
}
SPIN_THREAD = "TransactionFlus"


def _ticks(stat_text: str) -> tuple[str, int]:
    """(thread or process name, user + system clock ticks) from one /proc stat line."""
    name = stat_text[stat_text.index("(") + 1 : stat_text.rindex(")")]
    fields = stat_text[stat_text.rindex(")") + 2 :].split()
    return name, int(fields[11]) + int(fields[12])


def role_of(argv: list[str]) -> str:
    """The RocketMQ role a process runs (`supervisor` for anything else of the state directory)."""
    for main_class, role in ROLES.items():
        if any(arg.endswith(main_class) for arg in argv):
            return role
    return "supervisor"


def cpu_by_role(layout: StateLayout) -> tuple[dict[str, float], float]:
    """CPU-seconds each role's processes used since they started, and the start-spin threads' share of it."""
    hz = os.sysconf("SC_CLK_TCK")
    by_role: dict[str, float] = {}
    spin = 0
    for pid in our_pids(layout):
        try:
            _, ticks = _ticks(Path(f"/proc/{pid}/stat").read_text())
            threads = os.listdir(f"/proc/{pid}/task")
        except (OSError, ValueError):
            continue
        role = role_of(argv_of(pid) or [])
        by_role[role] = by_role.get(role, 0.0) + ticks / hz
        if role != "broker":
            continue
        for tid in threads:
            try:
                name, thread_ticks = _ticks(Path(f"/proc/{pid}/task/{tid}/stat").read_text())
            except (OSError, ValueError):
                continue
            if name == SPIN_THREAD:
                spin += thread_ticks
    return {role: round(cpu, 2) for role, cpu in sorted(by_role.items())}, round(spin / hz, 2)


def summarize(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians per variant and, when both ran, the compared variant's broker CPU over the rendered one's."""
    out: dict[str, Any] = {}
    for variant in ("rendered", "compared"):
        mine = [r for r in rounds if r["variant"] == variant]
        if not mine:
            continue
        out[variant] = {
            "rounds": len(mine),
            "broker_cpu_s_median": round(statistics.median(r["cpu_s"].get("broker", 0.0) for r in mine), 2),
            "transaction_flush_cpu_s_median": round(statistics.median(r["transaction_flush_cpu_s"] for r in mine), 2),
            "ready_s_median": round(statistics.median(r["ready_s"] for r in mine), 2),
        }
    if "rendered" in out and "compared" in out and out["rendered"]["broker_cpu_s_median"] > 0:
        out["broker_cpu_ratio"] = round(
            out["compared"]["broker_cpu_s_median"] / out["rendered"]["broker_cpu_s_median"], 2
        )
    return out


async def _round(files: list[str], state_dir: Path, seconds: float) -> dict[str, Any]:
    began = time.monotonic()
    await run_cli("local", "up", "--wait", "--state-dir", str(state_dir), *[a for f in files for a in ("-f", f)])
    ready_s = time.monotonic() - began
    try:
        phase.announce(f"sampling {seconds:.0f} s after the start")
        await asyncio.sleep(max(0.0, seconds - (time.monotonic() - began)))
        cpu, spin = cpu_by_role(StateLayout(state_dir))
    finally:
        await run_cli("local", "down", "--state-dir", str(state_dir))
    return {"ready_s": round(ready_s, 2), "cpu_s": cpu, "transaction_flush_cpu_s": spin}


async def run_start_bench(
    files: list[str], state_dir: Path, rounds: int, seconds: float, compare: Mapping[str, str]
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-start-") as manifests:
        variants: list[tuple[str, list[str]]] = [("rendered", files)]
        if compare:
            edited = edited_broker_groups(
                files, Path(manifests), lambda spec: spec.setdefault("brokerConfig", {}).update(compare)
            )
            variants.append(("compared", edited))
        per_round: list[dict[str, Any]] = []
        for index in range(rounds):
            for variant, paths in variants:
                phase.announce(f"round {index + 1}/{rounds}: {variant}")
                result = await _round(paths, state_dir / f"{variant}-{index}", seconds)
                per_round.append({"variant": variant, **result})
    return {
        "bench": "start",
        "files": files,
        "seconds": seconds,
        "compare": dict(compare),
        "cpus": os.cpu_count(),
        "summary": summarize(per_round),
        "per_round": per_round,
    }

"""`rocketmq-operator bench controller-restart`: every controller pod of a ControllerGroup deleted at once (grace
period 0), N rounds, on Kubernetes; how soon each broker is heard again by the new leader, and the elections that
followed while every master stayed alive (docs/chaos.md, finding 10).

Why it exists: a restarted pod keeps its DNS name and gets a new IP. A JRaft leader replays every broker's last
heartbeat time from its log and, `jRaftScanWaitTimeoutMs` after the first heartbeat it gets, deposes each broker
it has not heard since: a live master whose heartbeats reach the new leader late is deposed while it still
acknowledges writes. The brokers' JVM caches DNS answers (JDK 17: 30 s, failures 10 s) unless the image shortens
it (broker_image/rocketmq-entrypoint.sh); two BrokerGroups on the same controllers, one of them with the JDK's
cache back (`spec.jvm.extraOptions: [-Djava.security.properties=/dev/null]`), compare the two in one run.

Contract:

* `parse_controller_log(text)`: the process starts, leaderships, scans and heartbeats of a controller's log (RocketMQ
  writes its times in GMT+8 at second resolution), pure.
* `round_outcome(logs, deleted_at, brokers)`: one round from the logs of the controller processes started since
  the deletion: the leader (the highest term), when it first scanned for inactive brokers, when it first heard
  each broker, and the spread between its first heartbeat and each broker's (the JRaft leader's scan window runs
  from its first heartbeat); pure.
* `run_controller_restart(namespace, controller_group, rounds)`: the rounds on the cluster; the controllers'
  logs are read on this host through /proc/<pid>/root (root on the node, as `chaos --platform kubernetes`).
  Each round deletes the controller pods, waits until the new pods are Ready, the leader has made its first scan
  and heard every broker, and every BrokerGroup on the ControllerGroup is healthy again. Elections are counted by
  the master epoch the groups' status shows (every election raises it), from one round's health to the next's.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import median
from typing import Any

from rocketmq_operator.bench.chaos_kubernetes import (
    ChaosTargetError,
    controller_pods,
    group_healthy,
    pod_processes,
    pod_ready,
)
from rocketmq_operator.bench.failover import wait_for
from rocketmq_operator.platforms.kubernetes.kube import KubeClient

JSON = dict[str, Any]
LOG_ZONE = timezone(timedelta(hours=8))  # RocketMQ's logback patterns: %d{yyy-MM-dd HH:mm:ss,GMT+8}
LOG_FILES = ("controller.log", "namesrv.log")  # a standalone controller's, a name server hosting one
LOG_DIR = Path("data/logs/rocketmqlogs")  # under the container's root: user.home is /data
WAIT_S = 300.0

_TIME = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \S+ \S+ - "
_STARTED = re.compile(_TIME + r"Controller <[^>]*> started\.", re.M)
_LEADER = re.compile(_TIME + r"Controller start leadership, term: (\d+)", re.M)
_SCAN = re.compile(_TIME + r"start scan not active broker", re.M)
_HEARTBEAT = re.compile(
    _TIME + r"broker BrokerIdentityInfo\{[^}]*brokerName='([^']+)', brokerId=(\d+)\} heart beat", re.M
)


def _when(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LOG_ZONE).timestamp()


@dataclass(frozen=True)
class ControllerLog:
    """What one controller's log says, every process that wrote it (the log is on the pod's volume, so it holds
    the deleted pods' lines too): each start, leadership, scan for inactive brokers and heartbeat received."""

    starts: list[float] = field(default_factory=list)
    leaderships: list[tuple[float, int]] = field(default_factory=list)  # (when, term)
    scans: list[float] = field(default_factory=list)
    heartbeats: list[tuple[float, str, int]] = field(default_factory=list)  # (when, broker name, broker id)

    def since_start(self, after: float) -> ControllerLog | None:
        """The lines of the last process started at or after ``after``; None when none started since."""
        starts = [t for t in self.starts if t >= after]
        if not starts:
            return None
        start = max(starts)
        return ControllerLog(
            starts=[start],
            leaderships=[(t, term) for t, term in self.leaderships if t >= start],
            scans=[t for t in self.scans if t >= start],
            heartbeats=[(t, n, i) for t, n, i in self.heartbeats if t >= start],
        )


def parse_controller_log(text: str) -> ControllerLog:
    return ControllerLog(
        starts=[_when(t) for t in _STARTED.findall(text)],
        leaderships=[(_when(t), int(term)) for t, term in _LEADER.findall(text)],
        scans=[_when(t) for t in _SCAN.findall(text)],
        heartbeats=[(_when(t), name, int(i)) for t, name, i in _HEARTBEAT.findall(text)],
    )


def round_outcome(logs: Mapping[str, ControllerLog], deleted_at: float, brokers: Sequence[tuple[str, int]]) -> JSON:
    """One round (see the module doc) from the processes started since the deletion. Times in seconds after the
    deletion (`heard_s`, `leader_s`, `first_scan_s`) or after the leader's first heartbeat (`spread_s`: its scan
    window runs from there); None for a broker not heard yet. The log has whole seconds: a time is up to 1 s early."""
    since = deleted_at - 1.0  # the log's second precedes the deletion's fraction; a new process logs later anyway
    current = {pod: fresh for pod, log in logs.items() if (fresh := log.since_start(since)) is not None}
    leads = [(term, when, pod) for pod, log in current.items() for when, term in log.leaderships]
    heard_s: dict[str, dict[str, float | None]] = {name: {} for name, _ in brokers}
    spread_s: dict[str, dict[str, float | None]] = {name: {} for name, _ in brokers}
    if not leads:
        for name, broker_id in brokers:
            heard_s[name][str(broker_id)] = spread_s[name][str(broker_id)] = None
        return {"leader": None, "leader_s": None, "first_scan_s": None, "heard_s": heard_s, "spread_s": spread_s}
    _, lead_at, leader = max(leads)
    log = current[leader]
    first_any = min((when for when, _, _ in log.heartbeats), default=None)
    for name, broker_id in brokers:
        first = min((when for when, n, i in log.heartbeats if (n, i) == (name, broker_id)), default=None)
        heard_s[name][str(broker_id)] = None if first is None else round(first - deleted_at, 1)
        spread = None if first is None or first_any is None else round(first - first_any, 1)
        spread_s[name][str(broker_id)] = spread
    first_scan = min(log.scans, default=None)
    return {
        "leader": leader,
        "leader_s": round(lead_at - deleted_at, 1),
        "first_scan_s": None if first_scan is None else round(first_scan - deleted_at, 1),
        "heard_s": heard_s,
        "spread_s": spread_s,
    }


def settled(outcome: JSON) -> bool:
    """The new leader has scanned for inactive brokers (an election it makes of a broker it has not heard comes
    at that scan) and has heard every broker."""
    return (
        outcome["first_scan_s"] is not None
        and all(s is not None for by_id in outcome["heard_s"].values() for s in by_id.values())
    )  # fmt: skip


def summary(rounds: Sequence[JSON]) -> JSON:
    """Per BrokerGroup: its brokers' spreads (median, max) over the rounds, brokers heard 10 s or more after the
    leader's first heartbeat (a JRaft leader scans 15 s after it, and a broker's heartbeat times out after 10 s),
    never heard, and elections (the rise of the master epoch in the groups' status: every election raises it)."""
    groups = sorted({name for r in rounds for name in r["outcome"]["spread_s"]})
    out: JSON = {}
    for name in groups:
        values = [s for r in rounds for s in r["outcome"]["spread_s"].get(name, {}).values()]
        spreads = [s for s in values if s is not None]
        out[name] = {
            "rounds": len(rounds),
            "spread_s_median": round(median(spreads), 1) if spreads else None,
            "spread_s_max": round(max(spreads), 1) if spreads else None,
            "heard_10s_or_more_late": sum(1 for s in spreads if s >= 10.0),
            "never_heard": len(values) - len(spreads),
            "elections": sum(r["epoch_rise"].get(name, 0) for r in rounds),
        }
    return out


class ControllerRestart:
    """The cluster side of the bench (see the module doc)."""

    def __init__(self, kube: KubeClient, namespace: str, controller_group: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.controller_group = controller_group

    async def controllers(self) -> list[JSON]:
        return controller_pods(
            await self.kube.list("Pod", self.namespace, f"rocketmq-operator.dev/group={self.controller_group}")
        )

    async def groups(self) -> list[JSON]:
        every = await self.kube.list("BrokerGroup", self.namespace)
        mine = [
            g for g in every if ((g.get("spec") or {}).get("controllerRef") or {}).get("name") == self.controller_group
        ]
        return sorted(mine, key=lambda g: str(g["metadata"]["name"]))

    async def pods_ready(self, old: frozenset[str] = frozenset()) -> bool:
        """Every controller pod Ready, none of them one of ``old`` (uids)."""
        pods = await self.controllers()
        return bool(pods) and all(p["metadata"]["uid"] not in old and pod_ready(p) for p in pods)

    async def healthy(self) -> bool:
        groups = await self.groups()
        return await self.pods_ready() and all(
            group_healthy(g.get("status") or {}, int((g.get("spec") or {}).get("replicas") or 3)) for g in groups
        )

    async def epochs(self) -> dict[str, int]:
        return {
            g["metadata"]["name"]: int(((g.get("status") or {}).get("master") or {}).get("epoch") or 0)
            for g in await self.groups()
        }

    def log_of(self, uid: str) -> ControllerLog:
        pid, _, _ = pod_processes(uid)
        if pid is None:
            return ControllerLog()
        for name in LOG_FILES:
            path = Path(f"/proc/{pid}/root") / LOG_DIR / name
            try:
                return parse_controller_log(path.read_text(errors="replace"))
            except OSError:
                continue
        return ControllerLog()

    async def logs(self) -> dict[str, ControllerLog]:
        return {p["metadata"]["name"]: self.log_of(p["metadata"]["uid"]) for p in await self.controllers()}


async def run_controller_restart(namespace: str, controller_group: str, rounds: int) -> JSON:
    if os.geteuid() != 0:
        raise ChaosTargetError("bench controller-restart reads the controllers' logs on the node: run it as root there")
    kube = await KubeClient.connect()
    try:
        bench = ControllerRestart(kube, namespace, controller_group)
        groups = await bench.groups()
        if not await bench.controllers() or not groups:
            raise ChaosTargetError(
                f"--controller-group {controller_group}: no controller pods or no BrokerGroup with it as "
                f"spec.controllerRef in namespace {namespace}; fix: kubectl -n {namespace} get controllergroups,bg"
            )
        brokers = [
            (g["metadata"]["name"], int(r["brokerId"]))
            for g in groups for r in (g.get("status") or {}).get("replicas") or [] if r.get("brokerId") is not None
        ]  # fmt: skip
        options = {
            g["metadata"]["name"]: ((g.get("spec") or {}).get("jvm") or {}).get("extraOptions") or [] for g in groups
        }
        records: list[JSON] = []
        await wait_for("every group and controller healthy", bench.healthy, WAIT_S, interval=1.0)
        before = await bench.epochs()
        for index in range(rounds):
            old = frozenset(p["metadata"]["uid"] for p in await bench.controllers())
            deleted_at = time.time()
            for pod in await bench.controllers():
                await kube.delete("Pod", namespace, pod["metadata"]["name"], grace_period_s=0)

            async def replaced(old: frozenset[str] = old) -> bool:
                return await bench.pods_ready(old)

            async def quiet(deleted_at: float = deleted_at) -> bool:
                return settled(round_outcome(await bench.logs(), deleted_at, brokers))

            await wait_for(f"round {index + 1}: new controller pods Ready", replaced, WAIT_S, interval=1.0)
            with contextlib.suppress(TimeoutError):  # recorded: a broker never heard is None in the outcome
                await wait_for(
                    f"round {index + 1}: the new leader's first scan, every broker heard", quiet, 120, interval=1.0
                )
            outcome = round_outcome(await bench.logs(), deleted_at, brokers)
            # The epoch once the group is healthy again: an election at the scan has reached the status by then
            # (health needs the full SyncStateSet, which a new master rebuilds after the election).
            await wait_for(f"round {index + 1}: every group healthy again", bench.healthy, WAIT_S, interval=1.0)
            after = await bench.epochs()
            rise = {name: max(0, after.get(name, 0) - before.get(name, 0)) for name in after}
            records.append({"round": index + 1, "outcome": outcome, "epoch_rise": rise})
            before = after
        return {
            "bench": "controller-restart",
            "platform": "kubernetes",
            "namespace": namespace,
            "controller_group": controller_group,
            "jvm_extra_options": options,
            "summary": summary(records),
            "rounds": records,
        }
    finally:
        await kube.close()

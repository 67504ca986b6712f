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

* `parse_controller_log(text)`: the leadership starts, heartbeats and elections of a controller's log (RocketMQ
  writes its times in GMT+8 at second resolution), pure.
* `round_outcome(logs, deleted_at, brokers)`: one round from the new controllers' logs: the leader (the latest
  leadership start after the deletion), when each broker was first heard by it, the spread between the first
  broker heard and each other one (the JRaft leader's scan window runs from its first heartbeat), and the
  elections it made; pure.
* `run_controller_restart(namespace, controller_group, rounds)`: the rounds on the cluster; the controllers'
  logs are read on this host through /proc/<pid>/root (root on the node, as `chaos --platform kubernetes`).
  Each round waits for every BrokerGroup on the ControllerGroup to be healthy, deletes the controller pods, then
  waits until the new pods are Ready and the leader has heard every broker, and for health again. Elections are
  also counted by the master epoch the groups' status shows before and after (every election raises it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import median
from typing import Any

from rocketmq_operator.bench.chaos_kubernetes import ChaosTargetError, group_healthy, pod_processes
from rocketmq_operator.platforms.kubernetes.kube import KubeClient

JSON = dict[str, Any]
LOG_ZONE = timezone(timedelta(hours=8))  # RocketMQ's logback patterns: %d{yyy-MM-dd HH:mm:ss,GMT+8}
LOG_FILES = ("controller.log", "namesrv.log")  # a standalone controller's, a name server hosting one
LOG_DIR = Path("data/logs/rocketmqlogs")  # under the container's root: user.home is /data
COMPONENT_LABEL = "app.kubernetes.io/component"
WAIT_S = 300.0

_TIME = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \S+ \S+ - "
_LEADER = re.compile(_TIME + r"Controller start leadership, term: (\d+)", re.M)
_HEARTBEAT = re.compile(
    _TIME + r"broker BrokerIdentityInfo\{[^}]*brokerName='([^']+)', brokerId=(\d+)\} heart beat", re.M
)
_ELECTION = re.compile(_TIME + r"Elect new master (\d+) for broker (\S+)", re.M)


def _when(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=LOG_ZONE).timestamp()


@dataclass(frozen=True)
class ControllerLog:
    leaderships: list[tuple[float, int]] = field(default_factory=list)  # (when, term)
    heartbeats: list[tuple[float, str, int]] = field(default_factory=list)  # (when, broker name, broker id)
    elections: list[tuple[float, str, int]] = field(default_factory=list)  # (when, broker name, new master id)


def parse_controller_log(text: str) -> ControllerLog:
    return ControllerLog(
        leaderships=[(_when(t), int(term)) for t, term in _LEADER.findall(text)],
        heartbeats=[(_when(t), name, int(i)) for t, name, i in _HEARTBEAT.findall(text)],
        elections=[(_when(t), name, int(i)) for t, i, name in _ELECTION.findall(text)],
    )


def round_outcome(logs: Mapping[str, ControllerLog], deleted_at: float, brokers: Sequence[tuple[str, int]]) -> JSON:
    """One round (see the module doc). Times are seconds after the deletion; a broker never heard is None. The log
    has whole seconds: a time is at most 1 s early."""
    since = deleted_at - 1.0  # the log's second precedes the deletion's fraction
    starts = [(when, term, pod) for pod, log in logs.items() for when, term in log.leaderships if when >= since]
    if not starts:
        return {"leader": None, "leader_s": None, "heard_s": {}, "spread_s": {}, "elections": {}}
    lead_at, _, leader = max(starts, key=lambda s: (s[1], s[0]))
    log = logs[leader]
    heard = [(when, name, i) for when, name, i in log.heartbeats if when >= since]
    first_any = min((when for when, _, _ in heard), default=None)
    heard_s: dict[str, dict[str, float | None]] = {}
    spread_s: dict[str, dict[str, float | None]] = {}
    for name, broker_id in brokers:
        first = min((when for when, n, i in heard if (n, i) == (name, broker_id)), default=None)
        heard_s.setdefault(name, {})[str(broker_id)] = None if first is None else round(first - deleted_at, 1)
        spread = None if first is None or first_any is None else round(first - first_any, 1)
        spread_s.setdefault(name, {})[str(broker_id)] = spread
    elections: dict[str, int] = {name: 0 for name, _ in brokers}
    for when, name, _ in log.elections:
        if when >= lead_at and name in elections:
            elections[name] += 1
    return {
        "leader": leader,
        "leader_s": round(lead_at - deleted_at, 1),
        "heard_s": heard_s,
        "spread_s": spread_s,
        "elections": elections,
    }


def everyone_heard(outcome: JSON) -> bool:
    return outcome["leader"] is not None and all(
        s is not None for by_id in outcome["heard_s"].values() for s in by_id.values()
    )


def summary(rounds: Sequence[JSON]) -> JSON:
    """Per BrokerGroup: its brokers' spreads (median, max) over the rounds, brokers heard 10 s or more after the
    first one (a JRaft leader waits 15 s from its first heartbeat, and a broker's heartbeat times out after 10 s),
    elections (the larger of the leader's log and the status epoch's rise, per round)."""
    groups = sorted({name for r in rounds for name in r["outcome"]["spread_s"]})
    out: JSON = {}
    for name in groups:
        spreads = [
            s for r in rounds for s in r["outcome"]["spread_s"].get(name, {}).values() if s is not None
        ]  # fmt: skip
        unheard = sum(1 for r in rounds for s in r["outcome"]["spread_s"].get(name, {}).values() if s is None)
        elections = sum(
            max(r["outcome"]["elections"].get(name, 0), r["epoch_rise"].get(name, 0)) for r in rounds
        )  # fmt: skip
        out[name] = {
            "rounds": len(rounds),
            "spread_s_median": round(median(spreads), 1) if spreads else None,
            "spread_s_max": round(max(spreads), 1) if spreads else None,
            "heard_10s_or_more_late": sum(1 for s in spreads if s >= 10.0),
            "never_heard": unheard,
            "elections": elections,
        }
    return out


class ControllerRestart:
    """The cluster side of the bench (see the module doc)."""

    def __init__(self, kube: KubeClient, namespace: str, controller_group: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.controller_group = controller_group

    async def controllers(self) -> list[JSON]:
        pods = await self.kube.list("Pod", self.namespace, f"rocketmq-operator.dev/group={self.controller_group}")
        # Standalone controllers have name servers of their own in the group (component "namesrv"): not controllers.
        return [p for p in pods if (p["metadata"].get("labels") or {}).get(COMPONENT_LABEL) != "namesrv"]

    async def groups(self) -> list[JSON]:
        every = await self.kube.list("BrokerGroup", self.namespace)
        mine = [
            g for g in every if ((g.get("spec") or {}).get("controllerRef") or {}).get("name") == self.controller_group
        ]
        return sorted(mine, key=lambda g: str(g["metadata"]["name"]))

    async def pods_ready(self, old: frozenset[str] = frozenset()) -> bool:
        """Every controller pod Ready, none of them one of ``old`` (uids)."""
        pods = await self.controllers()
        return bool(pods) and all(
            p["metadata"]["uid"] not in old
            and any(c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or [])
            for p in pods
        )

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


async def _wait(what: str, check: Callable[[], Awaitable[bool]], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        await asyncio.sleep(1.0)


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
        for index in range(rounds):
            await _wait(f"round {index + 1}: every group and controller healthy", bench.healthy)
            before = await bench.epochs()
            old = frozenset(p["metadata"]["uid"] for p in await bench.controllers())
            deleted_at = time.time()
            for pod in await bench.controllers():
                await kube.delete("Pod", namespace, pod["metadata"]["name"], grace_period_s=0)

            async def replaced(old: frozenset[str] = old) -> bool:
                return await bench.pods_ready(old)

            async def heard(deleted_at: float = deleted_at) -> bool:
                return everyone_heard(round_outcome(await bench.logs(), deleted_at, brokers))

            await _wait(f"round {index + 1}: new controller pods Ready", replaced)
            with contextlib.suppress(TimeoutError):  # recorded: a broker never heard is None in the outcome
                await _wait(f"round {index + 1}: every broker heard by the new leader", heard, timeout=120)
            await _wait(f"round {index + 1}: every group healthy again", bench.healthy)
            after = await bench.epochs()
            outcome = round_outcome(await bench.logs(), deleted_at, brokers)
            rise = {name: max(0, after.get(name, 0) - before.get(name, 0)) for name in after}
            records.append({"round": index + 1, "outcome": outcome, "epoch_rise": rise})
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

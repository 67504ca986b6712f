"""`rocketmq-operator bench upgrade`: a full rolling upgrade under a steady producer, on the local platform.

The manifest's `spec.version` is the starting version; `--to-version` (default: the operator's default version)
is applied with `local apply`, and the supervisor rolls the group (slaves, switchover, the old master). The
producer is the project's own (3 s timeout, 2 retries, as the Java client's defaults). Measured by the client:

* `write_pause_s`: the longest gap between two acknowledgements from the apply to the end of the roll
  (`write_pause_window_s`: when); `baseline_pause_s`: the same over the 9 s of steady traffic before the apply;
* `failed_sends`: sends that failed after their retries; `lost`: acknowledged messages not consumed afterwards
  (the first few in `lost_messages`: key, final status, queue and offset, when acknowledged).

From the supervisor's rollout status: `replicas_restarted`, `switchovers`; `restart_order` lists the replicas in
the order their process changed, with the role each had just before (`master_restarted_last` checks the rule).
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

from rocketmq_operator.api.models import RolloutStatus
from rocketmq_operator.bench.failover import delivery, edited_broker_groups, run_cli, up_controller_group
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.roll import read_rollout
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import SendRecord, SteadyProducer

ROLL_TIMEOUT_S = 900.0
STEADY_S = 10.0  # steady traffic before the apply
LOST_SHOWN = 10  # lost messages listed by key, status, queue and time (the count is `lost`)


def with_version(files: list[str], version: str, directory: Path) -> list[str]:
    """Copies of the manifests with spec.version set on every BrokerGroup."""
    return edited_broker_groups(files, directory, lambda spec: spec.__setitem__("version", version))


def longest_gap(records: list[SendRecord], start: float, end: float) -> tuple[float, float, float]:
    """The longest gap between two acknowledgements in [start, end]: (gap, its first ack, its last ack)."""
    acks = sorted(r.end for r in records if r.ok and start <= r.end <= end)
    return max(((b - a, a, b) for a, b in itertools.pairwise(acks)), default=(end - start, start, end))


class RestartWatch:
    """Which replica's process changed, in order, and whether it was the master when it was restarted.

    Every POLL_S: the pids from the state file (the supervisor writes a restart there), then the master from the
    controller (the authority the brokers and the clients' routes follow). A restarted replica counts as restarted
    while master only when the controller named it master both at the poll before its restart was seen and at
    the poll that saw it: a controller that already names another master had moved the role before the
    restart (a switchover completes just before the roll restarts the old master), and a master killed while
    master is still named by the controller until a failover detects it, seconds later. The status collection
    this replaced took over a second under load, and a role read that long before the restart could name a
    replica master after its switchover had already moved the role.
    """

    POLL_S = 0.1

    def __init__(self, layout: StateLayout, group: str) -> None:
        self.layout = layout
        self.group = group
        self.order: list[dict[str, Any]] = []
        self._pids: dict[str, int | None] = {}
        self.master: str | None = None
        self._stop = asyncio.Event()

    async def _controller_master(
        self, client: RemotingClient, controllers: list[str], names: dict[str, str]
    ) -> str | None:
        try:
            meta = await client.find_controller_leader(controllers, timeout=1.0)
            if meta.leader_address is None:
                return None
            info = await client.get_replica_info(meta.leader_address, self.group, timeout=1.0)
        except (RemotingException, OSError):
            return None
        return names.get(info.master_address or "")

    async def run(self) -> None:
        state = read_state(self.layout.state_file)
        info = state.group(self.group)
        controllers = list(info.controllers) if info is not None else []
        names = {r.address: r.name for r in state.replicas if r.group == self.group and r.address}
        async with state_client(state, connect_timeout=1.0, request_timeout=2.0) as client:
            self.master = await self._controller_master(client, controllers, names)
            while not self._stop.is_set():
                before = self.master
                replicas = [r for r in read_state(self.layout.state_file).replicas if r.group == self.group]
                now = await self._controller_master(client, controllers, names)
                if now is not None:
                    self.master = now
                for r in replicas:
                    if r.name in self._pids and r.pid is not None and r.pid != self._pids[r.name]:
                        was_master = r.name == before and r.name == now
                        self.order.append(
                            {"replica": r.name, "role_before": "master" if was_master else "slave", "at": time.time()}
                        )
                    if r.pid is not None:
                        self._pids[r.name] = r.pid
                await asyncio.sleep(self.POLL_S)

    def stop(self) -> None:
        self._stop.set()


async def run_bench(
    files: list[str], state_dir: Path, to_version: str, rate: float, keep: bool, roll_timeout_s: float = ROLL_TIMEOUT_S
) -> dict[str, Any]:
    layout = StateLayout(state_dir)
    manifests = tempfile.TemporaryDirectory(prefix="bench-upgrade-")
    state, group = await up_controller_group(files, state_dir, "upgrade")
    target = with_version(files, to_version, Path(manifests.name))
    topic = f"bench-upgrade-{int(time.time())}"
    try:
        producer = SteadyProducer(topic, rate, namesrv=state.name_servers, size=512, timeout=3.0, retries=2)
        await producer.start()
        watch = RestartWatch(layout, group)
        watcher = asyncio.create_task(watch.run())
        try:
            steady_from = time.time()
            # Steady traffic first, long enough to settle the JVMs just started (JIT, the topic passes): applied
            # 3 s after `local up`, the roll's longest gap was at the apply in 4 of 7 runs, with no failed send.
            await asyncio.sleep(STEADY_S)
            before = read_rollout(layout, group)
            initial_master = watch.master
            apply_args = ["local", "apply", "--state-dir", str(state_dir)]
            for f in target:
                apply_args += ["-f", f]
            applied_at = time.time()
            apply_output = await run_cli(*apply_args)
            rollout = await _rollout_ended(layout, group, before, roll_timeout_s)
            finished_at = time.time()
            await asyncio.sleep(2.0)  # steady traffic after
        finally:
            watch.stop()
            await watcher
            await producer.stop()
        records = list(producer.records)
        report = producer.report()
        acknowledged = {r.key for r in records if r.ok}
        got = await consume(state.name_servers, topic, idle_timeout=5.0, read_from="master", to_end=True)
        missing = missing_acknowledged(acknowledged, got.keys)
        lost = len(missing)
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
        manifests.cleanup()
    order = [o for o in watch.order if applied_at <= o["at"] <= finished_at]
    pause, pause_from, pause_to = longest_gap(records, applied_at, finished_at)
    baseline, _, _ = longest_gap(records, steady_from + 1.0, applied_at)
    return {
        "group": group,
        "from_version": next(
            (d.get("spec", {}).get("version") for d in state.resources if d.get("kind") == "BrokerGroup"), None
        ),
        "to_version": to_version,
        "apply": apply_output.strip().splitlines(),
        "phase": rollout.phase if rollout else None,
        "rollout_message": rollout.message if rollout else None,
        "replicas_restarted": rollout.restarts if rollout else 0,
        "switchovers": rollout.switchovers if rollout else 0,
        "write_pause_s": round(pause, 3),
        # when, in seconds after the apply (compare with `restart_order` and the supervisor's log)
        "write_pause_window_s": [round(pause_from - applied_at, 3), round(pause_to - applied_at, 3)],
        # the same measure over the steady traffic before the apply: what this machine does with no roll at all
        "baseline_pause_s": round(baseline, 3),
        "failed_sends": sum(report.failures.values()),
        "duration_s": round(finished_at - applied_at, 3),
        "rate_msgs_per_s": rate,
        **delivery(report, got.count, lost),
        "initial_master": initial_master,
        "restart_order": [
            {"replica": o["replica"], "role_before": o["role_before"], "at_s": round(o["at"] - applied_at, 3)}
            for o in order
        ],
        "master_restarted_last": bool(order) and order[-1]["replica"] == initial_master,
        "restarted_while_master": sum(1 for o in order if o["role_before"] == "master"),
        **_failed_and_lost(records, missing, applied_at),
    }


async def _rollout_ended(
    layout: StateLayout, group: str, before: RolloutStatus | None, timeout_s: float
) -> RolloutStatus | None:
    """The rollout of the new revision once it is Complete or Blocked (or as it is at the deadline)."""
    rollout = None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rollout = read_rollout(layout, group)
        if (
            rollout is not None
            and rollout.phase in ("Complete", "Blocked")
            and (before is None or rollout.target_revision != before.target_revision)
        ):
            break
        await asyncio.sleep(0.5)
    return rollout


def _failed_and_lost(records: list[SendRecord], missing: set[str], applied_at: float) -> dict[str, Any]:
    return {
        "first_failures": [  # what the producer saw first when sends failed (failed attempts in order)
            {
                "s_after_apply": round(r.start - applied_at, 3),
                "status": r.status,
                "attempts": list(r.attempt_failures),
                "error": r.error,
            }
            for r in sorted((r for r in records if not r.ok), key=lambda r: r.start)[:LOST_SHOWN]
        ],
        "lost_messages": [
            {
                "key": r.key,
                "status": r.status,
                "queue": f"{r.broker_name}/{r.queue_id}@{r.queue_offset}",
                "acknowledged_s_after_apply": round(r.end - applied_at, 3),
            }
            for r in sorted((r for r in records if r.ok and r.key in missing), key=lambda r: r.end)[:LOST_SHOWN]
        ],
    }

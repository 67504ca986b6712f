"""`rocketmq-operator bench group-scale`: a cluster grown by one broker group and shrunk by another, under a
steady producer and a committing consumer group, on the local platform (docs/scaling.md).

The manifests must hold at least one controller-mode BrokerGroup, a Topic placed by `clusterName` and a
ConsumerGroup of the same cluster that reads it (examples/two-groups.yaml). The bench:

1. brings them up and sends at ``rate`` for a steady while, the consumer group reading the topic to its end again
   and again and committing its offsets after each read;
2. adds a group (a copy of the last BrokerGroup, named ``added``) with `local apply`; measures when it is
   writable (its topics asserted) and when the producer's first send to it is acknowledged (a route refresh);
3. drains the first BrokerGroup (`spec.draining: true`, `local apply`) until `local status` says Drained, then
   removes it (`local apply` without it: the removal shuts its send door and reads its lag once more);
4. stops the producer, reads once more, and compares keys: every acknowledged key must have been consumed.

JSON: `lost`, `failed_sends`, `queues_on_added_group` (the topic's writable queues on the added group, in the
route), `sends_to_added_group` (acknowledged), `removed_group_final_lag` (the removed group's lag when it went),
`duration_s` (from the add to the removal done), and the times of each step.
"""

from __future__ import annotations

import asyncio
import copy
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from rocketmq_operator.api.validation import load_documents
from rocketmq_operator.bench.failover import delivery, run_cli, up_controller_group
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.group_drain import read_drain_record
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.report import collect
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.remoting import RemotingException
from rocketmq_operator.tools.consume import consume
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import SteadyProducer
from rocketmq_operator.tools.routing import ToolError

STEADY_S = 8.0
STEP_TIMEOUT_S = 600.0
POLL_S = 0.5


class GroupScaleError(Exception):
    """The manifests cannot run this bench (one line: what is missing and the fix)."""


def cluster_topic(docs: list[dict[str, Any]]) -> tuple[str, str]:
    """The first Topic placed by clusterName and a ConsumerGroup that reads it: (topic, consumer group)."""
    topics = [d for d in docs if d.get("kind") == "Topic" and (d.get("spec") or {}).get("clusterName")]
    for t in topics:
        name = str((t.get("spec") or {}).get("topicName") or t["metadata"]["name"])
        for g in docs:
            spec = g.get("spec") or {}
            if g.get("kind") == "ConsumerGroup" and name in (spec.get("topics") or []) and spec.get("clusterName"):
                return name, str(spec.get("groupName") or g["metadata"]["name"])
    raise GroupScaleError(
        "bench group-scale needs a Topic placed by spec.clusterName and a ConsumerGroup of that cluster listing it "
        "in spec.topics; fix: use examples/two-groups.yaml, or add both to the manifests"
    )


class CommittingReaders:
    """The consumer group: reads the topic to its end again and again, committing after each read."""

    def __init__(self, name_servers: list[str], topic: str, group: str, client: Any) -> None:
        self.name_servers, self.topic, self.group, self.client = name_servers, topic, group, client
        self.keys: set[str] = set()
        self.stopped = asyncio.Event()

    async def run(self) -> None:
        while not self.stopped.is_set():
            await self.read_once()

    async def read_once(self) -> None:
        try:
            report = await consume(
                self.name_servers, self.topic, group=self.group, commit=True, read_from="master", to_end=True,
                idle_timeout=2.0, client=self.client,
            )  # fmt: skip
        except ToolError:
            await asyncio.sleep(POLL_S)  # a group going away under the read
            return
        self.keys |= set(report.keys)


def _write(docs: list[dict[str, Any]], path: Path) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return str(path)


async def _until(what: str, check: Any, timeout: float = STEP_TIMEOUT_S) -> float:
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"bench group-scale: {what} not reached in {timeout:g} s")
        await asyncio.sleep(POLL_S)
    return time.monotonic() - started


async def run_bench(
    files: list[str], state_dir: Path, rate: float, keep: bool, added: str = "bench-added"
) -> dict[str, Any]:
    docs = [d for f in files for d in load_documents(f) if d]
    topic, readers_group = cluster_topic(docs)
    groups = [d for d in docs if d.get("kind") == "BrokerGroup"]
    if any(g["metadata"]["name"] == added for g in groups):
        raise GroupScaleError(f"a BrokerGroup is named {added!r} already; fix: --added-name another name")
    removed = groups[0]["metadata"]["name"]
    extra = copy.deepcopy(groups[-1])
    extra["metadata"] = {"name": added}
    draining = copy.deepcopy(docs)
    for d in draining:
        if d.get("kind") == "BrokerGroup" and d["metadata"]["name"] == removed:
            d.setdefault("spec", {})["draining"] = True
    layout = StateLayout(state_dir)
    manifests = tempfile.TemporaryDirectory(prefix="bench-group-scale-")
    where = Path(manifests.name)
    grown = _write([*docs, extra], where / "grown.yaml")
    drain = _write([*draining, extra], where / "draining.yaml")
    shrunk = _write([d for d in [*docs, extra] if d.get("metadata", {}).get("name") != removed or
                     d.get("kind") != "BrokerGroup"], where / "shrunk.yaml")  # fmt: skip
    state, _ = await up_controller_group(files, state_dir, "group-scale")
    result: dict[str, Any] = {"topic": topic, "consumer_group": readers_group, "added": added, "removed": removed}
    try:
        async with state_client(state, connect_timeout=2.0, request_timeout=3.0) as client:
            producer = SteadyProducer(topic, rate, namesrv=state.name_servers, size=256, timeout=3.0, retries=2)
            readers = CommittingReaders(state.name_servers, topic, readers_group, client)
            await producer.start()
            reading = asyncio.create_task(readers.run())
            try:
                await asyncio.sleep(STEADY_S)
                started = time.monotonic()
                await _apply(state_dir, grown)

                async def added_writable() -> bool:
                    doc = await collect(read_state(layout.state_file), layout, persist=False)
                    g = next((x for x in doc["groups"] if x["name"] == added), None)
                    return bool(g and g.get("writable") and g.get("topicsAsserted"))

                result["added_writable_s"] = round(await _until(f"{added} writable", added_writable), 3)

                async def sent_to_added() -> bool:
                    return any(r.ok and r.broker_name == added for r in list(producer.records))

                result["first_send_to_added_s"] = round(
                    await _until(f"a send acknowledged by {added}", sent_to_added), 3
                )
                route = await client.get_route(topic)
                result["queues_on_added_group"] = sum(
                    q.write_queue_nums for q in route.queue_datas if q.broker_name == added and q.perm & 2
                )
                mark = time.monotonic()
                await _apply(state_dir, drain)

                async def drained() -> bool:
                    record = read_drain_record(layout, removed)
                    return record is not None and record.drained

                result["drain_s"] = round(await _until(f"{removed} drained", drained), 3)
                mark = time.monotonic()
                result["removal_output"] = (await _apply(state_dir, shrunk)).strip().splitlines()
                result["removal_s"] = round(time.monotonic() - mark, 3)
                final = read_drain_record(layout, removed)
                result["removed_group_final_lag"] = final.lag_total if final is not None else None
                result["duration_s"] = round(time.monotonic() - started, 3)
            finally:
                await producer.stop()
                readers.stopped.set()
                await reading
            await readers.read_once()
        records = list(producer.records)
        acknowledged = {r.key for r in records if r.ok}
        lost = missing_acknowledged(acknowledged, readers.keys)
        report = producer.report()
        result.update(
            sends_to_added_group=sum(1 for r in records if r.ok and r.broker_name == added),
            sends_to_removed_group=sum(1 for r in records if r.ok and r.broker_name == removed),
            failed_sends=sum(report.failures.values()),
            rate_msgs_per_s=rate,
            **delivery(report, len(readers.keys), len(lost)),
            lost_keys=sorted(lost)[:10],
        )
    except RemotingException as exc:
        raise GroupScaleError(f"bench group-scale: {exc}") from exc
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
        manifests.cleanup()
    return result


async def _apply(state_dir: Path, manifest: str) -> str:
    return await run_cli("local", "apply", "--state-dir", str(state_dir), "-f", manifest)


__all__ = ["GroupScaleError", "run_bench"]

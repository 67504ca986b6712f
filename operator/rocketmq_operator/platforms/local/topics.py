"""The local platform's topic policy: the supervisor's call into the shared `topics` executor.

Contract: `TopicPolicy(state, layout)` takes the Topic, ConsumerGroup and BrokerGroup manifests recorded in
`state.json`, and takes them again whenever `state.resources` is replaced (the supervisor's `apply` request,
`roll.handle_apply`, does that for `local apply`): added or changed topics and groups are asserted on the next
pass, removed ones no longer (nothing is deleted). `await policy.run(client, states)` runs `topics.assert_group`
on every observed group that has something to assert (declared topics or groups, or automatic creation switched
on) and writes what it found to `status/<group>.topics.json` (read by `local status`): the master asserted,
whether every declared topic and group is there, per topic the queue counts and max offsets, per consumer
group the lag. Failures are logged by the caller and retried on the next pass.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from rocketmq_operator.api.models import BrokerGroup, ConsumerGroup, Topic
from rocketmq_operator.control.topics import AssertReport, GroupTopicMemory, assert_group
from rocketmq_operator.core.observation import GroupState
from rocketmq_operator.core.topics import WantedOnGroup, wanted_on_groups, wanted_topics
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, write_json_atomic
from rocketmq_operator.remoting import RemotingClient

log = logging.getLogger("rocketmq_operator.local.topics")

# Offsets and lag are read every this many seconds (assertion itself runs on every pass).
MEASURE_EVERY_S = 5.0


def topics_status_path(layout: StateLayout, group: str) -> Any:
    return layout.status(group).with_name(f"{group}.topics.json")


def report_doc(report: AssertReport, wanted: WantedOnGroup, memory: GroupTopicMemory, now: float) -> dict[str, Any]:
    topics = wanted_topics(wanted.topics, memory.observed, True, wanted.own_names)
    return {
        "group": report.group,
        "master": report.master,
        "asserted": report.asserted,
        "observedAt": now,
        "errors": report.errors,
        "refusals": [f"{r.name}: {r.message}" for r in report.refusals],
        "topics": [
            {
                "name": t.name,
                "source": t.source,
                "exists": t.name in report.topics,
                "readQueueNums": report.topics[t.name].read_queue_nums if t.name in report.topics else None,
                "writeQueueNums": report.topics[t.name].write_queue_nums if t.name in report.topics else None,
                "messageType": report.topics[t.name].message_type if t.name in report.topics else None,
                "maxOffsets": report.topic_max_offsets.get(t.name),
            }
            for t in topics
        ],
        "consumerGroups": [
            {
                "name": g.name,
                "exists": g.name in report.consumer_groups,
                "lag": sum(report.lag[g.name].values()) if g.name in report.lag else None,
                "lagByTopic": report.lag.get(g.name, {}),
            }
            for g in wanted.consumer_groups
        ],
    }


class TopicPolicy:
    def __init__(self, state: LocalState, layout: StateLayout) -> None:
        self.layout = layout
        self.state = state
        self._wanted_from: list[dict[str, Any]] | None = None  # the resources list `_wanted` was computed from
        self._wanted: dict[str, WantedOnGroup] = {}
        self.memory: dict[str, GroupTopicMemory] = {}
        self.measured_at: dict[str, float] = {}
        self.observed_count: dict[str, int] = {}

    @property
    def wanted(self) -> dict[str, WantedOnGroup]:
        """Per BrokerGroup what its master must hold, from the resources the state records now: the supervisor
        keeps one policy for its life, and `local apply` replaces the resources under it."""
        if self._wanted_from is not self.state.resources:
            self._wanted_from = self.state.resources
            resources = load_resources(self.state)
            self._wanted = wanted_on_groups(
                [r for r in resources if isinstance(r, BrokerGroup)],
                [r for r in resources if isinstance(r, Topic)],
                [r for r in resources if isinstance(r, ConsumerGroup)],
            )
        return self._wanted

    async def run(self, client: RemotingClient, states: Mapping[str, GroupState]) -> None:
        wanted_now = self.wanted
        for name, state in states.items():
            wanted = wanted_now.get(name)
            if wanted is None:
                continue
            now = time.time()
            measure = now - self.measured_at.get(name, 0.0) >= MEASURE_EVERY_S
            memory = self.memory.setdefault(name, GroupTopicMemory())
            report = await assert_group(client, state, wanted, memory, measure=measure)
            for line in report.done:
                log.info("%s: %s", name, line)
            for refusal in report.refusals:
                log.warning("%s: refused: %s: %s", name, refusal.name, refusal.message)
            newly_observed = len(memory.observed) != self.observed_count.get(name)
            self.observed_count[name] = len(memory.observed)
            if measure or report.done or not report.asserted or newly_observed:
                if measure:
                    self.measured_at[name] = now
                write_json_atomic(topics_status_path(self.layout, name), report_doc(report, wanted, memory, now))

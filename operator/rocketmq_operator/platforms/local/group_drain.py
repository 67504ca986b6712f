"""The local platform's side of a group's drain (`control.group_drain` does it; this keeps its record).

Contract:

* `drain_record_path(layout, group)`: `status/<group>.drain.json`, the local status.drain: what the supervisor's
  pass found last (`LocalPassSteps.group_drain` writes it, removes it once no drain is under way) and passes back
  (`since`), so that a restarted supervisor resumes the drain where it was. `local status` shows it.
* `remove_groups(state, groups, forced)`: what `local apply` runs before it stops the processes of groups the new
  manifests no longer have: the drain of each, as removed (`core.group_drain`: write off, every lag 0, the send
  door shut, the lag 0 again), event-driven until each may go or is held. Returns one refusal line per group held
  (the reason and the fix), none when every one may go; the lines of what was done go to ``say``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from rocketmq_operator.api.models import BrokerGroup, ConsumerGroup, GroupDrainStatus
from rocketmq_operator.control.group_drain import declared_lag_pairs, run_group_drain
from rocketmq_operator.core.group_drain import show_lag
from rocketmq_operator.core.topics import wanted_on_groups
from rocketmq_operator.platforms.local.auth import state_client
from rocketmq_operator.platforms.local.group_states import observe
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.placement import load_resources
from rocketmq_operator.platforms.local.state import LocalState, write_json_atomic

MAX_DOOR_ROUNDS = 3
"""A removal shuts the send door, then reads the lag again; a message stored just before the door shut makes it
wait for the consumers (held) rather than loop."""


def drain_record_path(layout: StateLayout, group: str) -> Path:
    return layout.status(group).with_name(f"{group}.drain.json")


def read_drain_record(layout: StateLayout, group: str) -> GroupDrainStatus | None:
    try:
        return GroupDrainStatus.model_validate_json(drain_record_path(layout, group).read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def write_drain_record(layout: StateLayout, group: str, record: GroupDrainStatus | None) -> None:
    path = drain_record_path(layout, group)
    if record is None:
        path.unlink(missing_ok=True)
        return
    write_json_atomic(path, record.model_dump(mode="json", by_alias=True))


async def remove_groups(
    state: LocalState,
    layout: StateLayout,
    groups: Sequence[str],
    *,
    forced: bool,
    say: Callable[[str], None],
) -> list[str]:
    """See the module doc. A group that is not draining already and holds unconsumed messages is refused before
    anything is done to it (a refused `local apply` changes nothing)."""
    refusals: list[str] = []
    resources = load_resources(state)
    wanted = wanted_on_groups(
        [r for r in resources if isinstance(r, BrokerGroup)],
        [],
        [r for r in resources if isinstance(r, ConsumerGroup)],
    )
    deadlines = {r.metadata.name: r.spec.drain_deadline_seconds for r in resources if isinstance(r, BrokerGroup)}
    async with state_client(state, connect_timeout=2.0, request_timeout=3.0) as client:
        for group in groups:
            declared = declared_lag_pairs(wanted[group].lag_topics if group in wanted else {})
            recorded = read_drain_record(layout, group)
            if not forced and recorded is None:
                observed = (await observe(state, client))[group]
                first = await run_group_drain(
                    client, observed, draining=True, removing=True, declared=declared, dry_run=True
                )
                if first.plan.held and (first.lag is None or sum(first.lag.values()) > 0):
                    refusals.append(_refusal(group, first.lag))
                    continue
            for _ in range(MAX_DOOR_ROUNDS):
                observed = (await observe(state, client))[group]
                outcome = await run_group_drain(
                    client, observed, draining=True, removing=True, forced=forced, recorded=recorded,
                    declared=declared, deadline_s=deadlines.get(group, 0),
                )  # fmt: skip
                for line in (*outcome.steps, *outcome.problems):
                    say(line)
                recorded = outcome.status()
                write_drain_record(layout, group, recorded)
                if outcome.plan.remove:
                    say(outcome.plan.message)
                    break
                if not outcome.steps:  # held with nothing done: the consumers' turn
                    left = outcome.lag is None or sum(outcome.lag.values()) > 0
                    refusals.append(_refusal(group, outcome.lag) if left else outcome.plan.message)
                    break
            else:
                refusals.append(_refusal(group, outcome.lag))
    return refusals


def _refusal(group: str, lag: Mapping[str, int] | None) -> str:
    left = (
        "its consumer offsets could not be read"
        if lag is None
        else f"{sum(lag.values()):,} messages are left to consume ({show_lag(lag)})"
    )
    return (
        f"BrokerGroup {group}: removal refused: {left}; rule: a group is removed only once every consumer group has "
        f"read it; fix: set spec.draining: true on {group} and `local apply`, wait until `local status` shows it "
        "Drained, then remove it; or `local apply --force`, which drops what is left"
    )

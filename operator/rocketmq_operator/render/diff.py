"""`explain --diff OLD NEW` / `render --diff OLD NEW`: what applying NEW over OLD needs, per BrokerGroup. Pure.

Both manifests are rendered with one made-up placement, so only what the specs change shows up; the verdict is
`core.config_change.describe_change` ("hot: ...", "rolling restart of N replicas, one switchover (...)").
`describe_topic_changes` lists the Topics and ConsumerGroups added, changed or removed (shared with
`local apply`); `diff_warnings` the changes worth a warning (a downgrade, `core.config_change.downgrade_warning`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from rocketmq_operator.api.models import AnyResource, BrokerGroup, ConsumerGroup, ControllerGroup, Topic
from rocketmq_operator.core.config_change import describe_change, downgrade_warning
from rocketmq_operator.render.config import BrokerPlacement, ReplicaPlacement, broker_config

Notes = Callable[[BrokerGroup, BrokerGroup], list[str]]
"""(old, new) -> extra lines about a changed BrokerGroup (e.g. what one platform does not apply)."""


def _broker_confs(bg: BrokerGroup) -> list[dict[str, str]]:
    # One placement for both sides: only what the specs change shows up.
    placement = BrokerPlacement(
        name_servers=["namesrv:9876"],
        controllers=["controller:9878"],
        replicas=[ReplicaPlacement(10911 + 10 * i, f"/store/{i}") for i in range(bg.spec.replicas)],
    )
    return [broker_config(bg, i, placement) for i in range(bg.spec.replicas)]


def _jvm(bg: BrokerGroup) -> list[str]:
    return [json.dumps(bg.spec.jvm.model_dump(mode="json"), sort_keys=True)]


def describe_manifests(old: Sequence[AnyResource], new: Sequence[AnyResource], notes: Notes | None = None) -> list[str]:
    """`explain --diff OLD NEW`: one line per BrokerGroup of NEW saying what the change needs (then the lines of
    ``notes`` for it), then one line per Topic or ConsumerGroup added, changed or removed."""
    before = {r.metadata.name: r for r in old if isinstance(r, BrokerGroup)}
    lines: list[str] = []
    for bg in (r for r in new if isinstance(r, BrokerGroup)):
        prev = before.get(bg.metadata.name)
        if prev is None:
            lines.append(f"BrokerGroup/{bg.metadata.name}: new group (created, nothing to roll)")
            continue
        text = describe_change(
            prev.spec.version,
            bg.spec.version,
            _broker_confs(prev),
            _broker_confs(bg),
            _jvm(prev),
            _jvm(bg),
            bg.spec.upgrade.strategy,
        )
        lines.append(f"BrokerGroup/{bg.metadata.name}: {text}")
        lines.extend(f"BrokerGroup/{bg.metadata.name}: {note}" for note in (notes(prev, bg) if notes else []))
    lines.extend(describe_topic_changes(old, new))
    return lines


def diff_warnings(old: Sequence[AnyResource], new: Sequence[AnyResource]) -> list[str]:
    """One line per group of NEW whose change deserves a warning (a downgrade of spec.version)."""
    kinds = (BrokerGroup, ControllerGroup)
    before = {(r.kind, r.metadata.name): r for r in old if isinstance(r, kinds)}
    out: list[str] = []
    for r in new:
        if not isinstance(r, kinds):
            continue
        prev = before.get((r.kind, r.metadata.name))
        if prev is not None and (text := downgrade_warning(prev.spec.version, r.spec.version)) is not None:
            out.append(f"{r.kind}/{r.metadata.name}: {text}")
    return out


def _label(r: Topic | ConsumerGroup) -> str:
    return f"topic {r.topic_name}" if isinstance(r, Topic) else f"consumer group {r.group_name}"


def _spec_changes(old: Topic | ConsumerGroup, new: Topic | ConsumerGroup) -> list[str]:
    a = old.spec.model_dump(mode="json", by_alias=True)
    b = new.spec.model_dump(mode="json", by_alias=True)
    return [
        f"{k} {json.dumps(a.get(k))} -> {json.dumps(b.get(k))}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)
    ]


def describe_topic_changes(old: Sequence[AnyResource], new: Sequence[AnyResource]) -> list[str]:
    """'topic orders: added', 'consumer group readers: changed (consumeEnable true -> false)', 'topic x: removed':
    one line per Topic or ConsumerGroup resource that differs between OLD and NEW (by kind, namespace, name)."""

    def keyed(resources: Sequence[AnyResource]) -> dict[tuple[str, str | None, str], Topic | ConsumerGroup]:
        return {
            (r.kind, r.metadata.namespace, r.metadata.name): r
            for r in resources
            if isinstance(r, Topic | ConsumerGroup)
        }

    before, after = keyed(old), keyed(new)
    lines: list[str] = []
    for key, r in after.items():
        prev = before.get(key)
        if prev is None:
            lines.append(f"{_label(r)}: added")
        elif changes := _spec_changes(prev, r):
            lines.append(f"{_label(r)}: changed ({', '.join(changes)})")
    lines.extend(f"{_label(r)}: removed" for key, r in before.items() if key not in after)
    return lines

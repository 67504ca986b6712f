"""`explain --diff OLD NEW` / `render --diff OLD NEW`: what applying NEW over OLD needs, per BrokerGroup. Pure.

Both manifests are rendered with one made-up placement, so only what the specs change shows up; the verdict is
`core.config_change.describe_change` ("hot: ...", "rolling restart of N replicas, one switchover (...)").
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rocketmq_operator.api.models import AnyResource, BrokerGroup
from rocketmq_operator.core.config_change import describe_change
from rocketmq_operator.render.config import BrokerPlacement, ReplicaPlacement, broker_config


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


def describe_manifests(old: Sequence[AnyResource], new: Sequence[AnyResource]) -> list[str]:
    """`explain --diff OLD NEW`: one line per BrokerGroup of NEW saying what the change needs."""
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
    return lines

"""The per-mode table (`api.modes`) is the one source: render, warnings, explain and the CEL defaults agree with it."""

from __future__ import annotations

import itertools
from typing import Any

import celpy
import pytest

from rocketmq_operator.api.models import BrokerGroup, HAMode
from rocketmq_operator.api.modes import (
    CEL_IN_SYNC_REPLICAS,
    CEL_MIN_IN_SYNC_REPLICAS,
    MODES,
    QUORUM_FIELDS,
    in_sync_replicas,
    min_in_sync_replicas,
)
from rocketmq_operator.api.rules import rules_for
from rocketmq_operator.api.validation import broker_group_warnings, parse_resource
from rocketmq_operator.core.explain import explain_broker_group
from rocketmq_operator.render.config import BrokerPlacement, ReplicaPlacement, broker_config, properties_text

# Every quorum field set to a value that is legal in every mode, so that only the mode decides what is read.
ALL_FIELDS_SET = {
    "inSyncReplicas": 2,
    "minInSyncReplicas": 1,
    "autoDegrade": True,
    "maxGapNotInSync": "64Mi",
    "allAckInSyncStateSet": True,
}


def _group(mode: HAMode, replicas: int = 3, quorum: dict[str, Any] | None = None) -> BrokerGroup:
    spec: dict[str, Any] = {"replicas": replicas, "haMode": mode.value, "quorum": quorum or {}}
    if mode is HAMode.CONTROLLER:
        spec["controllerRef"] = {"name": "ctl"}
    doc = {"apiVersion": "rocketmq-operator.dev/v1alpha1", "kind": "BrokerGroup", "metadata": {"name": "b"}}
    resource, problems = parse_resource({**doc, "spec": spec})
    assert isinstance(resource, BrokerGroup), problems
    return resource


def _placement(replicas: int) -> BrokerPlacement:
    return BrokerPlacement(
        name_servers=["ns:9876"],
        controllers=["ctl:9878"],
        replicas=[ReplicaPlacement(10911 + 10 * i, f"/data/{i}") for i in range(replicas)],
    )


def test_every_mode_has_a_row() -> None:
    assert set(MODES) == set(HAMode)
    for semantics in MODES.values():
        assert set(semantics.quorum_keys) <= set(QUORUM_FIELDS)


@pytest.mark.parametrize("mode", list(HAMode), ids=[m.value for m in HAMode])
def test_render_writes_exactly_the_keys_the_mode_reads(mode: HAMode) -> None:
    bg = _group(mode, quorum=ALL_FIELDS_SET)
    for ordinal in range(3):
        conf = broker_config(bg, ordinal, _placement(3))
        rendered = [k for k in conf if k in QUORUM_FIELDS]
        assert rendered == list(MODES[mode].quorum_keys)


@pytest.mark.parametrize("mode", list(HAMode), ids=[m.value for m in HAMode])
def test_every_broker_gets_the_start_spin_fix_unless_brokerconfig_sets_it(mode: HAMode) -> None:
    # RocketMQ <= 5.5.0 spins a core for one transactionMetricFlushInterval after every broker start
    # (render/config.py BROKER_START_SPIN_FIX): every replica of every mode gets 1 s, a user's own value wins.
    for ordinal in range(3):
        assert broker_config(_group(mode), ordinal, _placement(3))["transactionMetricFlushInterval"] == "1000"
    bg = _group(mode)
    bg.spec.broker_config["transactionMetricFlushInterval"] = 5000
    conf = broker_config(bg, 0, _placement(3))
    assert "transactionMetricFlushInterval=5000" in properties_text(conf).splitlines()


@pytest.mark.parametrize("mode", list(HAMode), ids=[m.value for m in HAMode])
def test_warnings_name_every_set_field_the_mode_does_not_read(mode: HAMode) -> None:
    bg = _group(mode, quorum=ALL_FIELDS_SET)
    ignored = {p.path for p in broker_group_warnings(bg) if p.rule_id == "warn.ignored"}
    unread = {QUORUM_FIELDS[k] for k in QUORUM_FIELDS if not MODES[mode].reads(k)}
    assert unread <= ignored
    # A field the mode reads is warned about only for the documented allAckInSyncStateSet override.
    read = {QUORUM_FIELDS[k] for k in MODES[mode].quorum_keys}
    assert ignored & read <= ({"spec.quorum.inSyncReplicas"} if mode is HAMode.CONTROLLER else set())


@pytest.mark.parametrize("mode", list(HAMode), ids=[m.value for m in HAMode])
def test_explain_lists_the_keys_the_mode_reads(mode: HAMode) -> None:
    text = explain_broker_group(_group(mode, quorum=ALL_FIELDS_SET), [])
    keys_line = next(line for line in text.splitlines() if "broker keys:" in line)
    listed = [item.split("=")[0] for item in keys_line.split("broker keys: ")[1].split(", ")]
    assert listed == ["totalReplicas", *MODES[mode].quorum_keys]
    assert MODES[mode].summary in text


def _cel(expr: str, spec: dict[str, Any]) -> int:
    env = celpy.Environment()
    return int(env.program(env.compile(expr)).evaluate({"self": celpy.json_to_cel(spec)}))


@pytest.mark.parametrize(
    ("replicas", "in_sync", "min_in_sync"),
    list(itertools.product(range(1, 8), [None, 1, 2, 3], [None, 1, 2])),
)
def test_cel_defaults_agree_with_python(replicas: int, in_sync: int | None, min_in_sync: int | None) -> None:
    quorum = {k: v for k, v in {"inSyncReplicas": in_sync, "minInSyncReplicas": min_in_sync}.items() if v is not None}
    bg = _group(HAMode.CONTROLLER, replicas, quorum)
    spec = bg.model_dump(mode="json", by_alias=True, exclude_none=True)["spec"]
    assert _cel(CEL_IN_SYNC_REPLICAS, spec) == in_sync_replicas(bg.spec)
    assert _cel(CEL_MIN_IN_SYNC_REPLICAS, spec) == min_in_sync_replicas(bg.spec)


def test_the_crd_rules_use_the_defaults_from_the_table() -> None:
    cel = " ".join(rule.cel for rule in rules_for("BrokerGroup"))
    assert CEL_IN_SYNC_REPLICAS in cel
    assert CEL_MIN_IN_SYNC_REPLICAS in cel

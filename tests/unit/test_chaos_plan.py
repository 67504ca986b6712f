"""The chaos campaign's pure half: schedule, targets and the checker, on plain data."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup
from rocketmq_operator.api.validation import validate_file
from rocketmq_operator.bench.chaos_plan import (
    FAMILIES,
    ChaosPlanError,
    HeldFault,
    PlannedFault,
    Send,
    Target,
    check_campaign,
    fault_rto,
    plan_campaign,
    resolve_targets,
    targets_for,
    timeline_svg,
)
from rocketmq_operator.platforms.local.netfault import cgroup2_root, cpu_cgroup_root

BROKERS = ["b-0", "b-1", "b-2"]
CONTROLLERS = ["c-0", "c-1", "c-2"]


def test_the_same_seed_gives_the_same_schedule_and_every_round_covers_every_family() -> None:
    plan = plan_campaign(12, 7, FAMILIES, 3)
    assert plan == plan_campaign(12, 7, FAMILIES, 3)
    assert plan != plan_campaign(12, 8, FAMILIES, 3)
    for start in range(0, 12, 4):
        assert {f.family for f in plan[start : start + 4]} == set(FAMILIES)
    assert [f.index for f in plan] == list(range(12))


def test_a_long_campaign_reaches_every_target_kind() -> None:
    plan = plan_campaign(200, 1, FAMILIES, 3, operator=True)
    assert {f.target for f in plan} == set(Target)
    assert Counter(f.family for f in plan) == {family: 50 for family in FAMILIES}


@pytest.mark.parametrize(
    ("controllers", "offered"),
    [
        (0, {Target.BROKER, Target.MASTER}),
        (1, {Target.BROKER, Target.MASTER, Target.CONTROLLERS_ALL, Target.BROKER_AND_CONTROLLER}),
        (3, set(Target) - {Target.MASTER_AND_OPERATOR}),
    ],
)
def test_controller_targets_need_controllers_and_a_minority_needs_three(controllers: int, offered: set[Target]) -> None:
    assert set(targets_for(controllers)) == offered
    assert set(targets_for(controllers, operator=True)) == offered | {Target.MASTER_AND_OPERATOR}


@pytest.mark.parametrize(
    ("faults", "families", "message"),
    [
        (0, FAMILIES, "--faults 0: must be at least 1"),
        (3, ("kill", "flood"), "--families kill,flood: each must be one of kill, suspend, loss, partition"),
        (3, (), "--families (none)"),
    ],
)
def test_refusals_name_the_option_and_the_fix(faults: int, families: tuple[str, ...], message: str) -> None:
    with pytest.raises(ChaosPlanError, match="fix: ") as info:
        plan_campaign(faults, 1, families, 3)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("target", "pick", "master", "expected"),
    [
        (Target.BROKER, 4, "b-0", ("b-1",)),
        (Target.MASTER, 4, "b-2", ("b-2",)),
        (Target.MASTER, 4, None, ("b-1",)),  # no master named: a seeded broker, as a real outage would hit
        (Target.CONTROLLERS_MINORITY, 1, "b-0", ("c-1",)),
        (Target.CONTROLLERS_MAJORITY, 2, "b-0", ("c-2", "c-0")),
        (Target.CONTROLLERS_ALL, 0, "b-0", ("c-0", "c-1", "c-2")),
        (Target.BROKER_AND_CONTROLLER, 5, "b-0", ("b-2", "c-2")),
    ],
)
def test_targets_resolve_to_processes(target: Target, pick: int, master: str | None, expected: tuple[str, ...]) -> None:
    assert resolve_targets(PlannedFault(0, "kill", target, pick), BROKERS, CONTROLLERS, master) == expected


def _sends(spec: list[tuple[float, bool]]) -> list[Send]:
    return [Send(f"k{i}", t - 0.01, t, ok, "PUT_OK" if ok else "TIMEOUT") for i, (t, ok) in enumerate(spec)]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ([(1.0, True), (2.0, True)], (0.0, 0, True)),
        # the first failed send started at 1.99, the next acknowledgement came at 4.5
        ([(1.0, True), (2.0, False), (3.0, False), (4.5, True), (5.0, True)], (2.51, 2, True)),
        # two short outages with acknowledgements between them: the longer one, not their span
        ([(1.0, True), (2.0, False), (2.5, True), (5.0, False), (5.7, True)], (0.71, 2, True)),
        # never recovered within the window: counted up to its end (9.0)
        ([(1.0, True), (2.0, False)], (7.01, 1, False)),
    ],
)
def test_rto_is_what_the_client_saw(spec: list[tuple[float, bool]], expected: tuple[float, int, bool]) -> None:
    assert fault_rto(_sends(spec), 0.5, 9.0) == expected


def test_the_checker_counts_lost_duplicates_and_controller_only_failures() -> None:
    sends = _sends([(1.0, True), (2.0, False), (3.0, True), (11.0, False), (12.0, True), (13.0, True)])
    faults = [
        HeldFault(0, "kill", "master", ("b-0",), 1.5, 4.0),
        HeldFault(1, "partition", "controllers-all", ("c-0", "c-1", "c-2"), 10.0, 12.5),
    ]
    consumed = {"k0", "k2", "k4"}  # k5 acknowledged and never read
    doc = check_campaign(sends, faults, consumed, ended=20.0, deposed_acks=0, duplicates=1)
    assert doc["faults"] == 2 and doc["acknowledged"] == 4
    assert doc["lost"] == 1 and [s["key"] for s in doc["lost_sends"]] == ["k5"]
    assert doc["lost_sends"][0]["fault"] == 1
    assert doc["duplicates"] == 1
    assert doc["controller_only_failed_sends"] == 1
    assert doc["by_family"]["kill"] == {
        "faults": 1,
        "rto_s": {"p50": 1.01, "p99": 1.01, "max": 1.01},
        "failed_sends": 1,
    }
    assert doc["by_family"]["suspend"]["faults"] == 0
    assert doc["rto_s_broker_kill_and_partition"]["max"] == 1.01  # the controller partition is not a broker fault
    assert set(doc) >= {"faults", "lost", "duplicates", "rto_s", "by_family", "controller_only_failed_sends"}


def test_the_timeline_draws_a_band_per_fault() -> None:
    sends = _sends([(1.0, True), (2.0, False), (3.0, True)])
    svg = timeline_svg(sends, [HeldFault(0, "loss", "broker", ("b-1",), 1.5, 2.5)], 0.0, 4.0)
    assert svg.startswith("<svg") and svg.count("<polyline") == 2
    assert "#0 loss broker: b-1" in svg


def test_the_cgroup2_mount_is_found_in_hybrid_and_unified_layouts() -> None:
    hybrid = "cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    assert str(cgroup2_root(hybrid)) == "/sys/fs/cgroup/unified"
    assert str(cgroup2_root("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")) == "/sys/fs/cgroup"
    assert cgroup2_root("cgroup /sys/fs/cgroup/cpu cgroup rw 0 0\n") is None


def test_the_cgroup_v1_cpu_mount_is_found_by_its_options() -> None:
    mounts = (
        "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n"
        "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    )
    assert str(cpu_cgroup_root(mounts)) == "/sys/fs/cgroup/cpu,cpuacct"
    assert cpu_cgroup_root("cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n") is None
    assert cpu_cgroup_root("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n") is None


@pytest.mark.parametrize("name,kind", [("dledger.yaml", "dledger"), ("jraft.yaml", "jraft")])
def test_the_campaign_groups_are_valid_with_standalone_controllers_of_each_type(name: str, kind: str) -> None:
    """RocketMQ's own proof faulted controllers that ran apart from the name servers: a controller fault there
    is a controller fault only. Ours keeps that layout, for both controller types."""
    path = Path(__file__).resolve().parents[2] / "examples" / "chaos" / name
    resources = [r.resource for r in validate_file(path)]
    assert all(r is not None for r in resources)
    controllers = [r for r in resources if isinstance(r, ControllerGroup)]
    brokers = [r for r in resources if isinstance(r, BrokerGroup)]
    assert [(c.spec.type, c.spec.standalone, c.spec.replicas) for c in controllers] == [(kind, True, 3)]
    assert [(b.spec.replicas, b.spec.controller_ref is not None) for b in brokers] == [(3, True)]

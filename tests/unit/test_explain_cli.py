"""`rocketmq-operator explain` and `explain --diff OLD NEW` as a user sees them: each warning once, the Topics and
ConsumerGroups a change adds, changes or removes, what the local platform does not apply (the heap), and a
downgrade's warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketmq_operator.api.models import BrokerGroup
from rocketmq_operator.cli import main
from rocketmq_operator.core.config_change import downgrade_warning
from rocketmq_operator.render.diff import describe_topic_changes, diff_warnings
from validation_cases import NEW_TOPIC

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def _variant(tmp_path: Path, name: str, replace: tuple[str, str] | None = None, append: str = "") -> Path:
    text = QUICKSTART.read_text()
    if replace is not None:
        assert replace[0] in text
        text = text.replace(*replace)
    path = tmp_path / name
    path.write_text(text + append)
    return path


def test_explain_prints_each_warning_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(QUICKSTART)]) == 0
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert both.count("no controller failover") == 1, both
    assert "  warnings:\n    spec.replicas: is 1: no controller failover" in captured.out


def test_explain_diff_lists_added_topics_and_consumer_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = _variant(tmp_path, "new.yaml", append=NEW_TOPIC)
    assert main(["explain", "--diff", str(QUICKSTART), str(new)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "BrokerGroup/broker-a: no change",
        "topic payments: added",
        "consumer group payments-readers: added",
    ]


def test_describe_topic_changes_added_changed_removed() -> None:
    from rocketmq_operator.api.validation import validate_file

    old = [r.resource for r in validate_file(QUICKSTART) if r.resource is not None]
    new = [r.model_copy(deep=True) for r in old if r.kind != "ConsumerGroup"]
    topic = next(r for r in new if r.kind == "Topic")
    topic.spec.write_queue_nums = 16  # type: ignore[union-attr]
    assert describe_topic_changes(old, new) == [
        "topic orders: changed (writeQueueNums 8 -> 16)",
        "consumer group orders-readers: removed",
    ]
    assert describe_topic_changes(old, old) == []


def test_explain_diff_says_the_heap_is_not_applied_locally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = _variant(tmp_path, "new.yaml", replace=("    heap: 1Gi", "    heap: 2Gi"))
    assert main(["explain", "--diff", str(QUICKSTART), str(new)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("BrokerGroup/broker-a: rolling restart of 3 replicas")  # on Kubernetes
    assert lines[1] == "BrokerGroup/broker-a: heap: not applied on the local platform (local JVMs run -Xmx256m)"
    assert len(lines) == 2


def test_explain_diff_warns_of_a_downgrade_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _variant(tmp_path, "old.yaml", replace=("  haMode: controller", "  haMode: controller\n  version: 5.5.0"))
    new = _variant(tmp_path, "new.yaml", replace=("  haMode: controller", "  haMode: controller\n  version: 5.4.0"))
    assert main(["explain", "--diff", str(old), str(new)]) == 0
    captured = capsys.readouterr()
    assert "version 5.5.0 -> 5.4.0" in captured.out
    downgrade = [line for line in captured.err.splitlines() if "is a downgrade" in line]
    assert downgrade == [
        "warning: BrokerGroup/broker-a: spec.version 5.5.0 -> 5.4.0 is a downgrade: RocketMQ does not promise "
        "that an older version reads the stores a newer one wrote; back up the data, or keep the newer version"
    ]
    assert main(["explain", "--diff", str(new), str(old)]) == 0  # an upgrade: no warning
    assert "is a downgrade" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("old", "new", "warned"),
    [("5.5.0", "5.4.0", True), ("5.4.0", "5.5.0", False), ("5.5.0", "5.5.0", False), ("5.10.0", "5.9.1", True)],
)
def test_downgrade_warning(old: str, new: str, warned: bool) -> None:
    assert (downgrade_warning(old, new) is not None) is warned
    bgs = [
        BrokerGroup.model_validate({"metadata": {"name": "b"}, "spec": {"controllerRef": {"name": "c"}, "version": v}})
        for v in (old, new)
    ]
    assert len(diff_warnings(bgs[:1], bgs[1:])) == int(warned)


@pytest.mark.parametrize(
    ("reported", "new", "warned"),
    [
        (["V5_5_0", "V5_5_0"], "5.4.0", True),
        (["V5_4_0", "V5_5_0"], "5.4.0", True),  # mid-roll: the newest running version counts
        (["V5_4_0"], "5.5.0", False),
        (["V5_5_0"], "5.5.0", False),
        ([None, "unknown", "V5_5"], "5.4.0", False),  # nothing readable: no claim
        ([], "5.4.0", False),
    ],
)
def test_running_downgrade_warning(reported: list[str | None], new: str, warned: bool) -> None:
    from rocketmq_operator.core.config_change import running_downgrade_warning, version_of_desc

    assert version_of_desc("V5_5_0") == "5.5.0" and version_of_desc("V5_5_0_SNAPSHOT") == "5.5.0"
    assert (running_downgrade_warning(reported, new) is not None) is warned

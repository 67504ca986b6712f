"""The shared no-loss check (tools/noloss.py) and the key lists it reads (`produce|consume --json --report-keys`)."""

from __future__ import annotations

import argparse
import json
from collections import deque
from typing import Any

import pytest
from tools_fakes import FakeClient, SendCall, make_route

from rocketmq_operator.cli import tools as tools_cli
from rocketmq_operator.remoting import RemotingTimeout, ResponseCode
from rocketmq_operator.tools import consume, produce
from rocketmq_operator.tools.noloss import (
    acknowledged_keys,
    missing_acknowledged,
    no_loss_failure,
    read_keys,
    reports_no_loss_failure,
)

ISR = (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough")


def test_every_acknowledged_key_read_back_passes_with_duplicates_and_extra_keys() -> None:
    acked = ["k-1", "k-2", "k-3"]
    assert missing_acknowledged(acked, ["k-3", "k-1", "k-2", "k-2", "other-7"]) == set()
    assert no_loss_failure(acked, ["k-3", "k-1", "k-2", "k-2", "other-7"]) is None
    assert no_loss_failure([], []) is None


def test_a_deliberately_lost_acknowledged_message_fails_the_check() -> None:
    acked = [f"k-{i}" for i in range(100)]
    read = [k for k in acked if k != "k-42"]
    assert missing_acknowledged(acked, read) == {"k-42"}
    assert no_loss_failure(acked, read) == "1 of 100 acknowledged messages not read back (lost): k-42"


def test_a_failed_but_stored_send_read_back_is_allowed() -> None:
    """A send that timed out after the broker stored it is read back but was never acknowledged: no loss."""
    acked = ["k-0", "k-1"]
    assert no_loss_failure(acked, ["k-0", "k-1", "k-2-failed-but-stored"]) is None


def test_the_failure_is_one_line_with_the_count_and_the_first_ten_in_natural_order() -> None:
    acked = [f"k-{i}" for i in range(30)]
    message = no_loss_failure(acked, ["k-0"])
    assert message is not None and "\n" not in message
    shown = ", ".join(f"k-{i}" for i in range(1, 11))  # k-9 before k-10, not k-1, k-10, k-11, ...
    assert message == f"29 of 30 acknowledged messages not read back (lost): {shown} and 19 more"


def test_reports_without_key_lists_are_refused_not_compared_as_empty() -> None:
    with pytest.raises(ValueError, match="--report-keys"):
        acknowledged_keys({"acknowledged": 3})
    with pytest.raises(ValueError, match="--report-keys"):
        read_keys({"unique": 3})
    assert acknowledged_keys({"acknowledged_keys": ["a"]}, {"acknowledged_keys": ["b"]}) == {"a", "b"}


def _parser(monkeypatch: pytest.MonkeyPatch, client: FakeClient) -> argparse.ArgumentParser:
    async def produce_with_fake(*args: Any, **kwargs: Any) -> Any:
        return await produce(*args, client=client, **kwargs)

    async def consume_with_fake(*args: Any, **kwargs: Any) -> Any:
        return await consume(*args, client=client, **{**kwargs, "idle_timeout": 0.05, "poll_interval": 0.005})

    monkeypatch.setattr(tools_cli, "produce", produce_with_fake)
    monkeypatch.setattr(tools_cli, "consume", consume_with_fake)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))
    return parser


def _run(parser: argparse.ArgumentParser, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    args = parser.parse_args(argv)
    code = args.func(args)
    return code, json.loads(capsys.readouterr().out)


def test_a_lost_message_behind_a_failed_but_stored_send_fails_the_key_check_not_the_count_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case the count checks missed, through the CLI's JSON as the e2e tests read it: k-3 times out after the
    broker stored it (failed, read back), and the acknowledged k-5 is then lost. The counts balance; the keys do
    not."""
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})

    def store_then_time_out(call: SendCall) -> None:
        if call.key == "k-3":
            client.put("t", "a", call.queue_id, call.key, call.body)
            raise RemotingTimeout("no answer within 3.0s")

    client.on_send = store_then_time_out
    parser = _parser(monkeypatch, client)
    base = ["--namesrv", "ns", "--topic", "t", "--json", "--report-keys"]
    code, produced = _run(
        parser,
        ["produce", *base, "--count", "10", "--key-prefix", "k-", "--concurrency", "1", "--retries", "0"],
        capsys,
    )
    assert code == 1 and (produced["sent"], produced["acknowledged"]) == (10, 9)
    assert produced["acknowledged_keys"] == [f"k-{i}" for i in range(10) if i != 3]
    assert produced["failed_keys"] == {"k-3": "TIMEOUT"}

    code, consumed = _run(parser, ["consume", *base], capsys)
    assert code == 0 and consumed["keys"] == sorted(f"k-{i}" for i in range(10))
    assert reports_no_loss_failure([produced], consumed) is None  # the failed-but-stored k-3 read back is allowed

    for store in client.stores.values():  # the injected loss: acknowledged k-5 is gone from the broker
        store[:] = [m for m in store if m.properties.get("KEYS") != "k-5"]
    code, consumed = _run(parser, ["consume", *base], capsys)
    assert code == 0 and "k-5" not in consumed["keys"]
    # What the e2e tests checked before: bounded counts, which a lost message hidden behind a stored failure passes.
    assert produced["acknowledged"] <= consumed["unique"] <= produced["sent"]
    assert reports_no_loss_failure([produced], consumed) == "1 of 9 acknowledged messages not read back (lost): k-5"


def test_default_json_reports_have_no_key_lists(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _parser(monkeypatch, FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})}))
    code, produced = _run(parser, ["produce", "--namesrv", "ns", "--topic", "t", "--count", "3", "--json"], capsys)
    assert code == 0 and not {"acknowledged_keys", "failed_keys"} & set(produced)
    code, consumed = _run(parser, ["consume", "--namesrv", "ns", "--topic", "t", "--json"], capsys)
    assert code == 0 and consumed["count"] == 3 and "keys" not in consumed


@pytest.mark.parametrize("tool", ["produce", "consume"])
def test_report_keys_without_json_is_one_line_and_exit_2(
    tool: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})
    parser = _parser(monkeypatch, client)
    count = ["--count", "1"] if tool == "produce" else []
    args = parser.parse_args([tool, "--namesrv", "ns", "--topic", "t", *count, "--report-keys"])
    assert args.func(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err == (
        "error: --report-keys is given without --json; rule: the key lists are fields of the JSON report; "
        f"fix: add --json (`rocketmq-operator {tool} ... --json --report-keys`)\n"
    )
    assert client.sends == [] and client.pulls == [] and client.route_lookups == 0


def test_ctrl_c_partial_report_has_the_keys_answered_so_far(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rolling e2e test stops its producer with Ctrl-C: the partial report still lists the keys."""
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})
    client.send_outcomes = deque([ISR])
    calls: list[int] = []

    def interrupt_fourth(call: SendCall) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt

    client.on_send = interrupt_fourth
    parser = _parser(monkeypatch, client)
    argv = ["produce", "--namesrv", "ns", "--topic", "t", "--count", "100", "--key-prefix", "k-"]
    code, doc = _run(parser, [*argv, "--concurrency", "1", "--retries", "0", "--json", "--report-keys"], capsys)
    assert code == 130 and doc["interrupted"] is True and doc["sent"] == 3
    assert doc["acknowledged_keys"] == ["k-1", "k-2"] and doc["failed_keys"] == {"k-0": "IN_SYNC_REPLICAS_NOT_ENOUGH"}

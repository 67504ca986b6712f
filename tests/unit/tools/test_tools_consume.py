"""Consumer: offsets, suggestion following, OFFSET_ILLEGAL/RETRY/errors, duplicates, commit, JSON shape."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
from collections import deque
from typing import Any

import pytest
from tools_fakes import FakeClient, PullCall, make_route

from rocketmq_operator.cli import tools as tools_cli
from rocketmq_operator.remoting import (
    PullResult,
    RemotingClient,
    RemotingCommand,
    RemotingConnectionError,
    RemotingError,
    ResponseCode,
)
from rocketmq_operator.tools import ConsumeReport, ToolError, body_for, consume, digest_of
from rocketmq_operator.tools.consume import ensure_consumer_group

FAST = {"idle_timeout": 0.05, "poll_interval": 0.005}


def _filled(n: int, brokers: dict[str, dict[int, str]] | None = None, queues: int = 2) -> FakeClient:
    brokers = brokers or {"a": {0: "a0", 1: "a1"}}
    client = FakeClient(routes={"t": make_route("t", brokers, queues=queues)})
    names = sorted(brokers)
    for i in range(n):
        key = f"k{i}"
        client.put("t", names[i % len(names)], i % queues, key, body_for(key, 12))
    return client


def _expected(n: int) -> str:
    return digest_of((f"k{i}", body_for(f"k{i}", 12)) for i in range(n))


async def test_reads_every_queue_from_earliest_with_json_shape() -> None:
    client = _filled(25, {"a": {0: "a0"}, "b": {0: "b0"}})
    report = await consume(None, "t", batch_size=4, **FAST, client=client)
    assert (report.count, report.unique, report.duplicates) == (25, 25, 0)
    assert report.digest == _expected(25) and report.body_mismatches == 0 and report.without_key == 0
    doc = report.to_json()
    assert {"count", "unique", "duplicates", "digest", "per_queue", "served_by", "elapsed_s"} <= set(doc)
    assert json.loads(json.dumps(doc)) == doc
    assert sorted(doc["per_queue"]) == ["a:0", "a:1", "b:0", "b:1"]
    assert sum(q["count"] for q in doc["per_queue"].values()) == 25
    assert all(q["caught_up"] and q["next_offset"] == q["max_offset"] for q in doc["per_queue"].values())
    assert doc["served_by"] == {"a/0": 13, "b/0": 12}
    assert client.committed == []  # a read tool: no offsets committed by default


async def test_follows_suggested_slave_and_back() -> None:
    client = _filled(10, queues=1)
    client.suggestions = {"a0": 1, "a1": 0}  # master says "read from slave 1"; the slave sends it back
    report = await consume(None, "t", batch_size=2, **FAST, client=client)
    assert report.count == 10 and report.digest == _expected(10)
    assert [p.addr for p in client.pulls[:3]] == ["a0", "a1", "a0"]
    assert report.served_by == {"a/0": 6, "a/1": 4}


async def test_suggested_id_missing_from_route_falls_back_to_master() -> None:
    client = _filled(6, {"a": {0: "a0", 3: "a3"}}, queues=1)
    client.suggestions = {"a0": 1}  # the Java default whichBrokerWhenConsumeSlowly=1; controller ids differ
    report = await consume(None, "t", batch_size=2, **FAST, client=client)
    assert report.count == 6 and {p.addr for p in client.pulls} == {"a0"}
    assert report.served_by == {"a/0": 6}


async def test_read_from_master_ignores_suggestions() -> None:
    client = _filled(6, queues=1)
    client.suggestions = {"a0": 1}
    report = await consume(None, "t", read_from="master", batch_size=2, **FAST, client=client)
    assert report.served_by == {"a/0": 6} and {p.addr for p in client.pulls} == {"a0"}


async def test_offset_illegal_restarts_from_min_offset() -> None:
    client = _filled(8, queues=1)
    client.min_offsets = {("a", 0): 3}
    client.pull_script = {
        ("a0", 0): deque([PullResult("OFFSET_ILLEGAL", ResponseCode.PULL_OFFSET_MOVED, None, 0, 3, 8, 0)])
    }
    report = await consume(None, "t", **FAST, client=client)
    assert report.count == 5 and report.per_queue["a:0"].offset_resets == 1
    assert report.digest == digest_of((f"k{i}", body_for(f"k{i}", 12)) for i in range(3, 8))


async def test_retry_status_and_errors_go_back_to_master() -> None:
    client = _filled(4, queues=1)
    client.suggestions = {"a0": 1}
    client.pull_script = {
        ("a1", 0): deque(
            [
                PullResult("RETRY", ResponseCode.PULL_RETRY_IMMEDIATELY, None, 2, 0, 4, 0),
                RemotingError(ResponseCode.SYSTEM_BUSY, "slave read disabled"),
            ]
        )
    }
    client.pull_script[("a0", 0)] = deque([RemotingConnectionError("reset", "a0")])
    report = await consume(None, "t", batch_size=2, idle_timeout=0.6, poll_interval=0.005, client=client)
    assert report.count == 4 and report.duplicates == 0
    assert report.errors == {"CONNECTION_ERROR": 1, "SYSTEM_BUSY": 1}
    # a0 fails, a0 FOUND (suggests 1), a1 RETRY (suggests 0), a0 FOUND, a1 SYSTEM_BUSY -> a0 ...
    assert [p.addr for p in client.pulls[:5]] == ["a0", "a0", "a1", "a0", "a1"]


async def test_duplicates_counted_digest_over_distinct_pairs() -> None:
    client = _filled(3, queues=1)
    client.put("t", "a", 0, "k1", body_for("k1", 12))  # redelivered copy
    client.put("t", "a", 0, None, b"no key")
    client.put("t", "a", 0, "k9", b"not derived")
    report = await consume(None, "t", **FAST, client=client)
    assert (report.count, report.unique, report.duplicates) == (6, 5, 1)
    assert report.without_key == 1 and report.body_mismatches == 1
    assert report.digest == digest_of(
        [*((f"k{i}", body_for(f"k{i}", 12)) for i in range(3)), ("ID-0-4", b"no key"), ("k9", b"not derived")]
    )


async def test_latest_and_max_messages_and_commit() -> None:
    client = _filled(9)
    latest = await consume(None, "t", start="latest", **FAST, client=client)
    assert latest.count == 0 and latest.digest == "0" * 64

    limited = await consume(None, "t", max_messages=5, batch_size=3, commit=True, **FAST, client=client)
    assert limited.count == 5 and limited.committed
    committed = {queue_id: offset for _, _, queue_id, offset in client.committed}
    assert sum(committed.values()) == 5  # next offsets cover exactly the five messages read
    assert all(addr == "a0" for addr, *_ in client.committed)


async def test_unreachable_queue_counts_as_failing_and_run_ends() -> None:
    client = _filled(4, {"a": {0: "a0"}, "b": {0: "b0"}})
    client.down = {"b0"}
    report = await consume(None, "t", **FAST, client=client)
    assert report.count == 2 and report.errors.get("CONNECTION_ERROR", 0) >= 1
    assert not report.per_queue["b:0"].caught_up and report.per_queue["a:0"].caught_up


async def test_to_end_stops_at_the_ends_read_at_start_without_waiting_for_idle() -> None:
    client = _filled(25, {"a": {0: "a0"}, "b": {0: "b0"}})
    client.dispatch_behind = {"a0": deque([120, 40])}  # a0 indexes its last puts first: ends read after that
    # An hour of idle timeout: only the end rule can stop this run (the outer bound guards against a hang).
    report = await asyncio.wait_for(
        consume(None, "t", to_end=True, idle_timeout=3600, poll_interval=0.005, client=client), 60
    )
    assert (report.count, report.unique, report.digest) == (25, 25, _expected(25))
    assert not client.dispatch_behind["a0"]  # asked until it reported nothing left to index
    doc = report.to_json()
    ends = {name: q["end_offset"] for name, q in doc["per_queue"].items()}
    assert ends == {"a:0": 13, "a:1": 0, "b:0": 0, "b:1": 12}  # _filled: a's keys on queue 0, b's on queue 1


async def test_to_end_leaves_a_broker_without_a_readable_end_to_the_idle_rule() -> None:
    client = _filled(8, {"a": {0: "a0"}, "b": {0: "b0"}})
    client.down = {"b0"}
    report = await consume(None, "t", to_end=True, timeout=0.1, **FAST, client=client)
    assert report.count == 4 and report.per_queue["b:0"].end_offset is None
    assert report.per_queue["a:0"].end_offset == 4

    behind = _filled(4, queues=1)
    behind.dispatch_behind = {"a0": deque([1] * 100_000)}  # its index never catches up: no end is trusted
    late = await consume(None, "t", to_end=True, timeout=0.1, **FAST, client=behind)
    assert late.count == 4 and late.per_queue["a:0"].end_offset is None and late.per_queue["a:0"].caught_up


async def test_setup_errors() -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await consume(None, "nope", client=FakeClient())
    with pytest.raises(ToolError, match="name server"):
        await consume(None, "t")
    with pytest.raises(ToolError):
        await consume(None, "t", start="middle", client=FakeClient())  # type: ignore[arg-type]


def test_cli_consume(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    client = _filled(5)
    real = tools_cli.consume

    async def consume_with_fake(*args: object, **kwargs: object) -> object:
        return await real(*args, client=client, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tools_cli, "consume", consume_with_fake)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "t", "--idle-timeout", "0.05", "--json"])
    assert (args.start, args.group, args.read_from, args.commit) == (
        "earliest",
        "rocketmq-operator-consume",
        "auto",
        False,
    )
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 5
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "t", "--idle-timeout", "0.05"])
    assert args.func(args) == 0
    assert "5 (5 unique, 0 duplicates)" in capsys.readouterr().out
    args = parser.parse_args(
        ["consume", "--namesrv", "ns", "--topic", "t", "--idle-timeout", "3600", "--to-end", "--json"]
    )
    assert args.func(args) == 0  # an hour of idle timeout: --to-end ended it
    assert {q["end_offset"] for q in json.loads(capsys.readouterr().out)["per_queue"].values()} == {3, 2}
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "missing"])
    assert args.func(args) == 1 and "does not exist" in capsys.readouterr().err


def _refusing(code: int, n: int = 4) -> FakeClient:
    """A topic with messages whose every pull the broker refuses with ``code``."""
    client = _filled(n, {"a": {0: "a0"}, "b": {0: "b0"}})

    async def pull(addr: str, topic: str, queue_id: int, offset: int, *args: Any, **kwargs: Any) -> PullResult:
        client.pulls.append(PullCall(addr, queue_id, offset))
        raise RemotingError(code, "refused", addr=addr, request="PULL_MESSAGE")

    client.pull = pull  # type: ignore[method-assign]
    return client


async def test_no_pull_answered_is_a_failure_with_the_code_counts_and_a_hint() -> None:
    """Before, a run whose every pull was refused (NO_PERMISSION for a user without Sub) reported 0 messages
    like an empty topic, and the CLI exited 0."""
    report = await consume(None, "t", group="readers", **FAST, client=_refusing(ResponseCode.NO_PERMISSION))
    assert report.count == 0 and report.pulls == 0
    n = report.errors["NO_PERMISSION"]
    assert n >= 4 and report.to_json()["pulls"] == 0  # at least one refusal per queue (2 brokers x 2 queues)
    assert report.pull_failure() == (
        f"every pull failed: NO_PERMISSION={n} (the user needs Sub on Topic:t and on Group:readers (ACL 2.0))"
    )

    missing = await consume(None, "t", group="readers", **FAST, client=_refusing(26))
    failure = missing.pull_failure()
    assert failure is not None and failure.startswith("every pull failed: SUBSCRIPTION_GROUP_NOT_EXIST=")
    assert "'readers' does not exist" in failure and "declare a ConsumerGroup" in failure


def test_pull_failure_only_when_nothing_was_answered() -> None:
    def report(pulls: int, errors: dict[str, int]) -> ConsumeReport:
        return ConsumeReport("t", 0, 0, 0, "0" * 64, {}, {}, 0.1, errors=errors, group="g", pulls=pulls)

    assert report(0, {}).pull_failure() is None  # nothing to read from (no queue), nothing failed
    assert report(3, {"TIMEOUT": 5}).pull_failure() is None  # some pulls were answered
    assert report(0, {"COMMIT_TIMEOUT": 1}).pull_failure() is None  # the commit is reported on its own
    assert report(0, {"TIMEOUT": 2, "CONNECTION_ERROR": 7, "SYSTEM_BUSY": 2}).pull_failure() == (
        "every pull failed: CONNECTION_ERROR=7, SYSTEM_BUSY=2, TIMEOUT=2 (no broker of the route could be reached "
        "from here)"
    )
    assert report(0, {"SYSTEM_BUSY": 1}).pull_failure() == "every pull failed: SYSTEM_BUSY=1"


class _AdminRefused(RemotingClient):
    """A client whose every admin request a broker answers with NO_PERMISSION (a user without Update)."""

    def __init__(self) -> None:
        super().__init__("ns:9876")
        self.requests: list[tuple[str, int]] = []

    async def _call(self, addr: str, code: int, *args: Any, **kwargs: Any) -> RemotingCommand:
        self.requests.append((addr, code))
        raise RemotingError(ResponseCode.NO_PERMISSION, "no permission\nfor Group:g", addr=addr, request="X")


async def test_ensure_consumer_group_says_where_and_why_it_failed() -> None:
    """Before, a refused group creation was suppressed without a word."""
    client = _AdminRefused()
    route = make_route("t", {"a": {0: "a0", 1: "a1"}, "b": {1: "b1"}, "c": {0: "c0"}})
    problems = await ensure_consumer_group(client, route, "g", timeout=1.0)
    assert [addr for addr, _ in client.requests] == ["a0", "c0"]  # masters only
    assert problems == [
        "a (a0): X failed from a0: NO_PERMISSION (16): no permission for Group:g",
        "c (c0): X failed from c0: NO_PERMISSION (16): no permission for Group:g",
    ]


def _cli(monkeypatch: pytest.MonkeyPatch, client: FakeClient | None = None, **extra: Any) -> argparse.ArgumentParser:
    real = tools_cli.consume

    async def consume_with_fake(*args: object, **kwargs: object) -> object:
        report = await real(*args, client=client or _filled(1), **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(report, **extra) if extra else report

    monkeypatch.setattr(tools_cli, "consume", consume_with_fake)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))
    return parser


def test_cli_consume_every_pull_refused_exits_1_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = _cli(monkeypatch, _refusing(ResponseCode.NO_PERMISSION))
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "t", "--idle-timeout", "0.05", "--json"])
    assert args.func(args) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["count"] == 0  # the report still comes first
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: every pull failed: NO_PERMISSION=") and "needs Sub" in captured.err


def test_cli_consume_says_in_one_line_that_the_group_could_not_be_created(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = ("a (a0): failed: NO_PERMISSION (16): no", "b (b0): failed: NO_PERMISSION (16): no")
    parser = _cli(monkeypatch, group_errors=refused)
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "t", "--group", "g", "--idle-timeout", "0.05"])
    assert args.func(args) == 0  # the group existed: the pulls were answered
    err = capsys.readouterr().err
    assert err == (
        "warning: consumer group 'g' could not be looked up or created through the admin path on "
        "a (a0): failed: NO_PERMISSION (16): no; b (b0): failed: NO_PERMISSION (16): no\n"
    )


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--group", "bad!group"], ["--group 'bad!group'", "consumer group names match ^[%|a-zA-Z0-9_-]+$"]),
        (["--group", "g" * 256], ["is 256 characters long", "at most 255 characters", "shorter"]),
        (["--group", "g\n"], ["--group 'g\\n'", "fix: use only letters"]),
        (["--topic", "a.b"], ["--topic 'a.b'", "topic names match", "at most 127"]),
    ],
)
def test_cli_refuses_names_rocketmq_refuses_before_any_request(
    argv: list[str], words: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, `--group 'bad!group'` ran: every pull got SUBSCRIPTION_GROUP_NOT_EXIST and the exit code was 0."""
    client = _filled(1)
    for command in ("consume", "produce"):
        parser = _cli(monkeypatch, client)
        base = ["--namesrv", "ns", "--topic", "t"] + (["--count", "1"] if command == "produce" else [])
        args = parser.parse_args([command, *base, *argv])
        assert args.func(args) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1, captured.err
        for word in words:
            assert word.replace("consumer", "producer" if command == "produce" else "consumer") in captured.err
    assert client.pulls == [] and client.sends == [] and client.route_lookups == 0

"""Consumer: offsets, suggestion following, OFFSET_ILLEGAL/RETRY/errors, duplicates, commit, JSON shape."""

from __future__ import annotations

import argparse
import json
from collections import deque

import pytest
from tools_fakes import FakeClient, make_route

from rocketmq_operator.cli import tools as tools_cli
from rocketmq_operator.remoting import PullResult, RemotingConnectionError, RemotingError, ResponseCode
from rocketmq_operator.tools import ToolError, body_for, consume, digest_of

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
    args = parser.parse_args(["consume", "--namesrv", "ns", "--topic", "missing"])
    assert args.func(args) == 1 and "does not exist" in capsys.readouterr().err

"""Producer: retry classification, queue choice and retries through a fake client, report shape, CLI."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import ssl
import sys
from collections import Counter, deque
from collections.abc import Callable
from typing import Any

import pytest
from tools_fakes import FakeClient, SendCall, make_route

from rocketmq_operator.cli import tools as tools_cli
from rocketmq_operator.remoting import (
    RemotingConnectionError,
    RemotingTimeout,
    ResponseCode,
    ResponseFormatError,
    SendResult,
    put_status,
)
from rocketmq_operator.tools import (
    Decision,
    ProduceReport,
    SendRecord,
    SteadyProducer,
    ToolError,
    body_for,
    classify_exception,
    classify_result,
    produce,
    recovery_windows,
)
from rocketmq_operator.tools.produce import ProduceProgress, ack_gaps

ISR = (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough")
PRODUCE_KEYS = {
    "sent",
    "acknowledged",
    "statuses",
    "failures",
    "attempt_failures",
    "latency_ms",
    "elapsed_s",
    "msgs_per_s",
    "digest",
    "acknowledged_digest",
    "ack_gaps",
}


def _result(code: int, remark: str | None = None) -> SendResult:
    status = put_status(code, remark)
    return SendResult(status.name, status.stored, code, remark, "id", None, 0, 0 if status.stored else -1)


@pytest.mark.parametrize(
    ("code", "remark", "decision"),
    [
        (0, None, Decision.ACK),
        (ResponseCode.FLUSH_DISK_TIMEOUT, None, Decision.ACK),
        (ResponseCode.FLUSH_SLAVE_TIMEOUT, None, Decision.ACK),
        (ResponseCode.SLAVE_NOT_AVAILABLE, None, Decision.ACK),
        (ResponseCode.SYSTEM_ERROR, "in-sync replicas not enough", Decision.RETRY),
        (ResponseCode.SYSTEM_ERROR, None, Decision.RETRY),
        (ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy", Decision.RETRY),
        (ResponseCode.SERVICE_NOT_AVAILABLE, None, Decision.RETRY),
        (ResponseCode.TOPIC_NOT_EXIST, None, Decision.RETRY),
        (ResponseCode.NO_PERMISSION, None, Decision.RETRY),
        (ResponseCode.MESSAGE_ILLEGAL, None, Decision.FAIL),
        (ResponseCode.INVALID_PARAMETER, None, Decision.FAIL),
    ],
)
def test_classify_result(code: int, remark: str | None, decision: Decision) -> None:
    assert classify_result(_result(code, remark)) is decision


def test_classify_exception() -> None:
    assert classify_exception(RemotingTimeout("t")) == ("TIMEOUT", Decision.RETRY)
    assert classify_exception(RemotingConnectionError("c")) == ("CONNECTION_ERROR", Decision.RETRY)
    refused = RemotingConnectionError("connect to a:1 failed: certificate verify failed")
    refused.__cause__ = ssl.SSLCertVerificationError("certificate verify failed")
    assert classify_exception(refused) == ("TLS_HANDSHAKE", Decision.RETRY)  # counted apart: a trust problem
    assert classify_exception(ResponseFormatError("f")) == ("BAD_RESPONSE", Decision.FAIL)


def _two_brokers() -> FakeClient:
    return FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}, "b": {0: "b0", 1: "b1"}})})


async def test_all_put_ok_round_robin_keys_bodies_and_json_shape() -> None:
    client = _two_brokers()
    report = await produce(None, "t", 16, size=10, concurrency=3, key_prefix="k-", client=client)
    assert report.ok and report.sent == report.acknowledged == 16
    doc = report.to_json()
    assert set(doc) >= PRODUCE_KEYS and json.loads(json.dumps(doc)) == doc
    assert doc["statuses"] == {"PUT_OK": 16} and doc["failures"] == {} and doc["attempt_failures"] == {}
    assert set(doc["latency_ms"]) == {"p50", "p99", "max"} and all(v is not None for v in doc["latency_ms"].values())
    assert doc["digest"] == doc["acknowledged_digest"] and len(doc["digest"]) == 64
    assert doc["msgs_per_s"] > 0 and doc["elapsed_s"] >= 0
    # Masters only (b1 is a slave), every queue equally.
    assert Counter((c.addr, c.queue_id) for c in client.sends) == {(a, q): 2 for a in ("a0", "b0") for q in range(4)}
    assert sorted(c.key or "" for c in client.sends) == sorted(f"k-{i}" for i in range(16))
    assert all(c.body == body_for(c.key or "", 10) for c in client.sends)
    assert all(c.broker_name == ("a" if c.addr == "a0" else "b") for c in client.sends)


async def test_retryable_code_is_retried_on_another_broker_after_route_refresh() -> None:
    client = _two_brokers()
    client.send_outcomes = deque([(ResponseCode.SYSTEM_BUSY, "[REJECTREQUEST]system busy")])
    report = await produce(None, "t", 1, concurrency=1, client=client)
    assert report.ok and report.statuses == {"PUT_OK": 1}
    assert report.attempt_failures == {"SYSTEM_BUSY": 1} and report.failures == {}
    assert [c.addr for c in client.sends] == ["a0", "b0"]
    assert client.route_lookups == 2  # the initial lookup + the refresh after the failure
    assert report.records[0].attempts == 2


async def test_in_sync_replicas_not_enough_retried_on_another_queue_of_the_only_broker() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})
    client.send_outcomes = deque([ISR])
    report = await produce(None, "t", 1, concurrency=1, client=client)
    assert report.ok and report.attempt_failures == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 1}
    assert [c.queue_id for c in client.sends] == [0, 1]


async def test_stored_timeouts_are_acknowledged_and_never_retried() -> None:
    client = _two_brokers()
    client.send_outcomes = deque([ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.FLUSH_DISK_TIMEOUT])
    report = await produce(None, "t", 3, concurrency=1, key_prefix="s-", client=client)
    assert len(client.sends) == 3 and report.ok
    assert report.statuses == {"FLUSH_DISK_TIMEOUT": 1, "FLUSH_SLAVE_TIMEOUT": 1, "PUT_OK": 1}
    assert report.attempt_failures == {} and report.failures == {}
    assert report.acknowledged_digest == report.sent_digest


async def test_retries_exhausted() -> None:
    client = _two_brokers()
    client.send_outcomes = deque([ISR, ISR, ISR])
    report = await produce(None, "t", 1, concurrency=1, retries=2, client=client)
    assert not report.ok and report.acknowledged == 0
    assert report.statuses == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 1}
    assert report.failures == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 1}
    assert report.attempt_failures == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 3}
    assert report.latency_ms == {"p50": None, "p99": None, "max": None} and report.msgs_per_s == 0
    assert report.acknowledged_digest == "0" * 64 and report.sent_digest != "0" * 64
    assert [c.addr for c in client.sends] == ["a0", "b0", "a0"]


async def test_non_retryable_status_fails_at_once() -> None:
    client = _two_brokers()
    client.send_outcomes = deque([ResponseCode.MESSAGE_ILLEGAL])
    report = await produce(None, "t", 1, client=client)
    assert report.failures == {"MESSAGE_ILLEGAL": 1} and len(client.sends) == 1


async def test_connection_errors_and_timeouts_are_retried() -> None:
    client = _two_brokers()
    client.down = {"a0"}
    report = await produce(None, "t", 1, client=client)
    assert report.ok and report.attempt_failures == {"CONNECTION_ERROR": 1}
    assert [c.addr for c in client.sends] == ["a0", "b0"]

    client = _two_brokers()
    client.send_outcomes = deque([RemotingTimeout("no answer")])
    report = await produce(None, "t", 1, client=client)
    assert report.ok and report.attempt_failures == {"TIMEOUT": 1} and report.records[0].attempts == 2
    assert report.latency_ms["max"] is not None


async def test_bad_response_is_not_retried() -> None:
    client = _two_brokers()
    client.send_outcomes = deque([ResponseFormatError("garbage")])
    report = await produce(None, "t", 1, client=client)
    assert report.failures == {"BAD_RESPONSE": 1} and len(client.sends) == 1


async def test_topic_not_exist_on_broker_refreshes_route_then_uses_new_master() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "old"}})})

    def failover(call: SendCall) -> None:
        # The route moves to a new master once the old one answered TOPIC_NOT_EXIST.
        if call.addr == "old":
            client.routes["t"] = make_route("t", {"a": {0: "new"}})

    client.on_send = failover
    client.send_outcomes = deque([ResponseCode.TOPIC_NOT_EXIST])
    report = await produce(None, "t", 1, client=client)
    assert report.ok and [c.addr for c in client.sends] == ["old", "new"]


async def test_a_pinned_producer_sends_only_to_that_master_and_never_looks_the_route_up_again() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "old"}, "b": {0: "b0"}})})

    def failover(call: SendCall) -> None:
        client.routes["t"] = make_route("t", {"a": {0: "new"}, "b": {0: "b0"}})  # the route moves on at once

    client.on_send = failover
    client.down = {"old"}  # the old master stops answering: each send fails, and is retried on the same address
    report = await produce(None, "t", 4, concurrency=1, retries=1, client=client, pin_to="old")
    assert {c.addr for c in client.sends} == {"old"} and len(client.sends) == 8
    assert client.route_lookups == 1 and report.failures == {"CONNECTION_ERROR": 4}
    assert sorted({c.queue_id for c in client.sends}) == [0, 1, 2, 3]  # every queue of that master


async def test_pinning_to_an_address_that_is_no_master_of_the_topic_names_the_masters() -> None:
    client = _two_brokers()
    with pytest.raises(ToolError, match=r"--pin-to b1 is not the master .*\(its masters: a0, b0\); fix: pin"):
        await produce(None, "t", 1, client=client, pin_to="b1")
    assert client.sends == []


async def test_no_writable_master_gives_no_route() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {1: "a1"}})})
    report = await produce(None, "t", 2, client=client, retries=1)
    assert report.failures == {"NO_ROUTE": 2} and report.attempt_failures == {"NO_ROUTE": 4}
    assert client.sends == []


async def test_rate_limit_spreads_sends() -> None:
    client = _two_brokers()
    report = await produce(None, "t", 6, rate=100.0, concurrency=8, client=client)
    assert report.ok and report.elapsed_s >= 0.045


async def test_bad_arguments() -> None:
    client = _two_brokers()
    for kwargs in ({"size": -1}, {"concurrency": 0}, {"rate": -1.0}, {"retries": -1}, {"timeout": 0.0}):
        with pytest.raises(ToolError):
            await produce(None, "t", 1, client=client, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="name server"):
        await produce(None, "t", 1)


async def test_missing_topic_without_creation_is_waited_for_timeout_times_attempts_only() -> None:
    """`--no-create-topic --timeout 3 --retries 0` on a missing topic waited ensure_topic's 30 s; the wait is
    now the message's own budget, (1 + retries) x timeout, and the refusal names the topic and the fix."""
    client = FakeClient()
    with pytest.raises(ToolError) as raised:
        await produce(None, "missing", 1, create_topic=False, timeout=0.04, retries=0, client=client)
    message = str(raised.value)
    assert "topic 'missing' does not exist: namesrv had no route for it for 0.04s" in message, message
    assert "fix: drop --no-create-topic" in message and "declare a Topic" in message, message
    assert client.route_lookups >= 1 and client.created == [] and client.sends == []
    with pytest.raises(ToolError, match=r"for 0\.12s"):
        await produce(None, "missing", 1, create_topic=False, timeout=0.04, retries=2, client=FakeClient())


async def test_a_late_name_server_is_asked_again_whatever_the_message_timeout() -> None:
    """`--timeout 1 --retries 0` (the pinned producer of the frozen-master e2e test) gave up on the whole run when
    its first route lookup timed out beside a CPU hog; a lookup that fails (not a missing topic) is now tried again
    for ensure_topic's 30 s at least, then the sends go on."""
    client = _two_brokers()
    client.route_errors = 3  # three lookups time out, the fourth answers
    report = await produce(None, "t", 2, timeout=0.01, retries=0, client=client, create_topic=False)
    assert report.ok and client.route_lookups >= 4, (report.failures, client.route_lookups)


def _rec(seq: int, start: float, end: float, ok: bool) -> SendRecord:
    return SendRecord(seq, f"k{seq}", start, end, (end - start) * 1000, "PUT_OK" if ok else "TIMEOUT", ok, 1)


def test_recovery_windows_openchaos_definition() -> None:
    records = [
        _rec(0, 0.0, 0.1, True),
        _rec(1, 1.0, 4.0, False),  # window opens at 1.0 (response 4.0 minus latency)
        _rec(2, 2.0, 4.5, False),
        _rec(3, 5.0, 5.2, True),  # closes at 5.2
        _rec(4, 5.5, 6.0, False),  # < 2 s after the close: ignored
        _rec(5, 6.1, 6.2, True),
        _rec(7, 4.8, 8.5, False),  # sent before the first window closed, answered late: a straggler, ignored
        _rec(6, 9.0, 9.5, False),  # opens at 9.0, never closes
    ]
    windows = recovery_windows(reversed(records))
    assert [(w.start, w.end, w.failed) for w in windows] == [(1.0, 5.2, 2), (9.0, None, 1)]
    assert windows[0].recovery_s == pytest.approx(4.2) and windows[1].recovery_s is None
    assert recovery_windows(records, gap_s=0.0)[1].start == 5.5


def test_the_report_names_each_pause_between_acknowledgements() -> None:
    records = [
        _rec(0, 0.0, 0.1, True),
        _rec(1, 0.2, 0.3, True),
        _rec(2, 0.4, 3.4, False),  # failures do not end a pause
        _rec(3, 0.5, 2.9, True),  # answered out of order: pauses are read in answer order
        _rec(4, 3.0, 3.5, True),  # 0.6 s after the last: no pause
        _rec(5, 3.6, 4.5, True),  # exactly 1 s: a pause
    ]
    report = ProduceReport.from_records("t", "k", 8, records, 5.0)
    assert report.ack_gaps == ((0.3, 2.9), (3.5, 4.5))
    assert report.to_json()["ack_gaps"] == [
        {"after": 0.3, "until": 2.9, "s": 2.6},
        {"after": 3.5, "until": 4.5, "s": 1.0},
    ]
    assert ack_gaps([]) == () and ack_gaps([1.0]) == ()


async def test_steady_producer_records_every_message_and_outage() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0"}})})
    steady = SteadyProducer("t", 200.0, client=client, size=8, retries=0, key_prefix="s-")

    async def until(what: Callable[[tuple[SendRecord, ...]], bool]) -> None:
        # On events, not on time: at load 20 a 0.1 s sleep saw fewer sends than the rate promised.
        while not what(steady.records):
            await asyncio.sleep(0.005)

    async with steady:
        await until(lambda rs: sum(r.ok for r in rs) >= 5)
        client.down = {"a0"}
        await until(lambda rs: sum(not r.ok for r in rs) >= 5)
        client.down = set()
        failed = len(steady.records)
        await until(lambda rs: sum(r.ok for r in rs[failed:]) >= 5)
    records = steady.records
    assert [r.seq for r in records] == list(range(len(records))) and len(records) >= 15
    assert all(r.start <= r.end for r in records)
    assert any(not r.ok for r in records) and records[-1].ok
    windows = steady.recovery_windows()
    assert len(windows) == 1 and windows[0].end is not None
    report = steady.report()
    assert report.sent == len(records) and report.failures == {"CONNECTION_ERROR": report.sent - report.acknowledged}
    assert not steady.running


def test_cli_produce_json_and_exit_codes(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    client = _two_brokers()
    real = tools_cli.produce

    async def produce_with_fake(*args: object, **kwargs: object) -> object:
        return await real(*args, client=client, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tools_cli, "produce", produce_with_fake)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))

    args = parser.parse_args(["produce", "--namesrv", "ns:9876", "--topic", "t", "--count", "5", "--json"])
    assert (args.size, args.concurrency, args.retries, args.timeout, args.create_topic) == (1024, 8, 2, 3.0, True)
    assert args.func(args) == 0
    assert set(json.loads(capsys.readouterr().out)) >= PRODUCE_KEYS

    client.send_outcomes = deque([ISR, ISR, ISR])
    args = parser.parse_args(["produce", "--namesrv", "ns:9876", "--topic", "t", "--count", "2", "--no-create-topic"])
    assert args.func(args) == 1
    captured = capsys.readouterr()
    assert "acknowledged" in captured.out and "IN_SYNC_REPLICAS_NOT_ENOUGH=1" in captured.out
    assert "not every message was acknowledged: 1 of 2 failed" in captured.err

    args = parser.parse_args(["produce", "--namesrv", "ns:9876", "--topic", "missing", "--count", "1"])
    assert args.func(args) == 1
    assert "error:" in capsys.readouterr().err

    argv = ["--topic", "missing", "--count", "1", "--no-create-topic", "--timeout", "0.05", "--retries", "0"]
    args = parser.parse_args(["produce", "--namesrv", "ns:9876", *argv])
    assert args.func(args) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("error: topic 'missing' does not exist") and "for 0.05s" in captured.err
    assert "drop --no-create-topic" in captured.err and "declare a Topic" in captured.err


def test_cli_produce_ctrl_c_prints_the_partial_report_and_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three answers (one IN_SYNC_REPLICAS_NOT_ENOUGH with no retry left, two PUT_OK), then Ctrl-C during the
    fourth send: the report of those three, on stdout as usual, and 130."""
    client = _two_brokers()
    client.send_outcomes = deque([ISR])
    real_send = client.send
    calls: list[int] = []

    async def send(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return await real_send(*args, **kwargs)

    monkeypatch.setattr(client, "send", send)
    real = tools_cli.produce

    async def produce_with_fake(*args: object, **kwargs: object) -> object:
        return await real(*args, client=client, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tools_cli, "produce", produce_with_fake)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))
    argv = ["produce", "--namesrv", "ns:9876", "--topic", "t", "--count", "100", "--concurrency", "1", "--retries", "0"]
    args = parser.parse_args([*argv, "--json"])
    assert args.func(args) == 130
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["interrupted"] is True and doc["sent"] == 3 and doc["acknowledged"] == 2
    assert doc["failures"] == {"IN_SYNC_REPLICAS_NOT_ENOUGH": 1} and doc["statuses"]["PUT_OK"] == 2
    assert doc["msgs_per_s"] > 0  # the rate of the acknowledged sends so far
    assert "interrupted: partial report of 3 answered sends of 100" in captured.err

    calls.clear()
    client.send_outcomes = deque([ISR])
    args = parser.parse_args(argv)
    assert args.func(args) == 130
    out = capsys.readouterr().out
    assert "acknowledged      2 (66.7%)" in out and "IN_SYNC_REPLICAS_NOT_ENOUGH=1" in out and "msgs/s" in out


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_counts_new_answers_and_the_rate_of_the_last_interval() -> None:
    progress = ProduceProgress()
    line = _Terminal()
    progress_line = tools_cli.ProgressLine(progress, 10, line)
    assert progress_line.text(1.0) is None  # no send started yet (the topic is being set up)
    progress.started = 0.0
    progress.records.extend([_rec(0, 0, 1, True), _rec(1, 0, 1, False), _rec(2, 0, 1, True)])
    assert progress_line.text(2.0) == "produce: 3/10 sent  2 acknowledged  1 failed  1.0 msgs/s"
    progress.records.extend(_rec(i, 0, 1, True) for i in range(3, 9))
    assert progress_line.text(2.5) == "produce: 9/10 sent  8 acknowledged  1 failed  12.0 msgs/s"


async def test_with_progress_rewrites_one_line_and_erases_it() -> None:
    progress = ProduceProgress(started=0.0)
    terminal = _Terminal()
    line = tools_cli.ProgressLine(progress, 5, terminal)

    async def run() -> str:
        for i in range(5):
            progress.records.append(_rec(i, 0, 1, True))
            while terminal.getvalue().count("\r") <= i:  # one update per answer, whatever the machine's speed
                await asyncio.sleep(0)
        return "done"

    assert await tools_cli.with_progress(run(), line, 0.0) == "done"
    out = terminal.getvalue()
    assert "\n" not in out and out.endswith("\r\x1b[K")  # one line, rewritten in place, erased at the end
    updates = [u.removesuffix("\x1b[K") for u in out.split("\r") if u.removesuffix("\x1b[K")]
    assert updates[0].startswith("produce: 1/5 sent  1 acknowledged  0 failed")
    assert updates[-1].startswith("produce: 5/5 sent  5 acknowledged  0 failed")


def test_cli_produce_shows_progress_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A long produce showed nothing until its report; on a terminal it now shows one progress line."""
    client = _two_brokers()
    real = tools_cli.produce

    async def produce_with_fake(*args: object, **kwargs: object) -> ProduceReport:
        return await real(*args, client=client, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tools_cli, "produce", produce_with_fake)
    monkeypatch.setattr(tools_cli, "PROGRESS_INTERVAL_S", 0.001)
    parser = argparse.ArgumentParser()
    tools_cli.register(parser.add_subparsers(dest="command"))
    argv = ["produce", "--namesrv", "ns:9876", "--topic", "t", "--count", "20", "--rate", "400", "--json"]

    args = parser.parse_args(argv)
    assert args.func(args) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and json.loads(captured.out)["acknowledged"] == 20  # a pipe: as before

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["acknowledged"] == 20
    err = terminal.getvalue()
    assert "\rproduce: " in err and " acknowledged " in err and "msgs/s" in err and err.endswith("\r\x1b[K")
    assert "\n" not in err

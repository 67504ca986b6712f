"""Connection and ClientPool against an in-process fake server: matching, timeouts, broken peers.

No wall-clock bounds: which deadline ended a call is read from the ``asyncio.timeout`` scope that the
connection opened (the ``deadlines`` fixture), and "failed at once" means it failed with the connection's own
error, not with the timeout (a loaded machine stretches the wall clock, not the order of events).
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import struct
from collections.abc import Awaitable, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from remoting_fakes import FakeConn, FakeServer, Handler

from rocketmq_operator.remoting import connection as connection_module
from rocketmq_operator.remoting.codec import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    RemotingCommand,
    SerializeType,
    decode_payload,
    encode_command,
)
from rocketmq_operator.remoting.connection import ClientPool, Connection, parse_addr
from rocketmq_operator.remoting.errors import RemotingConnectionError, RemotingException, RemotingTimeout

Start = Callable[[Handler], Awaitable[FakeServer]]


async def echo(conn: FakeConn) -> None:
    while True:
        request = await conn.read_request()
        if not request.is_oneway:
            await conn.reply(request, 0, remark="ok", ext_fields=request.ext_fields, body=request.body)


def req(n: int = 0, **fields: str) -> RemotingCommand:
    return RemotingCommand(code=105, ext_fields={"n": str(n), **fields}, body=f"b{n}".encode())


@dataclasses.dataclass
class Deadlines:
    """Every ``asyncio.timeout`` scope opened during a test, with the delay it was given."""

    scopes: list[tuple[float | None, asyncio.Timeout]] = dataclasses.field(default_factory=list)

    def given(self) -> list[float | None]:
        return [delay for delay, _ in self.scopes]

    def expired(self) -> list[float | None]:
        """The delays of the scopes whose deadline fired."""
        return [delay for delay, scope in self.scopes if scope.expired()]


@pytest.fixture
def deadlines(monkeypatch: pytest.MonkeyPatch) -> Deadlines:
    """Records the deadlines the connection sets: it calls asyncio.timeout through the module, patched here."""
    real = asyncio.timeout
    found = Deadlines()

    def recording(delay: float | None) -> asyncio.Timeout:
        scope = real(delay)
        found.scopes.append((delay, scope))
        return scope

    monkeypatch.setattr(asyncio, "timeout", recording)
    return found


async def test_invoke_matches_response(fake_server: Start) -> None:
    server = await fake_server(echo)
    conn = await Connection.open(server.addr)
    try:
        response = await conn.invoke(req(1), timeout=2)
        assert response.is_response and response.code == 0 and response.remark == "ok"
        assert response.ext_fields == {"n": "1"} and response.body == b"b1"
        assert response.language == "JAVA"
        assert conn.pending == 0
    finally:
        await conn.close()


async def test_out_of_order_responses(fake_server: Start) -> None:
    async def reverse(conn: FakeConn) -> None:
        batch = [await conn.read_request() for _ in range(5)]
        for request in reversed(batch):
            kind = SerializeType(int(request.ext_fields["n"]) % 2)
            await conn.reply(request, ext_fields={"n": request.ext_fields["n"]}, serialize_type=kind)
        await echo(conn)

    server = await fake_server(reverse)
    conn = await Connection.open(server.addr)
    try:
        results = await asyncio.gather(*(conn.invoke(req(i), timeout=2) for i in range(5)))
        assert [r.ext_fields["n"] for r in results] == ["0", "1", "2", "3", "4"]
        assert {r.serialize_type for r in results} == {SerializeType.JSON, SerializeType.ROCKETMQ}
    finally:
        await conn.close()


async def test_timeout_then_connection_still_usable(fake_server: Start, deadlines: Deadlines) -> None:
    async def late(conn: FakeConn) -> None:
        first = await conn.read_request()
        second = await conn.read_request()
        await conn.reply(first, 0, remark="late")  # after the client gave up: must be dropped
        await conn.reply(second, 0, remark="second")

    server = await fake_server(late)
    conn = await Connection.open(server.addr)
    try:
        connect_scopes = len(deadlines.scopes)
        with pytest.raises(RemotingTimeout, match=r"GET_ROUTEINFO_BY_TOPIC to .* timed out after 0.1s"):
            await conn.invoke(req(1), timeout=0.1)
        # The call's own 0.1 s deadline ended it (the server answers only after the next request): not a default.
        assert deadlines.given()[connect_scopes:] == [0.1] and deadlines.expired() == [0.1]
        response = await conn.invoke(req(2), timeout=2)
        assert response.remark == "second"
        assert not conn.closed
    finally:
        await conn.close()


async def test_server_closing_mid_frame_fails_all_pending(fake_server: Start, deadlines: Deadlines) -> None:
    async def half(conn: FakeConn) -> None:
        for _ in range(3):
            await conn.read_request()
        full = encode_command(RemotingCommand(code=0, opaque=1, flag=FLAG_RESPONSE, body=b"x" * 50))
        await conn.send_raw(full[:20])

    server = await fake_server(half)
    conn = await Connection.open(server.addr)
    results = await asyncio.gather(*(conn.invoke(req(i), timeout=60) for i in range(3)), return_exceptions=True)
    for result in results:
        # At once, by the close: a pending call left to its timeout would raise RemotingTimeout instead.
        assert isinstance(result, RemotingConnectionError) and not isinstance(result, RemotingTimeout)
        assert "mid-frame (16 of" in str(result)
    assert deadlines.expired() == []
    assert conn.closed
    with pytest.raises(RemotingConnectionError, match="is closed: peer closed the connection mid-frame"):
        await conn.invoke(req(9), timeout=1)
    await conn.close()


async def test_server_closing_cleanly(fake_server: Start) -> None:
    async def close_after_read(conn: FakeConn) -> None:
        await conn.read_request()

    server = await fake_server(close_after_read)
    conn = await Connection.open(server.addr)
    with pytest.raises(RemotingConnectionError, match=r"peer closed the connection$"):
        await conn.invoke(req(), timeout=60)
    await conn.close()


@pytest.mark.parametrize(
    ("garbage", "message"),
    [
        (b"\xff\xff\xff\xfegarbage", "malformed frame .* bad frame length -2"),
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "malformed frame .* exceeds the maximum"),
        (struct.pack(">ii", 12, 8) + b"{garbage", "malformed frame .* not valid JSON"),
        (struct.pack(">ii", 8, 0x09000004) + b"abcd", "unknown serialize type 9"),
    ],
)
async def test_server_sending_garbage(fake_server: Start, deadlines: Deadlines, garbage: bytes, message: str) -> None:
    async def junk(conn: FakeConn) -> None:
        await conn.read_request()
        await conn.send_raw(garbage)
        await asyncio.sleep(10)

    server = await fake_server(junk)
    conn = await Connection.open(server.addr)
    with pytest.raises(RemotingConnectionError, match=message):
        await conn.invoke(req(), timeout=60)
    assert deadlines.expired() == []  # failed on the garbage, not left to the call's 5 s deadline
    assert conn.closed
    await conn.close()


async def test_oneway_and_server_requests(fake_server: Start) -> None:
    seen: list[RemotingCommand] = []
    done = asyncio.Event()

    async def server_side(conn: FakeConn) -> None:
        seen.append(await conn.read_request())  # the oneway
        # A server-initiated request (e.g. NOTIFY_BROKER_ROLE_CHANGED) expecting an answer.
        await conn.send_raw(encode_command(RemotingCommand(code=1008, opaque=77, language="JAVA")))
        seen.append(await conn.read_request())
        done.set()
        await asyncio.sleep(10)

    server = await fake_server(server_side)
    conn = await Connection.open(server.addr)
    try:
        await conn.invoke_oneway(req(5), timeout=1)
        await asyncio.wait_for(done.wait(), 2)
        assert seen[0].flag & FLAG_ONEWAY and seen[0].ext_fields["n"] == "5"
        answer = seen[1]
        assert answer.opaque == 77 and answer.is_response and answer.code == 3
    finally:
        await conn.close()


async def test_request_handler(fake_server: Start) -> None:
    answers: list[RemotingCommand] = []
    done = asyncio.Event()

    async def server_side(conn: FakeConn) -> None:
        await conn.send_raw(encode_command(RemotingCommand(code=1008, opaque=5, ext_fields={"masterEpoch": "3"})))
        answers.append(await conn.read_request())
        done.set()
        await asyncio.sleep(10)

    received: list[RemotingCommand] = []

    def handler(request: RemotingCommand) -> RemotingCommand:
        received.append(request)
        return RemotingCommand(code=0, remark="thanks")

    server = await fake_server(server_side)
    conn = await Connection.open(server.addr, on_request=handler)
    try:
        await asyncio.wait_for(done.wait(), 2)
        assert received[0].ext_fields == {"masterEpoch": "3"}
        assert answers[0].opaque == 5 and answers[0].remark == "thanks" and answers[0].is_response
    finally:
        await conn.close()


async def test_close_fails_pending_calls(fake_server: Start) -> None:
    async def silent(conn: FakeConn) -> None:
        await asyncio.sleep(10)

    server = await fake_server(silent)
    conn = await Connection.open(server.addr)
    call = asyncio.create_task(conn.invoke(req(), timeout=60))
    await asyncio.sleep(0.05)
    await conn.close()
    with pytest.raises(RemotingConnectionError, match="closed by client"):
        await call


async def test_connect_refused_fails_on_the_refusal_not_the_timeout(deadlines: Deadlines) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(RemotingConnectionError, match=f"connect to 127.0.0.1:{port} failed") as caught:
        await Connection.open(f"127.0.0.1:{port}", connect_timeout=2)
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert deadlines.given() == [2] and deadlines.expired() == []


async def test_connect_timeout(monkeypatch: pytest.MonkeyPatch, deadlines: Deadlines) -> None:
    async def never(*args: object, **kwargs: object) -> None:
        await asyncio.sleep(10)

    monkeypatch.setattr(connection_module.asyncio, "open_connection", never)
    with pytest.raises(RemotingConnectionError, match=r"timed out after 0\.05s"):
        await Connection.open("10.1.2.3:9876", connect_timeout=0.05)
    assert deadlines.expired() == [0.05]


@pytest.mark.parametrize("addr", ["nohost", "host:", ":99", "h:0", "h:70000", "h:x"])
def test_bad_addresses(addr: str) -> None:
    with pytest.raises(RemotingConnectionError, match="bad address"):
        parse_addr(addr)


def test_ipv6_address() -> None:
    assert parse_addr("[::1]:10911") == ("::1", 10911)


async def test_pool_reconnects_lazily(fake_server: Start) -> None:
    async def one_answer(conn: FakeConn) -> None:
        request = await conn.read_request()
        await conn.reply(request, 0)
        # then hang up

    server = await fake_server(one_answer)
    pool = ClientPool(request_timeout=2)
    try:
        assert (await pool.invoke(server.addr, req())).code == 0
        first = await pool.get(server.addr)
        for _ in range(100):
            if first.closed:
                break
            await asyncio.sleep(0.01)
        assert first.closed and server.addr not in pool
        assert (await pool.invoke(server.addr, req())).code == 0
        assert server.connections == 2
    finally:
        await pool.close()
    with pytest.raises(RemotingConnectionError, match="pool is closed"):
        await pool.get(server.addr)


async def test_pool_drops_silent_connection_after_timeout(fake_server: Start) -> None:
    async def silent(conn: FakeConn) -> None:
        await asyncio.sleep(10)

    server = await fake_server(silent)
    pool = ClientPool(request_timeout=0.05)
    try:
        with pytest.raises(RemotingTimeout):
            await pool.invoke(server.addr, req())
        assert server.addr not in pool
    finally:
        await pool.close()


async def test_close_does_not_wait_for_a_peer_that_stopped_reading() -> None:
    """A peer that accepts and never reads again (as a lost node's broker): the requests still buffered for it
    are dropped on close, which returns instead of waiting for a flush that never comes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        connection = await Connection.open(f"127.0.0.1:{listener.getsockname()[1]}")
        peer, _ = listener.accept()
        frame = encode_command(req())
        while connection._writer.transport.get_write_buffer_size() == 0:  # the kernel's buffers are full
            connection._writer.write(frame * 4096)
            await asyncio.sleep(0)
        # A hang guard only (the close must not wait for the peer at all): without the fix it never returns.
        await asyncio.wait_for(connection.close(), timeout=60)
        assert connection.closed and connection._writer.transport.is_closing()
        peer.close()
    finally:
        listener.close()


async def test_concurrent_callers_share_one_connect_and_its_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eight sends in flight to a host that is gone: one connect attempt, and all eight fail when it fails, not
    one after the other (a connect timeout each: the node-loss test saw sends held 15-36 s)."""
    attempts: list[str] = []
    gone = asyncio.Event()

    async def unanswered_connect(addr: str, **_: object) -> Connection:
        attempts.append(addr)
        await gone.wait()  # the connect timeout, as an event
        raise RemotingConnectionError(f"connect to {addr} timed out after 3s", addr)

    monkeypatch.setattr(Connection, "open", staticmethod(unanswered_connect))
    pool = ClientPool()
    callers = [asyncio.ensure_future(pool.get("10.213.1.2:10911")) for _ in range(8)]
    while not attempts:
        await asyncio.sleep(0)
    for _ in range(20):
        await asyncio.sleep(0)  # every caller has reached the pool
    assert attempts == ["10.213.1.2:10911"]
    gone.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(r, RemotingConnectionError) for r in results), results
    assert attempts == ["10.213.1.2:10911"]  # one attempt failed all eight
    with pytest.raises(RemotingConnectionError):
        await pool.get("10.213.1.2:10911")  # a later caller tries again
    assert len(attempts) == 2
    await pool.close()


async def test_a_caller_that_gives_up_does_not_cancel_the_shared_connect(fake_server: Start) -> None:
    server = await fake_server(echo)
    pool = ClientPool()
    try:
        impatient = asyncio.ensure_future(pool.get(server.addr))
        patient = asyncio.ensure_future(pool.get(server.addr))
        await asyncio.sleep(0)
        impatient.cancel()
        connection = await patient
        assert not connection.closed and server.addr in pool
        with pytest.raises(asyncio.CancelledError):
            await impatient
    finally:
        await pool.close()


async def test_a_call_timing_out_does_not_fail_a_slower_call_beside_it(fake_server: Start) -> None:
    """A short call that gives up while a slow one waits on the same connection (found: a bench's 0.1 s role read
    beside a controller's election under load; the election was failed with "closed by client", although it had
    elected): the new call gets a new connection, the slow call its answer, and the old connection is closed
    after it."""
    both_read = asyncio.Event()
    answer_slow = asyncio.Event()

    async def answers_the_first_late(conn: FakeConn) -> None:
        if server.connections > 1:  # the new connection: answer at once
            await echo(conn)
            return
        requests = [await conn.read_request(), await conn.read_request()]
        slow = next(r for r in requests if r.ext_fields["n"] == "1")  # the other, the short call: never answered
        both_read.set()
        await answer_slow.wait()
        await conn.reply(slow, 0, remark="elected")
        await asyncio.sleep(10)

    server = await fake_server(answers_the_first_late)
    pool = ClientPool()
    try:
        slow = asyncio.create_task(pool.invoke(server.addr, req(1), timeout=30))
        short = asyncio.create_task(pool.invoke(server.addr, req(2), timeout=0.05))
        with pytest.raises(RemotingTimeout):
            await short
        await both_read.wait()
        [(old, closing)] = pool._retiring.items()
        assert server.addr not in pool and not old.closed  # retired: no new call, the slow one still waiting
        assert (await pool.invoke(server.addr, req(3), timeout=30)).code == 0
        assert server.connections == 2
        answer_slow.set()
        assert (await slow).remark == "elected"
        await closing  # closed once its last call ended
        assert old.closed and not pool._retiring
    finally:
        await pool.close()


async def test_pool_keeps_connection_that_answers_others(fake_server: Start) -> None:
    first_read = asyncio.Event()

    async def answers_second_only(conn: FakeConn) -> None:
        await conn.read_request()
        first_read.set()
        second = await conn.read_request()
        await conn.reply(second, 0)
        await asyncio.sleep(10)

    server = await fake_server(answers_second_only)
    pool = ClientPool()
    try:
        slow = asyncio.create_task(pool.invoke(server.addr, req(1), timeout=0.3))
        await first_read.wait()  # the unanswered request is the server's first, whatever the load
        assert (await pool.invoke(server.addr, req(2), timeout=1)).code == 0
        with pytest.raises(RemotingTimeout):
            await slow
        assert server.addr in pool
    finally:
        await pool.close()


# ----------------------------------------------------------------------------------------- fuzzing


async def _garbage_scenario(garbage: bytes) -> RemotingCommand | RemotingException:
    """The answer to one call whose server answers ``garbage`` and hangs up: a response or the error raised."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        decode_payload(await reader.readexactly(length))
        writer.write(garbage)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        conn = await Connection.open(f"127.0.0.1:{port}")
        try:
            return await conn.invoke(req(), timeout=60)
        except RemotingException as exc:
            return exc
        finally:
            await conn.close()
    finally:
        server.close()
        await server.wait_closed()


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=120))
def test_any_garbage_from_server_yields_a_clear_error_before_the_timeout(garbage: bytes) -> None:
    # Garbage then a hang-up ends the call at once, with a clear error (or the response the bytes happened to
    # form): a call that waited for its deadline would end in RemotingTimeout.
    outcome = asyncio.run(_garbage_scenario(garbage))
    assert not isinstance(outcome, RemotingTimeout), outcome
    if isinstance(outcome, RemotingException):
        assert str(outcome), "an error without a message"

"""One TCP connection to a RocketMQ server, and a pool of them keyed by address.

Contract:

* :meth:`Connection.open` connects within ``connect_timeout`` or raises
  :class:`RemotingConnectionError` (refused, unreachable, or timed out - nothing was sent).
* :meth:`Connection.invoke` sends a request under a fresh ``opaque`` and returns the response with the
  same ``opaque``; responses may arrive in any order. With no response within ``timeout`` it raises
  :class:`RemotingTimeout` and the connection stays usable (a late response is dropped).
* A background reader owns the socket's read side. When the peer closes (also mid-frame), sends a
  malformed frame, or the socket fails, the connection is closed and **every** pending call fails at
  once with :class:`RemotingConnectionError` saying why; later calls fail the same way immediately.
* Requests initiated by the server (e.g. NOTIFY_BROKER_ROLE_CHANGED) go to ``on_request`` if given;
  otherwise a non-oneway one is answered with REQUEST_CODE_NOT_SUPPORTED.
* :class:`ClientPool` keeps one connection per ``"host:port"`` and (re)connects lazily on the next call
  after a connection was lost; it never retries a call itself. A timed-out call on a connection that
  has received nothing since the call was sent is taken as a dead peer and the connection is dropped.
  With ``credentials`` every request is signed (:mod:`.auth`) before it is sent. With ``tls`` every
  connection is TLS (:mod:`.tls`), the server's certificate checked against the host dialled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import struct
from collections.abc import Callable, Mapping

from .auth import SessionCredentials, sign
from .codec import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MAX_FRAME_LENGTH,
    RemotingCommand,
    check_frame_length,
    decode_payload,
    encode_command,
)
from .codes import ResponseCode, request_code_name
from .errors import FrameError, RemotingConnectionError, RemotingException, RemotingTimeout
from .tls import ClientTls

log = logging.getLogger(__name__)

RequestHandler = Callable[[RemotingCommand], RemotingCommand | None]

DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_REQUEST_TIMEOUT = 3.0


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` or ``"[v6]:port"`` -> (host, port); raises :class:`RemotingConnectionError`."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RemotingConnectionError(f"bad address {addr!r}: expected host:port", addr)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class Connection:
    """A connected remoting client channel. Create with :meth:`open`."""

    def __init__(
        self,
        addr: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        on_request: RequestHandler | None = None,
        max_frame_length: int = MAX_FRAME_LENGTH,
    ) -> None:
        self.addr = addr
        self._reader = reader
        self._writer = writer
        self._on_request = on_request
        self._max_frame_length = max_frame_length
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._opaques = itertools.count(1)
        self._closed_reason: str | None = None
        self._loop = asyncio.get_running_loop()
        self.last_received = self._loop.time()
        """Loop time of the last whole frame received (or of the connect)."""
        self._reader_task = self._loop.create_task(self._read_loop(), name=f"remoting-reader-{addr}")

    @classmethod
    async def open(
        cls,
        addr: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        on_request: RequestHandler | None = None,
        max_frame_length: int = MAX_FRAME_LENGTH,
        tls: ClientTls | None = None,
    ) -> Connection:
        host, port = parse_addr(addr)
        try:
            async with asyncio.timeout(connect_timeout):
                if tls is None:
                    reader, writer = await asyncio.open_connection(host, port)
                else:
                    reader, writer = await asyncio.open_connection(
                        host, port, ssl=tls.context(), server_hostname=host, ssl_handshake_timeout=connect_timeout
                    )
        except TimeoutError:
            raise RemotingConnectionError(f"connect to {addr} timed out after {connect_timeout:g}s", addr) from None
        except OSError as exc:
            raise RemotingConnectionError(f"connect to {addr} failed: {exc}", addr) from exc
        return cls(addr, reader, writer, on_request=on_request, max_frame_length=max_frame_length)

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def closed_reason(self) -> str | None:
        return self._closed_reason

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _next_opaque(self) -> int:
        return next(self._opaques) & 0x7FFFFFFF

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise RemotingConnectionError(f"connection to {self.addr} is closed: {self._closed_reason}", self.addr)

    async def invoke(self, request: RemotingCommand, timeout: float = DEFAULT_REQUEST_TIMEOUT) -> RemotingCommand:
        """Send ``request`` (its opaque is replaced) and wait for the matching response."""
        self._check_open()
        opaque = self._next_opaque()
        command = dataclasses.replace(request, opaque=opaque, flag=request.flag & ~(FLAG_RESPONSE | FLAG_ONEWAY))
        frame = encode_command(command)
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        self._pending[opaque] = future
        what = f"{request_code_name(request.code)} to {self.addr}"
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(frame)
                await self._writer.drain()
                return await future
        except TimeoutError:
            raise RemotingTimeout(f"{what} timed out after {timeout:g}s (opaque {opaque})", self.addr) from None
        except RemotingException:
            raise
        except OSError as exc:
            self._shutdown(f"write failed: {exc}")
            raise RemotingConnectionError(f"{what} failed: {exc}", self.addr) from exc
        finally:
            self._pending.pop(opaque, None)
            if future.done() and not future.cancelled():
                future.exception()  # a shutdown may have failed it after we stopped waiting: mark it seen

    async def invoke_oneway(self, request: RemotingCommand, timeout: float = DEFAULT_REQUEST_TIMEOUT) -> None:
        """Send ``request`` with the oneway flag; no response is expected."""
        self._check_open()
        command = dataclasses.replace(
            request, opaque=self._next_opaque(), flag=(request.flag | FLAG_ONEWAY) & ~FLAG_RESPONSE
        )
        frame = encode_command(command)
        what = f"oneway {request_code_name(request.code)} to {self.addr}"
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(frame)
                await self._writer.drain()
        except TimeoutError:
            raise RemotingTimeout(f"{what} timed out after {timeout:g}s", self.addr) from None
        except OSError as exc:
            self._shutdown(f"write failed: {exc}")
            raise RemotingConnectionError(f"{what} failed: {exc}", self.addr) from exc

    async def _read_loop(self) -> None:
        reason = "closed"
        try:
            while True:
                try:
                    head = await self._reader.readexactly(4)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial:
                        reason = f"peer closed the connection mid-frame ({len(exc.partial)} of 4 length bytes)"
                    else:
                        reason = "peer closed the connection"
                    return
                (length,) = struct.unpack(">i", head)
                check_frame_length(length, self._max_frame_length)
                try:
                    payload = await self._reader.readexactly(length)
                except asyncio.IncompleteReadError as exc:
                    got = len(exc.partial)
                    reason = f"peer closed the connection mid-frame ({got} of {length} bytes received)"
                    return
                command = decode_payload(payload)
                self.last_received = self._loop.time()
                self._dispatch(command)
        except FrameError as exc:
            reason = f"malformed frame from {self.addr}: {exc}"
        except OSError as exc:
            reason = f"connection lost: {exc}"
        except asyncio.CancelledError:
            reason = self._closed_reason or "closed by client"
            raise
        finally:
            self._shutdown(reason)

    def _dispatch(self, command: RemotingCommand) -> None:
        if command.is_response:
            future = self._pending.pop(command.opaque, None)
            if future is not None and not future.done():
                future.set_result(command)
            else:
                log.debug("dropping response with unknown or expired opaque %s from %s", command.opaque, self.addr)
            return
        reply: RemotingCommand | None = None
        if self._on_request is not None:
            try:
                reply = self._on_request(command)
            except Exception:
                log.exception("request handler failed for code %s from %s", command.code, self.addr)
                reply = RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark="handler failed")
        elif not command.is_oneway:
            reply = RemotingCommand(
                code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                remark=f"request code {command.code} not supported by the Python client",
            )
        if reply is not None and not command.is_oneway and not self.closed:
            reply = dataclasses.replace(reply, opaque=command.opaque, flag=reply.flag | FLAG_RESPONSE)
            try:
                self._writer.write(encode_command(reply))
            except (OSError, FrameError) as exc:
                log.debug("could not answer server request on %s: %s", self.addr, exc)

    def _shutdown(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(
                    RemotingConnectionError(f"connection to {self.addr} failed: {self._closed_reason}", self.addr)
                )
        with contextlib.suppress(Exception):
            self._writer.close()

    async def close_when_idle(self) -> None:
        """Close once no call waits on this connection any more: each ends by its response, its own deadline or
        the connection's loss. For a connection no new call is given (`ClientPool` retired it)."""
        while self._pending and not self.closed:
            await asyncio.wait(list(self._pending.values()))
        await self.close()

    async def close(self) -> None:
        """Close the socket at once; pending calls fail with :class:`RemotingConnectionError`. What is still
        buffered for the peer is dropped: a peer that stopped reading (a lost node, a frozen broker) never takes
        it, and asyncio's graceful close would wait for that flush until TCP gives up (30 s on the node-loss test,
        each send of a producer held that long: issue 29)."""
        self._shutdown("closed by client")
        with contextlib.suppress(Exception):
            self._writer.transport.abort()
        if not self._reader_task.done():
            self._reader_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader_task
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class ClientPool:
    """Connections keyed by ``"host:port"``, opened on first use and reopened after a loss."""

    def __init__(
        self,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        on_request: RequestHandler | None = None,
        max_frame_length: int = MAX_FRAME_LENGTH,
        credentials: SessionCredentials | None = None,
        credentials_by_addr: Mapping[str, SessionCredentials] | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        self.tls = tls
        self.tls_by_addr: dict[str, ClientTls] = {}
        """Per address, instead of ``tls``: an operator's one client speaks TLS to the groups that run it."""
        """Every connection is TLS, verified as this says; None: plain text."""
        self.credentials = credentials
        """Every request is signed with these (an ACL 2.0 broker's user); None: sent unsigned."""
        self.credentials_by_addr: dict[str, SessionCredentials] = dict(credentials_by_addr or {})
        """Per address, instead of ``credentials``: an operator's client signs for each group with its admin."""
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._on_request = on_request
        self._max_frame_length = max_frame_length
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}
        self._retiring: dict[Connection, asyncio.Task[None]] = {}
        """Connections given no new call, closed once the calls still waiting on them have ended."""
        self._closed = False

    async def get(self, addr: str) -> Connection:
        """The open connection to ``addr``, connecting if there is none.

        Callers that find a connect to ``addr`` under way wait for that one attempt and share its outcome: a
        connect that fails (an address whose host is gone answers nothing until the connect timeout) fails them
        all at once. Taking turns instead (a lock around each caller's own attempt) made N concurrent sends to a
        lost master wait N connect timeouts, one after the other: 15-36 s per send for 8 sends in flight with a
        3 s timeout, on the node-loss test (issue 29), long after the route named another master."""
        if self._closed:
            raise RemotingConnectionError(f"client pool is closed (wanted {addr})", addr)
        connection = self._connections.get(addr)
        if connection is not None and not connection.closed:
            return connection
        attempt = self._connecting.get(addr)
        if attempt is None:
            attempt = asyncio.ensure_future(self._open(addr, connection))
            self._connecting[addr] = attempt
            attempt.add_done_callback(lambda done: self._connect_finished(addr, done))
        # shield: a caller that gives up (its own timeout, a cancel) does not cancel the attempt the others share
        return await asyncio.shield(attempt)

    async def _open(self, addr: str, stale: Connection | None) -> Connection:
        if stale is not None:
            await stale.close()
        connection = await Connection.open(
            addr,
            connect_timeout=self.connect_timeout,
            on_request=self._on_request,
            max_frame_length=self._max_frame_length,
            tls=self.tls_by_addr.get(addr, self.tls),
        )
        if self._closed:  # the pool was closed while connecting: nobody would close this one
            await connection.close()
            raise RemotingConnectionError(f"client pool is closed (wanted {addr})", addr)
        self._connections[addr] = connection
        return connection

    def _connect_finished(self, addr: str, attempt: asyncio.Task[Connection]) -> None:
        if self._connecting.get(addr) is attempt:
            del self._connecting[addr]
        if not attempt.cancelled():
            attempt.exception()  # seen: every waiter may have given up before it failed

    def _sign(self, addr: str, request: RemotingCommand) -> None:
        credentials = self.credentials_by_addr.get(addr, self.credentials)
        if credentials is not None:
            sign(request, credentials)

    async def invoke(self, addr: str, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        self._sign(addr, request)
        connection = await self.get(addr)
        sent_at = asyncio.get_running_loop().time()
        try:
            return await connection.invoke(request, self.request_timeout if timeout is None else timeout)
        except RemotingTimeout:
            if connection.last_received < sent_at:
                # Nothing heard since this call was sent: the peer may be gone. The next call opens a new
                # connection; the calls still waiting on this one keep their own deadlines (a slow answer, such
                # as a controller's election under load, is not failed by a short read that gave up beside it).
                self.retire(addr, connection)
            raise

    async def invoke_oneway(self, addr: str, request: RemotingCommand, timeout: float | None = None) -> None:
        self._sign(addr, request)
        connection = await self.get(addr)
        await connection.invoke_oneway(request, self.request_timeout if timeout is None else timeout)

    def retire(self, addr: str, connection: Connection) -> None:
        """Give ``connection`` (if still the one to ``addr``) no new call, and close it once its calls have ended."""
        if self._connections.get(addr) is not connection:
            return
        del self._connections[addr]
        task = asyncio.ensure_future(connection.close_when_idle())
        self._retiring[connection] = task
        task.add_done_callback(lambda _: self._retiring.pop(connection, None))

    async def close(self) -> None:
        self._closed = True
        for attempt in list(self._connecting.values()):
            attempt.cancel()
        connections, self._connections = self._connections, {}
        for connection in [*connections.values(), *self._retiring]:
            await connection.close()

    def __contains__(self, addr: object) -> bool:
        connection = self._connections.get(addr) if isinstance(addr, str) else None
        return connection is not None and not connection.closed

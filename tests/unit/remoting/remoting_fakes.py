"""An in-process fake RocketMQ server for the remoting tests (imported by name: tests have no packages).

``FakeServer`` listens on 127.0.0.1 (port 0) and runs ``handler(conn)`` for each accepted connection;
``FakeConn`` reads whole request frames and writes canned responses or raw bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from rocketmq_operator.remoting.codec import (
    RemotingCommand,
    SerializeType,
    decode_payload,
    encode_command,
)


class FakeConn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read_request(self) -> RemotingCommand:
        (length,) = struct.unpack(">i", await self.reader.readexactly(4))
        return decode_payload(await self.reader.readexactly(length))

    async def reply(
        self,
        request: RemotingCommand,
        code: int = 0,
        *,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        response = request.response_to(code, remark=remark, ext_fields=ext_fields, body=body)
        self.writer.write(encode_command(response, serialize_type))
        await self.writer.drain()

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


Handler = Callable[[FakeConn], Awaitable[None]]


class FakeServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.server: asyncio.Server | None = None
        self.connections = 0
        self.requests: list[RemotingCommand] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def addr(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def start(self) -> FakeServer:
        self.server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        return self

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        conn = FakeConn(reader, writer)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self.handler(conn)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            await conn.close()

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            for task in list(self._tasks):
                task.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1)


def serve_codes(
    routes: dict[int, Callable[[RemotingCommand], tuple[int, dict[str, str], bytes, str | None]]],
    record: list[RemotingCommand] | None = None,
) -> Handler:
    """A handler answering each request via ``routes[code](request) -> (code, ext, body, remark)``."""

    async def handler(conn: FakeConn) -> None:
        while True:
            request = await conn.read_request()
            if record is not None:
                record.append(request)
            if request.is_oneway:
                continue
            route = routes.get(request.code)
            if route is None:
                await conn.reply(request, 3, remark=f"request code {request.code} not supported")
                continue
            code, ext, body, remark = route(request)
            await conn.reply(request, code, ext_fields=ext, body=body, remark=remark)

    return handler

"""Fixtures for the remoting unit tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from remoting_fakes import FakeServer, Handler


@pytest.fixture
async def fake_server() -> AsyncIterator[Callable[[Handler], Awaitable[FakeServer]]]:
    servers: list[FakeServer] = []

    async def start(handler: Handler) -> FakeServer:
        server = await FakeServer(handler).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()

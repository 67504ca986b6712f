"""Sending a request and checking its response code; the name-server fallback over `namesrv_addrs` (the next one
after a connection failure, a timeout, or a name server that does not serve routes yet)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Self

from .auth import SessionCredentials
from .codec import RemotingCommand
from .codes import (
    ResponseCode,
    request_code_name,
)
from .connection import ClientPool
from .errors import (
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    RemotingTimeout,
    is_name_server_not_ready,
)
from .tls import ClientTls


class Caller:
    """The connection pool and the raw request/response calls every role builds on."""

    def __init__(
        self,
        namesrv_addrs: Sequence[str] | str = (),
        *,
        pool: ClientPool | None = None,
        connect_timeout: float = 3.0,
        request_timeout: float = 3.0,
        credentials: SessionCredentials | None = None,
        credentials_by_addr: Mapping[str, SessionCredentials] | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        if isinstance(namesrv_addrs, str):
            namesrv_addrs = [a for a in namesrv_addrs.split(";") if a.strip()]
        self.namesrv_addrs: tuple[str, ...] = tuple(a.strip() for a in namesrv_addrs)
        self._own_pool = pool is None
        self.pool = pool or ClientPool(
            connect_timeout=connect_timeout,
            request_timeout=request_timeout,
            credentials=credentials,
            credentials_by_addr=credentials_by_addr,
            tls=tls,
        )

    def with_name_servers(self, namesrv_addrs: Sequence[str]) -> Self:
        """The same client (its connection pool, not closed by the copy) for these name servers."""
        view = type(self)(namesrv_addrs, pool=self.pool)
        return view

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_pool:
            await self.pool.close()

    async def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send any request and return the raw response, whatever its code."""
        request = RemotingCommand(code=int(code), ext_fields=dict(ext_fields or {}), body=body)
        return await self.pool.invoke(addr, request, timeout)

    async def _call(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        accept: Iterable[int] = (ResponseCode.SUCCESS,),
    ) -> RemotingCommand:
        response = await self.invoke(addr, code, ext_fields, body, timeout=timeout)
        if response.code not in set(accept):
            raise RemotingError(
                response.code, response.remark, addr=addr, request=request_code_name(code), response=response
            )
        return response

    async def _namesrv_call(
        self, code: int, ext_fields: Mapping[str, str] | None, namesrv: str | None, timeout: float | None
    ) -> tuple[str, RemotingCommand]:
        addrs = (namesrv,) if namesrv else self.namesrv_addrs
        if not addrs:
            raise RemotingConnectionError("no name server address configured")
        last: RemotingException | None = None
        for addr in addrs:
            try:
                return addr, await self._call(addr, code, ext_fields, timeout=timeout)
            except (RemotingConnectionError, RemotingTimeout) as exc:
                last = exc
            except RemotingError as exc:
                # A name server just started (needWaitForService) may not know the master yet: another one does.
                if not is_name_server_not_ready(exc):
                    raise
                last = exc
        assert last is not None
        raise last

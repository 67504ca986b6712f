"""Exceptions raised by :mod:`rocketmq_operator.remoting`.

Contract: every failure the package raises on purpose is a :class:`RemotingException`; callers that
talk to RocketMQ need to catch only that. The subclasses say *where* it went wrong:

* :class:`FrameError` - bytes on the wire do not form a valid remoting frame (decoder side).
* :class:`MessageDecodeError` / :class:`UnsupportedCompression` - a stored-message record is malformed
  or uses a compression that cannot be decoded with the standard library.
* :class:`RemotingConnectionError` - connecting failed or the connection was lost (also a
  :class:`ConnectionError`); every call pending on that connection fails with it.
* :class:`RemotingTimeout` - no response within the per-call timeout (also a :class:`TimeoutError`).
* :class:`ResponseFormatError` - the peer answered success but its header or body cannot be parsed.
* :class:`NoControllerLeader` - none of the controller addresses knows a leader.
* :class:`RemotingError` - the peer answered, but with a response code the call does not accept; it
  carries the numeric code, the code's name and the peer's remark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .codes import ResponseCode, response_code_name

if TYPE_CHECKING:
    from .codec import RemotingCommand


class RemotingException(Exception):
    """Base class of every error raised by the remoting package."""


class FrameError(RemotingException):
    """The bytes do not form a valid remoting frame."""


class MessageDecodeError(RemotingException):
    """A stored-message record (PULL body) is malformed."""


class UnsupportedCompression(MessageDecodeError):
    """The message body uses a compression type with no standard-library decoder."""

    def __init__(self, compression: str, message: str) -> None:
        super().__init__(message)
        self.compression = compression


class RemotingConnectionError(RemotingException, ConnectionError):
    """Connecting failed, or the connection broke while calls were pending."""

    def __init__(self, message: str, addr: str = "") -> None:
        super().__init__(message)
        self.addr = addr


class RemotingTimeout(RemotingException, TimeoutError):
    """No response arrived within the per-call timeout."""

    def __init__(self, message: str, addr: str = "") -> None:
        super().__init__(message)
        self.addr = addr


class ResponseFormatError(RemotingException):
    """A response header or body does not have the expected shape."""


class NoControllerLeader(RemotingException):
    """No controller address answered with a known leader."""


class RemotingError(RemotingException):
    """The peer answered with a response code the call does not accept."""

    def __init__(
        self,
        code: int,
        remark: str | None,
        *,
        addr: str = "",
        request: str = "",
        response: RemotingCommand | None = None,
    ) -> None:
        self.code = code
        self.code_name = response_code_name(code)
        self.remark = remark
        self.addr = addr
        self.request = request
        self.response = response
        where = f" from {addr}" if addr else ""
        what = f"{request} " if request else ""
        super().__init__(f"{what}failed{where}: {self.code_name} ({code}): {remark or 'no remark'}")


NAME_SERVER_NOT_READY = "name server not ready"
"""The remark of a name server's SYSTEM_ERROR answer to a route lookup in its first `waitSecondsForService` after
start, with `needWaitForService` on (5.5.0 `ClientRequestProcessor.getRouteInfoByTopic`): it may not yet know
every broker, so it answers nothing rather than a route without the master."""


def is_name_server_not_ready(exc: BaseException) -> bool:
    """A name server that has just started and does not serve routes yet: ask another one, or ask again later."""
    return (
        isinstance(exc, RemotingError)
        and exc.code == ResponseCode.SYSTEM_ERROR
        and (exc.remark or "").strip() == NAME_SERVER_NOT_READY
    )

"""High-level async RocketMQ admin/producer/consumer calls over :class:`ClientPool`.

Contract:

* Every call takes the target address explicitly (namesrv calls fall back over the client's
  ``namesrv_addrs`` in order on connection errors and timeouts). Per-call ``timeout`` overrides the
  pool's default.
* Results are frozen dataclasses with snake_case fields, parsed from RocketMQ's headers and (fastjson,
  possibly non-standard) JSON bodies. A success response that cannot be parsed raises
  :class:`ResponseFormatError`.
* A response code the call does not accept raises :class:`RemotingError` (code, code name, remark,
  and the raw response). Exceptions: :meth:`RemotingClient.send` never raises on a broker status - its
  :class:`SendResult` says whether the message was stored (see :func:`codes.put_status`);
  :meth:`RemotingClient.pull` maps PULL_NOT_FOUND / PULL_RETRY_IMMEDIATELY / PULL_OFFSET_MOVED to a
  status; :meth:`RemotingClient.query_consumer_offset` returns ``None`` for QUERY_NOT_FOUND.
* Connection problems raise :class:`RemotingConnectionError`, missing responses
  :class:`RemotingTimeout`. Nothing is retried against the same address.
"""

from __future__ import annotations

from .broker import BrokerAdminCalls
from .consumer import ConsumerCalls
from .controller import ControllerCalls
from .namesrv import NameServerCalls
from .producer import ProducerCalls


class RemotingClient(NameServerCalls, ControllerCalls, BrokerAdminCalls, ProducerCalls, ConsumerCalls):
    """Async client for name server, controller and broker calls, one module per role. Use ``async with`` or
    :meth:`close`."""

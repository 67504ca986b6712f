"""The producer role: sending messages, and the client message ids the Java client would make."""

from __future__ import annotations

import itertools
import os
import random
import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .caller import Caller
from .codes import (
    DEFAULT_TOPIC,
    RequestCode,
    put_status,
)
from .message import (
    PROPERTY_KEYS,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    format_properties,
)
from .parsing import _fields, _int, _opt_str

DEFAULT_PRODUCER_GROUP = "rocketmq-operator-producer"


@dataclass(frozen=True, slots=True)
class SendResult:
    status: str
    """``PUT_OK``, ``FLUSH_SLAVE_TIMEOUT``, ``IN_SYNC_REPLICAS_NOT_ENOUGH``, ... (see codes.put_status)."""
    stored: bool
    code: int
    remark: str | None
    msg_id: str
    """The client-side unique id (UNIQ_KEY property), as the Java SendResult.msgId."""
    offset_msg_id: str | None
    queue_id: int
    queue_offset: int
    """-1 when not stored."""
    transaction_id: str | None = None
    addr: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "PUT_OK"


_UNIQ_COUNTER = itertools.count(random.randrange(0x10000))


def _local_ip_bytes() -> bytes:
    try:
        return socket.inet_aton(socket.gethostbyname(socket.gethostname()))
    except OSError:
        return bytes([127, 0, 0, 1])


_UNIQ_PREFIX = _local_ip_bytes() + struct.pack(">H", os.getpid() & 0xFFFF) + random.randbytes(4)


def new_message_id() -> str:
    """A 32-hex-digit client message id laid out like the Java client's: ip, pid, random, time since
    the start of the month (ms), counter."""
    now = time.time()
    month_start = time.mktime((*time.localtime(now)[:2], 1, 0, 0, 0, 0, 0, -1))
    elapsed = int((now - month_start) * 1000) & 0x7FFFFFFF
    tail = struct.pack(">iH", elapsed, next(_UNIQ_COUNTER) & 0xFFFF)
    return (_UNIQ_PREFIX + tail).hex().upper()


class ProducerCalls(Caller):
    """Producing: SEND_MESSAGE_V2."""

    async def send(
        self,
        addr: str,
        topic: str,
        body: bytes,
        queue_id: int,
        keys: Sequence[str] | str | None = None,
        tags: str | None = None,
        properties: Mapping[str, str] | None = None,
        producer_group: str = DEFAULT_PRODUCER_GROUP,
        *,
        broker_name: str | None = None,
        flag: int = 0,
        timeout: float | None = None,
    ) -> SendResult:
        """SEND_MESSAGE_V2 (310) to one queue of one broker. Never raises on a broker status: see
        :class:`SendResult`.``status`` / ``stored``. A ``UNIQ_KEY`` is generated unless given."""
        props: dict[str, str] = dict(properties or {})
        if keys:
            props[PROPERTY_KEYS] = keys if isinstance(keys, str) else " ".join(keys)
        if tags:
            props[PROPERTY_TAGS] = tags
        props.setdefault("WAIT", "true")
        msg_id = props.setdefault(PROPERTY_UNIQ_KEY, new_message_id())
        fields = _fields(
            a=producer_group,
            b=topic,
            c=DEFAULT_TOPIC,
            d=4,
            e=queue_id,
            f=0,
            g=int(time.time() * 1000),
            h=flag,
            i=format_properties(props),
            j=0,
            k=False,
            m=False,
            n=broker_name,
        )
        response = await self.invoke(addr, RequestCode.SEND_MESSAGE_V2, fields, body, timeout=timeout)
        status = put_status(response.code, response.remark)
        ext = response.ext_fields
        return SendResult(
            status=status.name,
            stored=status.stored,
            code=response.code,
            remark=response.remark,
            msg_id=msg_id,
            offset_msg_id=_opt_str(ext.get("msgId")),
            queue_id=_int(ext.get("queueId"), "queueId", queue_id),
            queue_offset=_int(ext.get("queueOffset"), "queueOffset", -1) if status.stored else -1,
            transaction_id=_opt_str(ext.get("transactionId")),
            addr=addr,
        )

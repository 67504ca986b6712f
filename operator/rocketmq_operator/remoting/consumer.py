"""The consumer role: pulling messages, queue offsets and committed consumer offsets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .caller import Caller
from .codec import RemotingCommand
from .codes import (
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    RequestCode,
    ResponseCode,
)
from .message import (
    Message,
    decode_messages,
)
from .parsing import _body_json, _fields, _int, _obj

DEFAULT_CONSUMER_GROUP = "rocketmq-operator-consumer"


@dataclass(frozen=True, slots=True)
class PullResult:
    status: str
    """``FOUND``, ``NO_NEW_MSG``, ``NO_MATCHED_MSG``, ``OFFSET_ILLEGAL`` or ``RETRY``."""
    code: int
    remark: str | None
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    messages: tuple[Message, ...] = ()


class ConsumerCalls(Caller):
    """Consuming: pull, queue offsets, consumer offsets."""

    async def pull(
        self,
        addr: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_nums: int = 32,
        consumer_group: str = DEFAULT_CONSUMER_GROUP,
        *,
        subscription: str = "*",
        commit_offset: int | None = None,
        suspend_timeout_ms: int = 0,
        decompress: bool = True,
        timeout: float | None = None,
    ) -> PullResult:
        """PULL_MESSAGE (11) with the SUBSCRIPTION bit, so no heartbeat-registered consumer is needed.

        ``commit_offset`` sets COMMIT_OFFSET (never do that against a slave); ``suspend_timeout_ms > 0``
        long-polls (make ``timeout`` longer). ``suggest_which_broker_id`` is the broker's hint for the
        next pull (slave read). Other codes (e.g. SYSTEM_BUSY from a slave with slaveReadEnable=false)
        raise :class:`RemotingError`."""
        sys_flag = PULL_FLAG_SUBSCRIPTION
        if commit_offset is not None:
            sys_flag |= PULL_FLAG_COMMIT_OFFSET
        if suspend_timeout_ms > 0:
            sys_flag |= PULL_FLAG_SUSPEND
        fields = _fields(
            consumerGroup=consumer_group,
            topic=topic,
            queueId=queue_id,
            queueOffset=offset,
            maxMsgNums=max_nums,
            sysFlag=sys_flag,
            commitOffset=commit_offset or 0,
            suspendTimeoutMillis=suspend_timeout_ms,
            subscription=subscription,
            subVersion=0,
            expressionType="TAG",
        )
        response = await self._call(
            addr,
            RequestCode.PULL_MESSAGE,
            fields,
            timeout=timeout,
            accept=(
                ResponseCode.SUCCESS,
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
                ResponseCode.PULL_OFFSET_MOVED,
            ),
        )
        if response.code == ResponseCode.SUCCESS:
            status = "FOUND"
        elif response.code == ResponseCode.PULL_NOT_FOUND:
            status = "NO_NEW_MSG"
        elif response.code == ResponseCode.PULL_OFFSET_MOVED:
            status = "OFFSET_ILLEGAL"
        elif (response.remark or "") == "NO_MATCHED_MESSAGE":
            status = "NO_MATCHED_MSG"
        else:
            status = "RETRY"
        ext = response.ext_fields
        messages: tuple[Message, ...] = ()
        if status == "FOUND" and response.body:
            messages = tuple(decode_messages(response.body, decompress=decompress))
        return PullResult(
            status=status,
            code=response.code,
            remark=response.remark,
            next_begin_offset=_int(ext.get("nextBeginOffset"), "nextBeginOffset", offset),
            min_offset=_int(ext.get("minOffset"), "minOffset", 0),
            max_offset=_int(ext.get("maxOffset"), "maxOffset", 0),
            suggest_which_broker_id=_int(ext.get("suggestWhichBrokerId"), "suggestWhichBrokerId", 0),
            messages=messages,
        )

    async def get_min_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        """GET_MIN_OFFSET (31): the smallest consume-queue offset still stored."""
        response = await self._call(
            addr, RequestCode.GET_MIN_OFFSET, _fields(topic=topic, queueId=queue_id), timeout=timeout
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def get_max_offset(self, addr: str, topic: str, queue_id: int, *, timeout: float | None = None) -> int:
        """GET_MAX_OFFSET (30): the next consume-queue offset to be written."""
        response = await self._call(
            addr,
            RequestCode.GET_MAX_OFFSET,
            _fields(topic=topic, queueId=queue_id, committed=True),
            timeout=timeout,
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def search_offset(
        self, addr: str, topic: str, queue_id: int, timestamp_ms: int, *, timeout: float | None = None
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the consume-queue offset of the first message stored at or after
        ``timestamp_ms`` (the broker's default lower boundary). A timestamp later than every stored message
        gives the queue's max offset; an earlier one gives its min offset."""
        response = await self._call(
            addr,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            _fields(topic=topic, queueId=queue_id, timestamp=int(timestamp_ms)),
            timeout=timeout,
        )
        return _int(response.ext_fields.get("offset"), "offset")

    async def query_consumer_offset(
        self, addr: str, consumer_group: str, topic: str, queue_id: int, *, timeout: float | None = None
    ) -> int | None:
        """QUERY_CONSUMER_OFFSET (14); ``None`` when the group has no offset (QUERY_NOT_FOUND)."""
        response = await self._call(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            _fields(consumerGroup=consumer_group, topic=topic, queueId=queue_id, setZeroIfNotFound=False),
            timeout=timeout,
            accept=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return _int(response.ext_fields.get("offset"), "offset")

    async def get_all_consumer_offsets(self, addr: str, *, timeout: float | None = None) -> dict[str, Any]:
        """GET_ALL_CONSUMER_OFFSET (43): the broker's committed offsets, its `offsetTable` as sent
        (``"topic@group" -> {queue id: offset}``; fastjson's bare integer keys are read as strings)."""
        response = await self._call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET, timeout=timeout)
        body = _obj(_body_json(response, "GET_ALL_CONSUMER_OFFSET"), "GET_ALL_CONSUMER_OFFSET")
        return _obj(body.get("offsetTable"), "offsetTable")

    async def update_consumer_offset(
        self,
        addr: str,
        consumer_group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        oneway: bool = False,
        timeout: float | None = None,
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15); ``oneway=True`` sends it as the Java client does."""
        fields = _fields(consumerGroup=consumer_group, topic=topic, queueId=queue_id, commitOffset=offset)
        if oneway:
            request = RemotingCommand(code=RequestCode.UPDATE_CONSUMER_OFFSET, ext_fields=fields)
            await self.pool.invoke_oneway(addr, request, timeout)
            return
        await self._call(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields, timeout=timeout)

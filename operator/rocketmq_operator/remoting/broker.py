"""The broker admin role: runtime info, broker config, topic creation, HA status and the HA master address."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .caller import Caller
from .codes import (
    DEFAULT_TOPIC,
    PERM_READ,
    PERM_WRITE,
    RequestCode,
)
from .parsing import _body_json, _bool, _fields, _int, _list, _obj, _opt_int, _opt_str


@dataclass(frozen=True, slots=True)
class HaConnection:
    addr: str
    slave_ack_offset: int
    diff: int
    in_sync: bool
    transferred_byte_in_second: int
    transfer_from_where: int


@dataclass(frozen=True, slots=True)
class HaClient:
    master_addr: str | None
    transferred_byte_in_second: int
    max_offset: int
    last_read_timestamp: int
    last_write_timestamp: int
    master_flush_offset: int
    activated: bool


@dataclass(frozen=True, slots=True)
class HaStatus:
    """GET_BROKER_HA_STATUS (HARuntimeInfo)."""

    master: bool
    master_commit_log_max_offset: int
    in_sync_slave_nums: int
    connections: tuple[HaConnection, ...] = ()
    client: HaClient | None = None


@dataclass(frozen=True, slots=True)
class HaInfo:
    """EXCHANGE_BROKER_HA_INFO's answer from a master: where slaves replicate from."""

    master_ha_address: str | None
    master_address: str | None
    master_flush_offset: int | None


@dataclass(frozen=True, slots=True)
class BrokerConfigResult:
    config: Mapping[str, str]
    data_version: str | None = field(default=None)


def parse_ha_status(body: Any) -> HaStatus:
    data = _obj(body, "HARuntimeInfo")
    connections = tuple(
        HaConnection(
            addr=str(c.get("addr", "")),
            slave_ack_offset=_int(c.get("slaveAckOffset"), "slaveAckOffset", 0),
            diff=_int(c.get("diff"), "diff", 0),
            in_sync=_bool(c.get("inSync", False)),
            transferred_byte_in_second=_int(c.get("transferredByteInSecond"), "transferredByteInSecond", 0),
            transfer_from_where=_int(c.get("transferFromWhere"), "transferFromWhere", 0),
        )
        for c in (_obj(x, "haConnectionInfo") for x in _list(data.get("haConnectionInfo"), "haConnectionInfo"))
    )
    client: HaClient | None = None
    raw_client = data.get("haClientRuntimeInfo")
    if raw_client is not None:
        c = _obj(raw_client, "haClientRuntimeInfo")
        client = HaClient(
            master_addr=_opt_str(c.get("masterAddr")),
            transferred_byte_in_second=_int(c.get("transferredByteInSecond"), "transferredByteInSecond", 0),
            max_offset=_int(c.get("maxOffset"), "maxOffset", 0),
            last_read_timestamp=_int(c.get("lastReadTimestamp"), "lastReadTimestamp", 0),
            last_write_timestamp=_int(c.get("lastWriteTimestamp"), "lastWriteTimestamp", 0),
            master_flush_offset=_int(c.get("masterFlushOffset"), "masterFlushOffset", 0),
            activated=_bool(c.get("activated", c.get("isActivated", False))),
        )
    return HaStatus(
        master=_bool(data.get("master", False)),
        master_commit_log_max_offset=_int(data.get("masterCommitLogMaxOffset"), "masterCommitLogMaxOffset", 0),
        in_sync_slave_nums=_int(data.get("inSyncSlaveNums"), "inSyncSlaveNums", 0),
        connections=connections,
        client=client,
    )


def parse_properties_text(text: str) -> dict[str, str]:
    """Parse GET_BROKER_CONFIG's body: ``key=value`` lines, written by ``MixAll.properties2String``
    without escaping. Blank lines and ``#``/``!`` comments are skipped; the first ``=`` splits."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


_PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape_properties(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_PROPERTIES_ESCAPES.get(nxt, nxt))
        i += 2
    # \\uXXXX pairs of a character outside the BMP come out as two surrogates: join them.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def parse_java_properties(text: str) -> dict[str, str]:
    """A file as ``java.util.Properties.load`` reads it: ``key=value`` or ``key:value`` lines, ``#``/``!``
    comments, a trailing backslash continuing the line, and backslash escapes (``\\t``, ``\\n``, ``\\uXXXX``; any
    other escaped character is itself). What `format_properties_text` and `render.config.properties_value`
    write comes back unchanged (unlike `parse_properties_text`, for RocketMQ's unescaped GET_BROKER_CONFIG)."""
    out: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry, logical = "".join(logical), []
        key_end = 0
        while key_end < len(entry) and entry[key_end] not in "=: \t\f":
            key_end += 2 if entry[key_end] == "\\" else 1
        key = entry[:key_end]
        rest = entry[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_unescape_properties(key)] = _unescape_properties(rest)
    return out


def _escape_properties(text: str, *, key: bool) -> str:
    out: list[str] = []
    for index, char in enumerate(text):
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif char == "\f":
            out.append("\\f")
        elif char in "=:#!" and (key or index == 0):
            out.append("\\" + char)
        elif char == " " and (key or index == 0):
            out.append("\\ ")
        elif code < 0x20 or code > 0x7E:
            # java.util.Properties.load(InputStream) reads ISO-8859-1: escape everything else.
            for unit in struct.unpack(f">{len(char.encode('utf-16-be')) // 2}H", char.encode("utf-16-be")):
                out.append(f"\\u{unit:04x}")
        else:
            out.append(char)
    return "".join(out)


def format_properties_text(config: Mapping[str, object]) -> str:
    """``key=value`` lines escaped for ``java.util.Properties.load`` (UPDATE_BROKER_CONFIG's body)."""
    lines = []
    for key, value in config.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{_escape_properties(str(key), key=True)}={_escape_properties(text, key=False)}")
    return "".join(line + "\n" for line in lines)


class BrokerAdminCalls(Caller):
    """Broker admin requests: runtime info, config, topics, HA status and HA address."""

    async def get_runtime_info(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): the KVTable as a dict of strings."""
        response = await self._call(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout=timeout)
        table = _obj(_obj(_body_json(response, "GET_BROKER_RUNTIME_INFO"), "KVTable").get("table"), "table")
        return {str(k): str(v) for k, v in table.items()}

    async def get_broker_config(self, addr: str, *, timeout: float | None = None) -> dict[str, str]:
        """GET_BROKER_CONFIG (26): every broker key as strings."""
        return dict((await self.get_broker_config_versioned(addr, timeout=timeout)).config)

    async def get_broker_config_versioned(self, addr: str, *, timeout: float | None = None) -> BrokerConfigResult:
        """GET_BROKER_CONFIG (26) plus the config DataVersion JSON from the response header."""
        response = await self._call(addr, RequestCode.GET_BROKER_CONFIG, timeout=timeout)
        text = response.body.decode("utf-8", errors="replace")
        return BrokerConfigResult(parse_properties_text(text), _opt_str(response.ext_fields.get("version")))

    async def update_broker_config(
        self, addr: str, config: Mapping[str, object], *, timeout: float | None = None
    ) -> None:
        """UPDATE_BROKER_CONFIG (25). The broker rewrites its ``-c`` file; blacklisted keys give
        NO_PERMISSION (:class:`RemotingError`)."""
        body = format_properties_text(config).encode("ascii")
        await self._call(addr, RequestCode.UPDATE_BROKER_CONFIG, body=body, timeout=timeout)

    async def create_topic(
        self,
        addr: str,
        topic: str,
        read_queues: int,
        write_queues: int,
        perm: int = PERM_READ | PERM_WRITE,
        *,
        order: bool = False,
        timeout: float | None = None,
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC (17) on one broker (it then registers the topic with namesrv)."""
        fields = _fields(
            topic=topic,
            defaultTopic=DEFAULT_TOPIC,
            readQueueNums=read_queues,
            writeQueueNums=write_queues,
            perm=perm,
            topicFilterType="SINGLE_TAG",
            topicSysFlag=0,
            order=order,
        )
        await self._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields, timeout=timeout)

    async def get_ha_status(self, addr: str, *, timeout: float | None = None) -> HaStatus:
        """GET_BROKER_HA_STATUS (907)."""
        response = await self._call(addr, RequestCode.GET_BROKER_HA_STATUS, timeout=timeout)
        return parse_ha_status(_body_json(response, "GET_BROKER_HA_STATUS"))

    async def delete_expired_commitlog(self, addr: str, *, timeout: float | None = None) -> None:
        """DELETE_EXPIRED_COMMITLOG (329): the broker's next clean-up passes delete commitlog files older than
        ``fileReservedTime`` now (not at ``deleteWhen``); never the file being written."""
        await self._call(addr, RequestCode.DELETE_EXPIRED_COMMITLOG, timeout=timeout)

    async def clean_expired_consume_queue(self, addr: str, *, timeout: float | None = None) -> None:
        """CLEAN_EXPIRED_CONSUMEQUEUE (306): drop consume-queue files that point below the commitlog's min offset
        (which moves every queue's min offset up)."""
        await self._call(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, timeout=timeout)

    async def get_ha_info(self, addr: str, *, timeout: float | None = None) -> HaInfo:
        """EXCHANGE_BROKER_HA_INFO (906) without fields: a master answers its HA address, broker address and
        init max offset (a slave answers empty fields)."""
        response = await self._call(addr, RequestCode.EXCHANGE_BROKER_HA_INFO, timeout=timeout)
        f = response.ext_fields
        return HaInfo(
            master_ha_address=f.get("masterHaAddress") or None,
            master_address=f.get("masterAddress") or None,
            master_flush_offset=_opt_int(f.get("masterFlushOffset"), "masterFlushOffset"),
        )

    async def set_ha_master(self, addr: str, info: HaInfo, *, timeout: float | None = None) -> None:
        """EXCHANGE_BROKER_HA_INFO (906) with the master's fields: the slave at ``addr`` points its HA client at
        ``info.master_ha_address`` at once (it otherwise learns it only from a name server registration)."""
        if not info.master_ha_address:
            raise ValueError("set_ha_master needs the master's HA address")
        await self._call(
            addr,
            RequestCode.EXCHANGE_BROKER_HA_INFO,
            _fields(
                masterHaAddress=info.master_ha_address,
                masterAddress=info.master_address,
                masterFlushOffset=info.master_flush_offset,
            ),
            timeout=timeout,
        )

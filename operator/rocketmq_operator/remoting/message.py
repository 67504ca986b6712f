"""Stored-message records (the body of a PULL_MESSAGE response) <-> :class:`Message`.

Record layout (big-endian; ``MessageDecoder.decode``, ``MessageExtEncoder``)::

    int32 totalSize | int32 magic | int32 bodyCRC | int32 queueId | int32 flag | int64 queueOffset
    int64 physicalOffset | int32 sysFlag | int64 bornTimestamp | bornHost (4+4, or 16+4 if sysFlag&0x10)
    int64 storeTimestamp | storeHost (4+4, or 16+4 if sysFlag&0x20) | int32 reconsumeTimes
    int64 preparedTransactionOffset | int32 bodyLen + body | topicLen (int8 for V1, int16 for V2) + topic
    int16 propertiesLen + "k\\x01v\\x02k\\x01v\\x02..."

Contract:

* :func:`decode_messages` decodes a concatenation of records. Every record must lie inside its
  ``totalSize`` and inside the buffer; anything else raises :class:`MessageDecodeError` naming the
  record index, its offset and the field - never another exception. Magic V1 (``-626843481``) and V2
  (``-626843477``) are accepted; the end-of-file blank magic is refused.
* Compressed bodies (sysFlag bit 0x1): type ``(sysFlag & 0x700) >> 8``. ZLIB (3, and legacy 0) is
  inflated with :mod:`zlib`; LZ4 (1) with the pure-Python frame decoder :mod:`.lz4frame`; ZSTD (2) only
  when the standard library has ``compression.zstd`` (Python >= 3.14), otherwise it raises
  :class:`UnsupportedCompression` naming the type (as does an unknown type). Inflated bodies are capped
  at ``max_body_size``. ``decompress=False`` keeps the raw body.
* ``Message.msg_id`` is the ``UNIQ_KEY`` property when present, otherwise the offset message id
  (uppercase hex of store IP + port + physical offset, as ``MessageDecoder.createMessageId``).
* :func:`encode_message` writes a record; it exists so tests can round-trip the decoder.
"""

from __future__ import annotations

import importlib
import ipaddress
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from . import lz4frame
from .errors import MessageDecodeError, UnsupportedCompression

MAGIC_V1 = -626843481
MAGIC_V2 = -626843477
BLANK_MAGIC = -875286124

SYSFLAG_COMPRESSED = 0x1
SYSFLAG_MULTI_TAGS = 0x2
SYSFLAG_BORNHOST_V6 = 0x10
SYSFLAG_STOREHOST_V6 = 0x20
COMPRESSION_MASK = 0x700

COMPRESSION_NAMES = {0: "ZLIB", 1: "LZ4", 2: "ZSTD", 3: "ZLIB"}

PROPERTY_UNIQ_KEY = "UNIQ_KEY"
PROPERTY_KEYS = "KEYS"
PROPERTY_TAGS = "TAGS"
KEY_SEPARATOR = " "
NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"

MAX_BODY_SIZE = 64 * 1024 * 1024
"""Default cap on an inflated body (a guard against compression bombs)."""


@dataclass(frozen=True, slots=True)
class Message:
    """One stored message as a consumer sees it. Hosts are ``"ip:port"`` (``"[ip6]:port"`` for IPv6)."""

    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    store_timestamp: int
    born_host: str
    store_host: str
    body: bytes
    properties: Mapping[str, str] = field(default_factory=dict)
    msg_id: str = ""
    offset_msg_id: str = ""
    reconsume_times: int = 0
    flag: int = 0
    body_crc: int = 0
    prepared_transaction_offset: int = 0
    store_size: int = 0
    magic: int = MAGIC_V1

    @property
    def keys(self) -> tuple[str, ...]:
        raw = self.properties.get(PROPERTY_KEYS, "")
        return tuple(k for k in raw.split(KEY_SEPARATOR) if k)

    @property
    def tags(self) -> str | None:
        return self.properties.get(PROPERTY_TAGS)


def parse_properties(text: str) -> dict[str, str]:
    """``k\\x01v\\x02...`` -> dict. Items without exactly one separator or with an empty value are
    skipped, as ``MessageDecoder.string2messageProperties`` does."""
    out: dict[str, str] = {}
    for item in text.split(PROPERTY_SEPARATOR):
        name, separator, value = item.partition(NAME_VALUE_SEPARATOR)
        if separator and value and NAME_VALUE_SEPARATOR not in value:
            out[name] = value
    return out


def format_properties(properties: Mapping[str, str]) -> str:
    """dict -> ``k\\x01v\\x02...`` (``MessageDecoder.messageProperties2String``)."""
    return "".join(f"{k}{NAME_VALUE_SEPARATOR}{v}{PROPERTY_SEPARATOR}" for k, v in properties.items())


def _format_host(ip: bytes, port: int) -> str:
    if len(ip) == 4:
        return "%d.%d.%d.%d:%d" % (*ip, port)  # noqa: UP031 - the fastest IPv4 formatting (per message)
    return f"[{ipaddress.IPv6Address(ip)}]:{port}"


def offset_msg_id(store_ip: bytes, store_port: int, physical_offset: int) -> str:
    """The broker's offset message id: hex(store IP + int32 port + int64 physical offset)."""
    return (store_ip + struct.pack(">iq", store_port, physical_offset)).hex().upper()


def _zstd_decompressor() -> Callable[[bytes], bytes] | None:
    try:
        module = importlib.import_module("compression.zstd")
    except ImportError:
        return None
    return cast(Callable[[bytes], bytes], module.decompress)


def _inflate_zlib(data: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit)
        if inflater.unconsumed_tail:
            raise MessageDecodeError(f"zlib body inflates beyond {limit} bytes")
        out += inflater.flush()
    except zlib.error as exc:
        raise MessageDecodeError(f"zlib body is corrupt: {exc}") from exc
    if not inflater.eof:
        raise MessageDecodeError("zlib body is truncated")
    return out


def decompress_body(body: bytes, sys_flag: int, max_body_size: int = MAX_BODY_SIZE) -> bytes:
    """Inflate ``body`` according to ``sys_flag``; returns it unchanged if not compressed."""
    if not sys_flag & SYSFLAG_COMPRESSED:
        return body
    kind = (sys_flag & COMPRESSION_MASK) >> 8
    name = COMPRESSION_NAMES.get(kind, f"UNKNOWN_{kind}")
    if name == "ZLIB":
        return _inflate_zlib(body, max_body_size)
    if name == "LZ4":
        return lz4frame.decompress(body, max_body_size)
    if name == "ZSTD":
        zstd = _zstd_decompressor()
        if zstd is not None:
            try:
                out = zstd(body)
            except Exception as exc:  # the module's own ZstdError; keep the contract
                raise MessageDecodeError(f"zstd body is corrupt: {exc}") from exc
            if len(out) > max_body_size:
                raise MessageDecodeError(f"zstd body inflates beyond {max_body_size} bytes")
            return out
    raise UnsupportedCompression(
        name,
        f"message body is compressed with {name} (type {kind}), which this Python cannot decode with its "
        "standard library (ZLIB and LZ4 always work, ZSTD needs Python >= 3.14) - "
        "decode with decompress=False to get the raw body",
    )


class _Reader:
    __slots__ = ("data", "end", "pos", "what")

    def __init__(self, data: bytes, start: int, end: int, what: str) -> None:
        self.data = data
        self.pos = start
        self.end = end
        self.what = what

    def take(self, size: int, field_name: str) -> bytes:
        if size < 0 or size > self.end - self.pos:
            raise MessageDecodeError(
                f"{self.what}: field {field_name} needs {size} bytes at offset {self.pos} "
                f"but only {self.end - self.pos} remain in the record"
            )
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def unpack(self, fmt: str, field_name: str) -> Any:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size, field_name))[0]


_FIXED_V4 = struct.Struct(">iiiiiqqiq4siq4siiqi")
"""totalSize .. bodyLength of a record whose born and store hosts are both IPv4 (the common case)."""
_V6_HOSTS = SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6


def _message(
    topic_raw: bytes,
    props_raw: bytes,
    body: bytes,
    queue_id: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_ip: bytes,
    born_port: int,
    store_timestamp: int,
    store_ip: bytes,
    store_port: int,
    reconsume_times: int,
    flag: int,
    body_crc: int,
    prepared: int,
    total: int,
    magic: int,
) -> Message:
    """A :class:`Message` from a record's fields in record order (both decoding paths end here; positional,
    because this runs once per message)."""
    properties = parse_properties(props_raw.decode("utf-8", errors="replace"))
    offset_id = offset_msg_id(store_ip, store_port, physical_offset)
    return Message(
        topic_raw.decode("utf-8", errors="replace"),
        queue_id,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        store_timestamp,
        _format_host(born_ip, born_port),
        _format_host(store_ip, store_port),
        body,
        properties,
        properties.get(PROPERTY_UNIQ_KEY, offset_id),
        offset_id,
        reconsume_times,
        flag,
        body_crc,
        prepared,
        total,
        magic,
    )


def _decode_one(data: bytes, start: int, index: int, decompress: bool, max_body_size: int) -> tuple[Message, int]:
    fast = _decode_one_fast(data, start)
    if fast is not None:
        return fast
    return _decode_one_checked(data, start, index, decompress, max_body_size)


def _decode_one_fast(data: bytes, start: int) -> tuple[Message, int] | None:
    """One struct unpack for a well-formed IPv4 record; ``None`` (the checked path decides and names the
    problem) for anything else: IPv6 hosts, a compressed body, or any size that does not fit."""
    if len(data) - start < _FIXED_V4.size:
        return None
    (total, magic, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_timestamp, born_ip,
     born_port, store_timestamp, store_ip, store_port, reconsume_times, prepared,
     body_len) = _FIXED_V4.unpack_from(data, start)  # fmt: skip
    end = start + total
    if (
        magic not in (MAGIC_V1, MAGIC_V2)
        or sys_flag & (_V6_HOSTS | SYSFLAG_COMPRESSED)
        or total < _FIXED_V4.size
        or end > len(data)
        or body_len < 0
    ):
        return None
    pos = start + _FIXED_V4.size
    body_end = pos + body_len
    topic_width = 2 if magic == MAGIC_V2 else 1
    if body_end + topic_width > end:
        return None
    topic_len = int.from_bytes(data[body_end : body_end + topic_width], "big", signed=True)
    topic_end = body_end + topic_width + topic_len
    if topic_len < 0 or topic_end + 2 > end:
        return None
    props_len = int.from_bytes(data[topic_end : topic_end + 2], "big", signed=True)
    if props_len < 0 or topic_end + 2 + props_len > end:
        return None
    message = _message(
        data[body_end + topic_width : topic_end],
        data[topic_end + 2 : topic_end + 2 + props_len],
        data[pos:body_end],
        queue_id,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_ip,
        born_port,
        store_timestamp,
        store_ip,
        store_port,
        reconsume_times,
        flag,
        body_crc,
        prepared,
        total,
        magic,
    )
    return message, end


def _decode_one_checked(
    data: bytes, start: int, index: int, decompress: bool, max_body_size: int
) -> tuple[Message, int]:
    what = f"message #{index} at byte {start}"
    if len(data) - start < 8:
        raise MessageDecodeError(f"{what}: {len(data) - start} trailing bytes are too few for a record")
    total, magic = struct.unpack_from(">ii", data, start)
    if magic == BLANK_MAGIC:
        raise MessageDecodeError(f"{what}: blank (end-of-file) magic code, not a message")
    if magic not in (MAGIC_V1, MAGIC_V2):
        raise MessageDecodeError(f"{what}: unknown magic code {magic}")
    if total < 8 or total > len(data) - start:
        raise MessageDecodeError(f"{what}: total size {total} exceeds the {len(data) - start} bytes left")
    r = _Reader(data, start + 8, start + total, what)
    body_crc = r.unpack(">i", "BODYCRC")
    queue_id = r.unpack(">i", "QUEUEID")
    flag = r.unpack(">i", "FLAG")
    queue_offset = r.unpack(">q", "QUEUEOFFSET")
    physical_offset = r.unpack(">q", "PHYSICALOFFSET")
    sys_flag = r.unpack(">i", "SYSFLAG")
    born_timestamp = r.unpack(">q", "BORNTIMESTAMP")
    born_ip = r.take(16 if sys_flag & SYSFLAG_BORNHOST_V6 else 4, "BORNHOST")
    born_port = r.unpack(">i", "BORNHOST port")
    store_timestamp = r.unpack(">q", "STORETIMESTAMP")
    store_ip = r.take(16 if sys_flag & SYSFLAG_STOREHOST_V6 else 4, "STOREHOST")
    store_port = r.unpack(">i", "STOREHOST port")
    reconsume_times = r.unpack(">i", "RECONSUMETIMES")
    prepared = r.unpack(">q", "PREPAREDTRANSACTIONOFFSET")
    body_len = r.unpack(">i", "BODY length")
    body = r.take(body_len, "BODY")
    topic_len = r.unpack(">h" if magic == MAGIC_V2 else ">b", "TOPIC length")
    topic_raw = r.take(topic_len, "TOPIC")
    props_len = r.unpack(">h", "PROPERTIES length")
    if props_len < 0:
        raise MessageDecodeError(f"{what}: negative properties length {props_len}")
    props_raw = r.take(props_len, "PROPERTIES")
    if decompress:
        try:
            body = decompress_body(body, sys_flag, max_body_size)
        except UnsupportedCompression as exc:
            raise UnsupportedCompression(exc.compression, f"{what}: {exc}") from exc
        except MessageDecodeError as exc:
            raise MessageDecodeError(f"{what}: {exc}") from exc
    message = _message(
        topic_raw,
        props_raw,
        body,
        queue_id,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_ip,
        born_port,
        store_timestamp,
        store_ip,
        store_port,
        reconsume_times,
        flag,
        body_crc,
        prepared,
        total,
        magic,
    )
    return message, start + total


def decode_messages(data: bytes, *, decompress: bool = True, max_body_size: int = MAX_BODY_SIZE) -> list[Message]:
    """Decode every record in ``data`` (a PULL_MESSAGE body)."""
    data = bytes(data)
    out: list[Message] = []
    pos = 0
    while pos < len(data):
        message, pos = _decode_one(data, pos, len(out), decompress, max_body_size)
        out.append(message)
    return out


def decode_message(data: bytes, *, decompress: bool = True, max_body_size: int = MAX_BODY_SIZE) -> Message:
    """Decode a buffer holding exactly one record."""
    message, end = _decode_one(bytes(data), 0, 0, decompress, max_body_size)
    if end != len(data):
        raise MessageDecodeError(f"{len(data) - end} bytes follow the single message record")
    return message


def _pack_host(host: str) -> tuple[bytes, int, bool]:
    addr, _, port = host.rpartition(":")
    ip = ipaddress.ip_address(addr.strip("[]"))
    return ip.packed, int(port), ip.version == 6


def encode_message(
    message: Message,
    *,
    compress: bool = False,
    version: int | None = None,
) -> bytes:
    """Write ``message`` as a stored record (for tests).

    ``compress`` zlib-deflates the body and sets the COMPRESSED bit and ZLIB type. ``version`` is 1 or 2;
    by default V2 only when the topic needs more than 127 bytes. ``body_crc`` is recomputed,
    ``store_size`` and ``magic`` are ignored, and the host-V6 bits follow the host addresses.
    """
    born_ip, born_port, born_v6 = _pack_host(message.born_host)
    store_ip, store_port, store_v6 = _pack_host(message.store_host)
    sys_flag = message.sys_flag & ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6)
    sys_flag |= (SYSFLAG_BORNHOST_V6 if born_v6 else 0) | (SYSFLAG_STOREHOST_V6 if store_v6 else 0)
    body = message.body
    if compress:
        body = zlib.compress(body, 5)
        sys_flag = (sys_flag & ~COMPRESSION_MASK) | SYSFLAG_COMPRESSED | (3 << 8)
    topic = message.topic.encode("utf-8")
    if version is None:
        version = 2 if len(topic) > 127 else 1
    props = format_properties(message.properties).encode("utf-8")
    if len(props) > 0x7FFF:
        raise ValueError(f"properties of {len(props)} bytes exceed 32767")
    topic_field = struct.pack(">h" if version == 2 else ">b", len(topic)) + topic
    parts = [
        struct.pack(
            ">iiiqqiq",
            zlib.crc32(body) & 0x7FFFFFFF,
            message.queue_id,
            message.flag,
            message.queue_offset,
            message.physical_offset,
            sys_flag,
            message.born_timestamp,
        ),
        born_ip,
        struct.pack(">iq", born_port, message.store_timestamp),
        store_ip,
        struct.pack(">iiqi", store_port, message.reconsume_times, message.prepared_transaction_offset, len(body)),
        body,
        topic_field,
        struct.pack(">h", len(props)),
        props,
    ]
    record = b"".join(parts)
    magic = MAGIC_V2 if version == 2 else MAGIC_V1
    return struct.pack(">ii", 8 + len(record), magic) + record

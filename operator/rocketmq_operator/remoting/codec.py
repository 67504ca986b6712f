"""Remoting frame codec: bytes <-> :class:`RemotingCommand`.

Wire format (all integers big-endian; RocketMQ ``RemotingCommand.encode/decode``)::

    int32 length                    # 4 + headerLen + bodyLen, excludes itself
    int32 (serializeType << 24) | headerLen
    header (headerLen bytes)        # JSON (type 0) or ROCKETMQ binary (type 1)
    body   (the rest)

Contract:

* :func:`encode_command` writes JSON headers (what every RocketMQ server accepts) and, for tests,
  ROCKETMQ binary headers. It raises :class:`FrameError` for commands that cannot be framed.
* :func:`decode_payload` / :func:`decode_frame` / :class:`FrameDecoder` accept both header types,
  whatever the request used (a server answers in its own configured type). Malformed input raises
  :class:`FrameError` with a message naming the problem (bad length, header length beyond the
  frame, frame above 16 MiB, unknown serialize type, bad JSON, bad binary header) and never any other
  exception; decoding never reads past the given bytes.
* :func:`loads_json` parses RocketMQ's fastjson bodies, which may carry bare integer map keys
  (``{0:"ip:port"}``); it quotes such keys outside string literals only, so string contents are
  never changed. It raises :class:`ValueError` (``json.JSONDecodeError``) on invalid input.
"""

from __future__ import annotations

import enum
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from .errors import FrameError

MAX_FRAME_LENGTH = 16 * 1024 * 1024
"""Largest frame, length field included (Netty ``NettyDecoder`` default ``frameMaxLength``)."""

DEFAULT_VERSION = 479
"""``MQVersion.Version.V5_3_3.ordinal()``; anything >= 401 makes namesrv answer standard JSON routes."""

FLAG_RESPONSE = 0x1
FLAG_ONEWAY = 0x2

_MAX_HEADER_LENGTH = 0xFFFFFF


class SerializeType(enum.IntEnum):
    JSON = 0
    ROCKETMQ = 1


LANGUAGE_CODES: dict[str, int] = {
    "JAVA": 0,
    "CPP": 1,
    "DOTNET": 2,
    "PYTHON": 3,
    "DELPHI": 4,
    "ERLANG": 5,
    "RUBY": 6,
    "OTHER": 7,
    "HTTP": 8,
    "GO": 9,
    "PHP": 10,
    "OMS": 11,
    "RUST": 12,
    "NODE_JS": 13,
}
_LANGUAGE_NAMES: dict[int, str] = {v: k for k, v in LANGUAGE_CODES.items()}


@dataclass(slots=True)
class RemotingCommand:
    """One request or response. ``ext_fields`` values are always strings on the wire."""

    code: int
    language: str = "PYTHON"
    version: int = DEFAULT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: SerializeType = SerializeType.JSON
    """How the header arrived (decoding) or will be written (encoding)."""

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def encode(self) -> bytes:
        """The whole frame, length field included."""
        return encode_command(self)

    def response_to(
        self, code: int, *, remark: str | None = None, ext_fields: dict[str, str] | None = None, body: bytes = b""
    ) -> RemotingCommand:
        """The answer a server (a simulated or fake broker) sends to this request: its opaque, the response flag,
        and the Java side's language, as RocketMQ's own servers answer."""
        return RemotingCommand(
            code=code,
            language="JAVA",
            opaque=self.opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=ext_fields or {},
            body=body,
        )


# --------------------------------------------------------------------------------------------- encode


def _json_header(cmd: RemotingCommand) -> bytes:
    header: dict[str, Any] = {
        "code": cmd.code,
        "language": cmd.language,
        "version": cmd.version,
        "opaque": cmd.opaque,
        "flag": cmd.flag,
    }
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    if cmd.ext_fields:
        header["extFields"] = {str(k): str(v) for k, v in cmd.ext_fields.items()}
    header["serializeTypeCurrentRPC"] = "JSON"
    return json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _rocketmq_header(cmd: RemotingCommand) -> bytes:
    language = LANGUAGE_CODES.get(cmd.language, LANGUAGE_CODES["OTHER"])
    remark = (cmd.remark or "").encode("utf-8")
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        k = str(key).encode("utf-8")
        v = str(value).encode("utf-8")
        if len(k) > 0x7FFF:
            raise FrameError(f"extFields key of {len(k)} bytes does not fit the ROCKETMQ header")
        ext += struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
    try:
        fixed = struct.pack(">hbhii", cmd.code, language, cmd.version, cmd.opaque, cmd.flag)
    except struct.error as exc:
        raise FrameError(f"cannot encode ROCKETMQ header fields: {exc}") from exc
    return fixed + struct.pack(">i", len(remark)) + remark + struct.pack(">i", len(ext)) + bytes(ext)


def encode_command(
    cmd: RemotingCommand,
    serialize_type: SerializeType | None = None,
    *,
    max_frame_length: int = MAX_FRAME_LENGTH,
) -> bytes:
    """Frame ``cmd``; the header type is ``serialize_type`` or else ``cmd.serialize_type``."""
    kind = cmd.serialize_type if serialize_type is None else serialize_type
    header = _rocketmq_header(cmd) if kind == SerializeType.ROCKETMQ else _json_header(cmd)
    if len(header) > _MAX_HEADER_LENGTH:
        raise FrameError(f"header of {len(header)} bytes exceeds the 24-bit header length field")
    length = 4 + len(header) + len(cmd.body)
    if length + 4 > max_frame_length:
        raise FrameError(f"frame of {length + 4} bytes exceeds the maximum of {max_frame_length} bytes")
    return struct.pack(">ii", length, (int(kind) << 24) | len(header)) + header + cmd.body


# --------------------------------------------------------------------------------------------- decode


def _int_field(header: dict[str, Any], name: str, default: int | None) -> int:
    value = header.get(name, default)
    if value is None:
        raise FrameError(f"JSON header has no {name!r}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise FrameError(f"JSON header field {name!r} is not an integer: {value!r:.80}")
    return value


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _decode_json_header(raw: bytes) -> RemotingCommand:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameError(f"JSON header is not valid UTF-8: {exc}") from exc
    try:
        header = loads_json(text)
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"JSON header is not valid JSON: {exc}; header starts {text[:80]!r}") from exc
    if not isinstance(header, dict):
        raise FrameError(f"JSON header is not an object but {type(header).__name__}")
    language = header.get("language", "OTHER")
    if isinstance(language, int) and not isinstance(language, bool):
        language = _LANGUAGE_NAMES.get(language, f"UNKNOWN_{language}")
    elif not isinstance(language, str):
        raise FrameError(f"JSON header field 'language' is not a string: {language!r:.80}")
    remark = header.get("remark")
    if remark is not None and not isinstance(remark, str):
        remark = _stringify(remark)
    ext_raw = header.get("extFields")
    ext: dict[str, str] = {}
    if ext_raw is not None:
        if not isinstance(ext_raw, dict):
            raise FrameError(f"JSON header field 'extFields' is not an object: {ext_raw!r:.80}")
        ext = {str(k): _stringify(v) for k, v in ext_raw.items() if v is not None}
    return RemotingCommand(
        code=_int_field(header, "code", None),
        language=language,
        version=_int_field(header, "version", 0),
        opaque=_int_field(header, "opaque", 0),
        flag=_int_field(header, "flag", 0),
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.JSON,
    )


def _decode_rocketmq_header(raw: bytes) -> RemotingCommand:
    size = len(raw)
    if size < 21:
        raise FrameError(f"ROCKETMQ header of {size} bytes is shorter than the fixed 21 bytes")
    code, language, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", raw, 0)
    pos = 17
    if remark_len < 0 or remark_len > size - pos - 4:
        raise FrameError(f"ROCKETMQ header remark length {remark_len} runs beyond the {size}-byte header")
    remark_bytes = raw[pos : pos + remark_len]
    pos += remark_len
    (ext_len,) = struct.unpack_from(">i", raw, pos)
    pos += 4
    if ext_len < 0 or ext_len > size - pos:
        raise FrameError(f"ROCKETMQ header extFields length {ext_len} runs beyond the {size}-byte header")
    end = pos + ext_len
    ext: dict[str, str] = {}
    try:
        remark = remark_bytes.decode("utf-8") if remark_len > 0 else None
        while pos < end:
            if end - pos < 2:
                raise FrameError("ROCKETMQ header extFields entry is truncated (key length)")
            (key_len,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            if key_len < 0 or key_len > end - pos - 4:
                raise FrameError(f"ROCKETMQ header extFields key length {key_len} runs beyond extFields")
            key = raw[pos : pos + key_len].decode("utf-8")
            pos += key_len
            (val_len,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            if val_len < 0 or val_len > end - pos:
                raise FrameError(f"ROCKETMQ header extFields value length {val_len} runs beyond extFields")
            ext[key] = raw[pos : pos + val_len].decode("utf-8")
            pos += val_len
    except UnicodeDecodeError as exc:
        raise FrameError(f"ROCKETMQ header text is not valid UTF-8: {exc}") from exc
    return RemotingCommand(
        code=code,
        language=_LANGUAGE_NAMES.get(language, f"UNKNOWN_{language}"),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        serialize_type=SerializeType.ROCKETMQ,
    )


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode one frame given *without* its 4-byte length field."""
    if len(payload) < 4:
        raise FrameError(f"frame of {len(payload)} bytes is too short for the header-length field")
    (mark,) = struct.unpack_from(">I", payload, 0)
    kind = (mark >> 24) & 0xFF
    header_len = mark & _MAX_HEADER_LENGTH
    if header_len > len(payload) - 4:
        raise FrameError(f"header length {header_len} runs beyond the frame ({len(payload) - 4} bytes after it)")
    raw = payload[4 : 4 + header_len]
    if kind == SerializeType.JSON:
        cmd = _decode_json_header(raw)
    elif kind == SerializeType.ROCKETMQ:
        cmd = _decode_rocketmq_header(raw)
    else:
        raise FrameError(f"unknown serialize type {kind} (0 = JSON, 1 = ROCKETMQ)")
    cmd.body = bytes(payload[4 + header_len :])
    return cmd


def check_frame_length(length: int, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
    """Validate a frame's length field; raises :class:`FrameError`."""
    if length < 4:
        raise FrameError(f"bad frame length {length}: must be at least 4 (the header-length field)")
    if length + 4 > max_frame_length:
        raise FrameError(f"frame of {length + 4} bytes exceeds the maximum of {max_frame_length} bytes")


def decode_frame(frame: bytes, *, max_frame_length: int = MAX_FRAME_LENGTH) -> RemotingCommand:
    """Decode exactly one whole frame, length field included."""
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes is too short for the length field")
    (length,) = struct.unpack_from(">i", frame, 0)
    check_frame_length(length, max_frame_length)
    if length != len(frame) - 4:
        raise FrameError(f"frame length field says {length} bytes but {len(frame) - 4} follow it")
    return decode_payload(frame[4:])


class FrameDecoder:
    """Incremental decoder: feed stream bytes, get whole commands.

    After a :class:`FrameError` the stream is out of step and the decoder must be discarded.
    """

    def __init__(self, max_frame_length: int = MAX_FRAME_LENGTH) -> None:
        self._buffer = bytearray()
        self._max = max_frame_length

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[RemotingCommand]:
        self._buffer += data
        out: list[RemotingCommand] = []
        while len(self._buffer) >= 4:
            (length,) = struct.unpack_from(">i", self._buffer, 0)
            check_frame_length(length, self._max)
            if len(self._buffer) < 4 + length:
                break
            payload = bytes(self._buffer[4 : 4 + length])
            del self._buffer[: 4 + length]
            out.append(decode_payload(payload))
        return out


# ----------------------------------------------------------------------------------------- JSON bodies

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_BARE_KEY = re.compile(r"-?[0-9]+(?=[ \t\r\n]*:)")
_INTERESTING = re.compile(r'["{}\[\],0-9-]')


def quote_bare_keys(text: str) -> str:
    """Quote fastjson's bare integer object keys (``{0:"a"}`` -> ``{"0":"a"}``) outside strings."""
    out: list[str] = []
    stack: list[str] = []
    expect_key = False
    pos = 0
    n = len(text)
    while pos < n:
        match = _INTERESTING.search(text, pos)
        if match is None:
            out.append(text[pos:])
            break
        start = match.start()
        between = text[pos:start]
        if between.strip():
            expect_key = False
        out.append(between)
        char = text[start]
        if char == '"':
            string = _STRING.match(text, start)
            assert string is not None  # the pattern always matches at a quote
            out.append(string.group())
            pos = string.end()
            expect_key = False
        elif char in "{[":
            stack.append(char)
            expect_key = char == "{"
            out.append(char)
            pos = start + 1
        elif char in "}]":
            if stack:
                stack.pop()
            expect_key = False
            out.append(char)
            pos = start + 1
        elif char == ",":
            expect_key = bool(stack) and stack[-1] == "{"
            out.append(char)
            pos = start + 1
        else:
            key = _BARE_KEY.match(text, start) if expect_key else None
            if key is not None:
                out.append(f'"{key.group()}"')
                pos = key.end()
            else:
                out.append(char)
                pos = start + 1
            expect_key = False
    return "".join(out)


def loads_json(data: bytes | str) -> Any:
    """Parse a RocketMQ JSON body, tolerating fastjson's bare integer keys."""
    text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        fixed = quote_bare_keys(text)
        if fixed == text:
            raise
        return json.loads(fixed)

"""Frame codec: round trips, malformed frames, fastjson bodies, and fuzzing."""

from __future__ import annotations

import contextlib
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_operator.remoting.codec import (
    MAX_FRAME_LENGTH,
    FrameDecoder,
    RemotingCommand,
    SerializeType,
    decode_frame,
    decode_payload,
    encode_command,
    loads_json,
    quote_bare_keys,
)
from rocketmq_operator.remoting.errors import FrameError

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


def frame(header: bytes, body: bytes = b"", kind: int = 0) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body), (kind << 24) | len(header)) + header + body


# ------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("kind", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_round_trip(kind: SerializeType) -> None:
    cmd = RemotingCommand(
        code=310,
        opaque=42,
        flag=1,
        remark="héllo",
        ext_fields={"a": "group", "b": "topic ✓", "i": "KEYS\x01k\x02"},
        body=b"\x00\x01payload",
    )
    decoded = decode_frame(encode_command(cmd, kind))
    assert decoded.code == 310 and decoded.opaque == 42 and decoded.flag == 1
    assert decoded.remark == "héllo"
    assert decoded.ext_fields == cmd.ext_fields
    assert decoded.body == cmd.body
    assert decoded.language == "PYTHON" and decoded.version == 479
    assert decoded.serialize_type == kind
    assert decoded.is_response and not decoded.is_oneway


def test_json_header_layout_matches_java() -> None:
    data = RemotingCommand(code=105, opaque=7, ext_fields={"topic": "t"}).encode()
    length, mark = struct.unpack_from(">ii", data)
    assert length == len(data) - 4
    assert mark >> 24 == 0
    header = json.loads(data[8 : 8 + (mark & 0xFFFFFF)])
    assert header == {
        "code": 105,
        "language": "PYTHON",
        "version": 479,
        "opaque": 7,
        "flag": 0,
        "extFields": {"topic": "t"},
        "serializeTypeCurrentRPC": "JSON",
    }


def test_decodes_java_style_json_response() -> None:
    header = (
        b'{"code":0,"extFields":{"queueId":"1","msgId":"7F00000100002A9F0000000000000000",'
        b'"queueOffset":"5"},"flag":1,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":479}'
    )
    cmd = decode_frame(frame(header, b"body"))
    assert cmd.language == "JAVA" and cmd.is_response and cmd.remark is None
    assert cmd.ext_fields["queueOffset"] == "5" and cmd.body == b"body"


def test_json_header_non_string_ext_values_are_stringified() -> None:
    cmd = decode_frame(frame(b'{"code":1,"extFields":{"a":1,"b":true,"c":null,"d":[1]}}'))
    assert cmd.ext_fields == {"a": "1", "b": "true", "d": "[1]"}


def test_rocketmq_language_byte_and_empty_fields() -> None:
    header = struct.pack(">hbhiii", 17, 0, 479, 9, 1, 0) + struct.pack(">i", 0)
    cmd = decode_frame(frame(header, kind=1))
    assert cmd.language == "JAVA" and cmd.remark is None and cmd.ext_fields == {}


def test_frame_decoder_byte_by_byte() -> None:
    commands = [RemotingCommand(code=i, opaque=i, body=bytes([i]) * i) for i in range(1, 6)]
    stream = b"".join(encode_command(c, SerializeType(i % 2)) for i, c in enumerate(commands))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    for byte in stream:
        out.extend(decoder.feed(bytes([byte])))
    assert [c.opaque for c in out] == [1, 2, 3, 4, 5]
    assert [c.body for c in out] == [c.body for c in commands]
    assert decoder.buffered == 0


# --------------------------------------------------------------------------------- malformed frames


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x00\x00", "too short for the length field"),
        (struct.pack(">i", 2) + b"ab", "bad frame length 2"),
        (struct.pack(">i", -5) + b"abcd", "bad frame length -5"),
        (struct.pack(">i", 10) + b"abc", "says 10 bytes but 3 follow"),
        (struct.pack(">ii", 4, 100), "header length 100 runs beyond the frame"),
        (frame(b"{}", kind=7), "unknown serialize type 7"),
        (frame(b"{not json"), "not valid JSON"),
        (frame(b"[1,2]"), "not an object"),
        (frame(b'{"opaque":1}'), "has no 'code'"),
        (frame(b'{"code":"x"}'), "'code' is not an integer"),
        (frame(b'{"code":1,"extFields":[]}'), "'extFields' is not an object"),
        (frame(b"\xff\xfe"), "not valid UTF-8"),
        (frame(b"[" * 100_000), "not valid JSON"),
        (frame(b"\x00\x01", kind=1), "shorter than the fixed 21 bytes"),
        (frame(struct.pack(">hbhiii", 1, 0, 0, 0, 0, 99) + b"\x00" * 4, kind=1), "remark length 99"),
        (
            frame(struct.pack(">hbhiii", 1, 0, 0, 0, 0, 0) + struct.pack(">i", 50), kind=1),
            "extFields length 50",
        ),
        (
            frame(struct.pack(">hbhiii", 1, 0, 0, 0, 0, 0) + struct.pack(">ih", 3, 9) + b"k", kind=1),
            "key length 9",
        ),
    ],
)
def test_malformed_frames_raise_clear_errors(data: bytes, message: str) -> None:
    with pytest.raises(FrameError, match=message):
        decode_frame(data)


def test_oversized_frame_rejected_before_buffering() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError, match="exceeds the maximum of 16777216 bytes"):
        decoder.feed(struct.pack(">i", MAX_FRAME_LENGTH) + b"x")


def test_encode_refuses_oversized_frame() -> None:
    with pytest.raises(FrameError, match="exceeds the maximum"):
        encode_command(RemotingCommand(code=1, body=b"x" * 100), max_frame_length=64)


def test_decode_payload_too_short() -> None:
    with pytest.raises(FrameError, match="too short for the header-length field"):
        decode_payload(b"\x00")


# ----------------------------------------------------------------------------------- fastjson bodies


def test_bare_integer_keys_are_quoted() -> None:
    body = '{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"cluster":"c"}'
    assert loads_json(body) == {
        "brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"},
        "cluster": "c",
    }


def test_strings_containing_key_patterns_are_untouched() -> None:
    body = '{5:"{0:\\"x\\", 1:2}", "s":"a,7:b", "t":"[{3:4}]", -2 : "neg", "e":"\\\\"}'
    assert loads_json(body) == {"5": '{0:"x", 1:2}', "s": "a,7:b", "t": "[{3:4}]", "-2": "neg", "e": "\\"}


def test_numbers_in_arrays_and_values_stay_numbers() -> None:
    assert loads_json('{"a":[1,2,{3:[4,5]}],"b":6,7:{8:9}}') == {
        "a": [1, 2, {"3": [4, 5]}],
        "b": 6,
        "7": {"8": 9},
    }


def test_standard_json_unchanged_and_invalid_still_fails() -> None:
    text = '{"a": {"1": [1, "2:3"]}}'
    assert quote_bare_keys(text) == text
    with pytest.raises(ValueError):
        loads_json('{"a": 1')
    with pytest.raises(ValueError):
        loads_json("{a: 1}")


# ------------------------------------------------------------------------------------------ fuzzing

commands = st.builds(
    RemotingCommand,
    code=st.integers(-(2**15), 2**15 - 1),
    language=st.sampled_from(["JAVA", "PYTHON", "GO", "RUST"]),
    version=st.integers(0, 2**15 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.one_of(st.none(), TEXT.filter(bool)),
    ext_fields=st.dictionaries(TEXT, TEXT, max_size=6),
    body=st.binary(max_size=200),
)


@settings(max_examples=60, deadline=None)
@given(commands, st.sampled_from(list(SerializeType)))
def test_round_trip_property(cmd: RemotingCommand, kind: SerializeType) -> None:
    decoded = decode_frame(encode_command(cmd, kind))
    assert (decoded.code, decoded.opaque, decoded.flag, decoded.version, decoded.language) == (
        cmd.code,
        cmd.opaque,
        cmd.flag,
        cmd.version,
        cmd.language,
    )
    assert decoded.remark == cmd.remark
    assert decoded.ext_fields == cmd.ext_fields
    assert decoded.body == cmd.body


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_frame_error(data: bytes) -> None:
    with contextlib.suppress(FrameError):
        decode_frame(data)
    decoder = FrameDecoder()
    with contextlib.suppress(FrameError):
        decoder.feed(data)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 255), st.binary(max_size=200), st.binary(max_size=50))
def test_framed_garbage_headers_decode_or_frame_error(kind: int, header: bytes, body: bytes) -> None:
    with contextlib.suppress(FrameError):
        decode_frame(frame(header, body, kind))


@settings(deadline=None)
@given(st.binary(max_size=60), st.integers(0, 59))
def test_mutated_valid_frames_decode_or_frame_error(noise: bytes, at: int) -> None:
    for kind in SerializeType:
        data = bytearray(encode_command(RemotingCommand(code=1, remark="r", ext_fields={"k": "v"}), kind))
        data[at % len(data) : at % len(data) + len(noise)] = noise
        with contextlib.suppress(FrameError):
            decode_frame(bytes(data))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.integers(-99, 999).map(str), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=60, deadline=None)
@given(json_values)
def test_fastjson_style_bodies_parse_like_standard_json(value: object) -> None:
    standard = json.dumps(value, ensure_ascii=False)
    fastjson_style = standard
    # Emulate fastjson's Map<Integer, ...> output: unquote integer keys (outside strings).
    import re

    out, pos = [], 0
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"', standard):
        out.append(standard[pos : match.start()])
        token = match.group()
        after = standard[match.end() :].lstrip()
        inner = token[1:-1]
        if after.startswith(":") and re.fullmatch(r"-?[0-9]+", inner):
            out.append(inner)
        else:
            out.append(token)
        pos = match.end()
    out.append(standard[pos:])
    fastjson_style = "".join(out)
    assert loads_json(fastjson_style) == json.loads(standard)

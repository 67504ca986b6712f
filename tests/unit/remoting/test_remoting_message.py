"""Stored-message decoder: round trips through the test encoder, compression, hosts, and fuzzing."""

from __future__ import annotations

import contextlib
import dataclasses
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_operator.remoting import lz4frame
from rocketmq_operator.remoting import message as message_module
from rocketmq_operator.remoting.errors import MessageDecodeError, UnsupportedCompression
from rocketmq_operator.remoting.message import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    Message,
    decode_message,
    decode_messages,
    encode_message,
    offset_msg_id,
    parse_properties,
)


def sample(**changes: object) -> Message:
    base = Message(
        topic="orders",
        queue_id=3,
        queue_offset=17,
        physical_offset=123456,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        store_timestamp=1_700_000_000_123,
        born_host="10.0.0.5:54321",
        store_host="127.0.0.1:10911",
        body=b"hello world",
        properties={"UNIQ_KEY": "ABCDEF", "KEYS": "k1 k2", "TAGS": "tagA", "WAIT": "true"},
        reconsume_times=2,
        flag=5,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_round_trip_v1() -> None:
    msg = sample()
    decoded = decode_message(encode_message(msg))
    assert decoded.magic == MAGIC_V1
    for name in (
        "topic",
        "queue_id",
        "queue_offset",
        "physical_offset",
        "born_timestamp",
        "store_timestamp",
        "born_host",
        "store_host",
        "body",
        "reconsume_times",
        "flag",
    ):
        assert getattr(decoded, name) == getattr(msg, name), name
    assert dict(decoded.properties) == dict(msg.properties)
    assert decoded.keys == ("k1", "k2") and decoded.tags == "tagA"
    assert decoded.msg_id == "ABCDEF"
    assert decoded.offset_msg_id == "7F00000100002A9F000000000001E240"
    assert decoded.body_crc == zlib.crc32(b"hello world") & 0x7FFFFFFF


def test_offset_msg_id_is_store_host_and_offset() -> None:
    assert offset_msg_id(bytes([127, 0, 0, 1]), 10911, 0) == "7F00000100002A9F0000000000000000"
    decoded = decode_message(encode_message(sample(properties={})))
    assert decoded.msg_id == decoded.offset_msg_id


def test_v2_topic_and_long_topic_default() -> None:
    long_topic = "t" * 200
    data = encode_message(sample(topic=long_topic))
    assert struct.unpack_from(">i", data, 4)[0] == MAGIC_V2
    assert decode_message(data).topic == long_topic
    assert decode_message(encode_message(sample(), version=2)).topic == "orders"


def test_ipv6_hosts() -> None:
    msg = sample(born_host="[::1]:1234", store_host="[fe80::1]:10911")
    decoded = decode_message(encode_message(msg))
    assert decoded.born_host == "[::1]:1234" and decoded.store_host == "[fe80::1]:10911"
    assert decoded.sys_flag & 0x30 == 0x30
    assert decoded.offset_msg_id.startswith("FE800000000000000000000000000001")
    assert len(decoded.offset_msg_id) == 56


def test_zlib_compressed_body() -> None:
    body = b"abc" * 1000
    data = encode_message(sample(body=body), compress=True)
    decoded = decode_message(data)
    assert decoded.body == body
    assert decoded.sys_flag & 0x1 and (decoded.sys_flag & 0x700) >> 8 == 3
    raw = decode_message(data, decompress=False)
    assert zlib.decompress(raw.body) == body


def test_legacy_zlib_type_zero() -> None:
    compressed = zlib.compress(b"legacy")
    data = encode_message(sample(body=compressed, sys_flag=0x1))
    assert decode_message(data).body == b"legacy"


# Produced by RocketMQ 5.5.0's own compressors (CompressorFactory.getCompressor(type).compress(data, 5)).
JAVA_LZ4 = {
    b"": bytes.fromhex("04224d1860707300000000"),
    b"hello": bytes.fromhex("04224d186070730500008068656c6c6f00000000"),
    b"hello " * 7 + b"hello": bytes.fromhex("04224d18607073100000006f68656c6c6f200600115068656c6c6f00000000"),
    b"abc" * 26: bytes.fromhex("04224d186070730d0000003f61626303003350626361626300000000"),
    b"a" * 1000: bytes.fromhex("04224d186070730e0000001f610100ffffffd250616161616100000000"),
    bytes(i % 256 for i in range(512)): bytes.fromhex(
        "04224d186070730b010000fff1000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021222324"
        "25262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f50515253545556"
        "5758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788"
        "898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9ba"
        "bbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebec"
        "edeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff0001e850fbfcfdfeff00000000"
    ),
    "".join(f"message-{i * 7 % 50};" for i in range(400)).encode(): bytes.fromhex(
        "04224d18607073ec000000a46d6573736167652d303b0a0015370a002531340b002632310b0015380b002533350b00263432"
        "0b0015390b0015360a002531330b0016326c0016326d0016336d0016346d0016346d00066c0016316c0016316c0016326d00"
        "16336d0016346d0016346d00066c0016316c0016316c0016326d0016336d0016336d0017346d0005d90016316c0016316c00"
        "16326d0016336d0016336d0016346d00066c00066b0016316b001632d80016336c0016336c0016346c00066b00066a001731"
        "6a00066b0016326c0016336c0016346c00066b00066a000f1c02ffffffffffffffffffffffffffff9e50652d34333b000000"
        "00"
    ),
}
JAVA_ZLIB_HELLO = bytes.fromhex("785ecb48cdc9c90700062c0215")
JAVA_ZSTD_HELLO = bytes.fromhex("28b52ffd005828000068656c6c6f010000")


@pytest.mark.parametrize("plain", list(JAVA_LZ4))
def test_lz4_bodies_from_the_java_compressor(plain: bytes) -> None:
    data = encode_message(sample(body=JAVA_LZ4[plain], sys_flag=0x1 | (1 << 8)))
    assert decode_message(data).body == plain
    assert lz4frame.decompress(JAVA_LZ4[plain]) == plain


def test_zlib_body_from_the_java_compressor() -> None:
    assert decode_message(encode_message(sample(body=JAVA_ZLIB_HELLO, sys_flag=0x301))).body == b"hello"


def test_xxh32_known_values() -> None:
    assert lz4frame.xxh32(b"") == 0x02CC5D05
    assert lz4frame.xxh32(b"a") == 0x550D7456


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"\x04\x22\x4d", "truncated in a frame magic"),
        (b"\x00\x00\x00\x00", "not an lz4 frame"),
        (bytes.fromhex("04224d1860707400000000"), "header checksum mismatch"),
        (bytes.fromhex("04224d186070730500008068656c6c"), "truncated inside a block"),
        (bytes.fromhex("04224d18607073040000001061ffff00000000"), "points before the start"),
        (bytes.fromhex("04224d18607073020000005061"), "overruns the block"),
    ],
)
def test_malformed_lz4(data: bytes, message: str) -> None:
    with pytest.raises(MessageDecodeError, match=message):
        lz4frame.decompress(data)


def test_lz4_output_cap() -> None:
    with pytest.raises(MessageDecodeError, match="inflates beyond 100 bytes"):
        lz4frame.decompress(JAVA_LZ4[b"a" * 1000], max_size=100)


def _stdlib_zstd() -> bool:
    try:
        import compression.zstd  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def test_zstd_body() -> None:
    data = encode_message(sample(body=JAVA_ZSTD_HELLO, sys_flag=0x1 | (2 << 8)))
    if _stdlib_zstd():
        assert decode_message(data).body == b"hello"
        return
    with pytest.raises(UnsupportedCompression, match="ZSTD") as info:
        decode_message(data)
    assert info.value.compression == "ZSTD"
    assert decode_message(data, decompress=False).body == JAVA_ZSTD_HELLO


def test_unknown_compression_type() -> None:
    data = encode_message(sample(sys_flag=0x1 | (5 << 8)))
    with pytest.raises(UnsupportedCompression, match="UNKNOWN_5"):
        decode_message(data)


def test_corrupt_and_oversized_zlib() -> None:
    with pytest.raises(MessageDecodeError, match="zlib body is corrupt"):
        decode_message(encode_message(sample(body=b"not zlib", sys_flag=0x301)))
    bomb = zlib.compress(b"\0" * 100_000)
    with pytest.raises(MessageDecodeError, match="inflates beyond 1000 bytes"):
        decode_messages(encode_message(sample(body=bomb, sys_flag=0x301)), max_body_size=1000)
    with pytest.raises(MessageDecodeError, match="truncated"):
        decode_message(encode_message(sample(body=zlib.compress(b"x" * 100)[:-3], sys_flag=0x301)))


def test_several_records_concatenated() -> None:
    records = [sample(queue_offset=i, body=bytes([i]) * i) for i in range(5)]
    data = b"".join(encode_message(m) for m in records)
    decoded = decode_messages(data)
    assert [m.queue_offset for m in decoded] == [0, 1, 2, 3, 4]
    assert [m.body for m in decoded] == [m.body for m in records]
    assert decode_messages(b"") == []


def test_properties_parsing_matches_java_split() -> None:
    assert parse_properties("a\x011\x02b\x012\x02") == {"a": "1", "b": "2"}
    # Items without exactly one separator, or an empty value, are skipped.
    assert parse_properties("a\x02b\x01\x02c\x01x\x01y\x02d\x01v") == {"d": "v"}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d[:10], "message #0 at byte 0: total size"),
        (lambda d: struct.pack(">i", 7) + d[4:], "total size 7"),
        (lambda d: d[:4] + struct.pack(">i", BLANK_MAGIC) + d[8:], "blank"),
        (lambda d: d[:4] + struct.pack(">i", 12345) + d[8:], "unknown magic code 12345"),
        (lambda d: struct.pack(">i", 40) + d[4:40], "field BORNTIMESTAMP needs 8 bytes at offset 40"),
        (lambda d: d + b"\x00\x00", "message #1 at byte"),
    ],
)
def test_malformed_records(mutate: object, message: str) -> None:
    data = encode_message(sample())
    with pytest.raises(MessageDecodeError, match=message):
        decode_messages(mutate(data))  # type: ignore[operator]


def test_negative_properties_length() -> None:
    data = bytearray(encode_message(sample(properties={})))
    data[-2:] = struct.pack(">h", -1)
    with pytest.raises(MessageDecodeError, match="negative properties length"):
        decode_messages(bytes(data))


# ------------------------------------------------------------------------------------------ fuzzing

hosts = st.one_of(
    st.tuples(st.ip_addresses(v=4), st.integers(0, 65535)).map(lambda t: f"{t[0]}:{t[1]}"),
    st.tuples(st.ip_addresses(v=6), st.integers(0, 65535)).map(lambda t: f"[{t[0]}]:{t[1]}"),
)
prop_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), max_size=20)
messages = st.builds(
    Message,
    topic=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    queue_offset=st.integers(-(2**63), 2**63 - 1),
    physical_offset=st.integers(-(2**63), 2**63 - 1),
    sys_flag=st.sampled_from([0, 0x2, 0x4, 0x8, 0x80]),
    born_timestamp=st.integers(0, 2**62),
    store_timestamp=st.integers(0, 2**62),
    born_host=hosts,
    store_host=hosts,
    body=st.binary(max_size=300),
    properties=st.dictionaries(prop_text.filter(bool), prop_text.filter(bool), max_size=5),
    reconsume_times=st.integers(0, 100),
    flag=st.integers(-(2**31), 2**31 - 1),
    prepared_transaction_offset=st.integers(-(2**63), 2**63 - 1),
)


@settings(max_examples=50, deadline=None)
@given(st.lists(messages, min_size=1, max_size=3), st.booleans())
def test_round_trip_property(msgs: list[Message], compress: bool) -> None:
    data = b"".join(encode_message(m, compress=compress) for m in msgs)
    decoded = decode_messages(data)
    assert len(decoded) == len(msgs)
    for original, got in zip(msgs, decoded, strict=True):
        assert got.topic == original.topic and got.body == original.body
        assert got.born_host == original.born_host and got.store_host == original.store_host
        assert dict(got.properties) == dict(original.properties)
        assert (got.queue_offset, got.physical_offset, got.flag) == (
            original.queue_offset,
            original.physical_offset,
            original.flag,
        )


@settings(max_examples=250, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_decode_or_message_decode_error(data: bytes) -> None:
    with contextlib.suppress(MessageDecodeError):
        decode_messages(data)


@settings(max_examples=60, deadline=None)
@given(messages, st.integers(0, 400), st.binary(min_size=1, max_size=8), st.integers(0, 400))
def test_mutated_records_decode_or_message_decode_error(msg: Message, at: int, noise: bytes, cut: int) -> None:
    data = bytearray(encode_message(msg, compress=at % 2 == 0))
    pos = at % len(data)
    data[pos : pos + len(noise)] = noise
    for candidate in (bytes(data), bytes(data[: cut % (len(data) + 1)])):
        with contextlib.suppress(MessageDecodeError):
            decode_messages(candidate)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_lz4_arbitrary_bytes_decode_or_error(data: bytes) -> None:
    with contextlib.suppress(MessageDecodeError):
        lz4frame.decompress(b"\x04\x22\x4d\x18\x60\x70\x73" + data)
    with contextlib.suppress(MessageDecodeError):
        lz4frame.decompress(data)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(list(JAVA_LZ4.values())), st.integers(0, 300), st.binary(min_size=1, max_size=4))
def test_lz4_mutated_frames_decode_or_error(frame: bytes, at: int, noise: bytes) -> None:
    data = bytearray(frame)
    pos = at % len(data)
    data[pos : pos + len(noise)] = noise
    with contextlib.suppress(MessageDecodeError):
        lz4frame.decompress(bytes(data))


@settings(max_examples=200, deadline=None)
@given(messages, st.integers(0, 400), st.binary(max_size=8), st.integers(0, 400))
def test_fast_path_agrees_with_the_checked_decoder(msg: Message, at: int, noise: bytes, cut: int) -> None:
    """The one-unpack fast path either declines (``None``) or returns exactly what the field-by-field
    decoder returns; it never accepts a record the checked decoder refuses."""
    data = bytearray(encode_message(msg))
    pos = at % len(data)
    data[pos : pos + len(noise)] = noise
    for candidate in (bytes(data), bytes(data[: cut % (len(data) + 1)])):
        fast = message_module._decode_one_fast(candidate, 0)
        try:
            checked = message_module._decode_one_checked(candidate, 0, 0, True, message_module.MAX_BODY_SIZE)
        except MessageDecodeError:
            assert fast is None
            continue
        assert fast is None or fast == checked
    if not noise and msg.born_host.count(".") == 3 and msg.store_host.count(".") == 3:
        assert message_module._decode_one_fast(encode_message(msg), 0) is not None  # the common case is fast

"""Pure-Python decoder of the LZ4 frame format (what RocketMQ's ``Lz4Compressor`` writes).

Contract: :func:`decompress` takes one or more concatenated LZ4 frames (magic ``0x184D2204``; skippable
frames are skipped) and returns the concatenated content. It checks the frame descriptor's header
checksum, and block and content checksums when the frame declares them (xxHash32), refuses output
beyond ``max_size``, and raises :class:`MessageDecodeError` - never another exception - for anything
malformed. Standard library only; meant for message bodies (kilobytes to a few MiB), not for bulk data.
The LZ4 frame and block formats are public specifications (lz4/lz4 ``doc/lz4_Frame_format.md``,
``doc/lz4_Block_format.md``).
"""

from __future__ import annotations

import struct

from .errors import MessageDecodeError

FRAME_MAGIC = 0x184D2204
_SKIPPABLE_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50
_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}

_P1 = 2654435761
_P2 = 2246822519
_P3 = 3266489917
_P4 = 668265263
_P5 = 374761393
_M = 0xFFFFFFFF


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _M


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of ``data``."""
    length = len(data)
    pos = 0
    if length >= 16:
        v1 = (seed + _P1 + _P2) & _M
        v2 = (seed + _P2) & _M
        v3 = seed & _M
        v4 = (seed - _P1) & _M
        limit = length - 16
        while pos <= limit:
            a, b, c, d = struct.unpack_from("<4I", data, pos)
            v1 = (_rotl((v1 + a * _P2) & _M, 13) * _P1) & _M
            v2 = (_rotl((v2 + b * _P2) & _M, 13) * _P1) & _M
            v3 = (_rotl((v3 + c * _P2) & _M, 13) * _P1) & _M
            v4 = (_rotl((v4 + d * _P2) & _M, 13) * _P1) & _M
            pos += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M
    else:
        h = (seed + _P5) & _M
    h = (h + length) & _M
    while pos + 4 <= length:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _M, 17) * _P4) & _M
        pos += 4
    while pos < length:
        h = (_rotl((h + data[pos] * _P5) & _M, 11) * _P1) & _M
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M
    h ^= h >> 13
    h = (h * _P3) & _M
    h ^= h >> 16
    return h


def _block(src: bytes, out: bytearray, frame_start: int, max_size: int) -> None:
    """Decode one LZ4 block, appending to ``out``; matches may reach back to ``frame_start``."""
    pos = 0
    end = len(src)
    while True:
        if pos >= end:
            raise MessageDecodeError("lz4 block ends without a final literal run")
        token = src[pos]
        pos += 1
        literals = token >> 4
        if literals == 15:
            while True:
                if pos >= end:
                    raise MessageDecodeError("lz4 block truncated in a literal length")
                extra = src[pos]
                pos += 1
                literals += extra
                if extra != 255:
                    break
        if literals > end - pos:
            raise MessageDecodeError(f"lz4 literal run of {literals} bytes overruns the block")
        if len(out) + literals > max_size:
            raise MessageDecodeError(f"lz4 body inflates beyond {max_size} bytes")
        out += src[pos : pos + literals]
        pos += literals
        if pos == end:
            return
        if end - pos < 2:
            raise MessageDecodeError("lz4 block truncated in a match offset")
        offset = src[pos] | (src[pos + 1] << 8)
        pos += 2
        if offset == 0 or offset > len(out) - frame_start:
            raise MessageDecodeError(f"lz4 match offset {offset} points before the start of the data")
        length = token & 15
        if length == 15:
            while True:
                if pos >= end:
                    raise MessageDecodeError("lz4 block truncated in a match length")
                extra = src[pos]
                pos += 1
                length += extra
                if extra != 255:
                    break
        length += 4
        if len(out) + length > max_size:
            raise MessageDecodeError(f"lz4 body inflates beyond {max_size} bytes")
        start = len(out) - offset
        if offset >= length:
            out += out[start : start + length]
        else:  # overlapping copy: the last `offset` bytes repeat
            pattern = bytes(out[start:])
            out += (pattern * (length // offset + 1))[:length]


def _frame(data: bytes, pos: int, out: bytearray, max_size: int) -> int:
    frame_start = len(out)
    if len(data) - pos < 3:
        raise MessageDecodeError("lz4 frame descriptor truncated")
    flg, bd = data[pos], data[pos + 1]
    if flg >> 6 != 1:
        raise MessageDecodeError(f"lz4 frame version {flg >> 6} is not 1")
    if flg & 0x02 or bd & 0x8F:
        raise MessageDecodeError("lz4 frame descriptor has reserved bits set")
    block_max = _BLOCK_MAX.get((bd >> 4) & 0x7)
    if block_max is None:
        raise MessageDecodeError(f"lz4 block maximum size code {(bd >> 4) & 0x7} is invalid")
    block_checksum = bool(flg & 0x10)
    content_size_present = bool(flg & 0x08)
    content_checksum = bool(flg & 0x04)
    dict_id = bool(flg & 0x01)
    descriptor_len = 2 + (8 if content_size_present else 0) + (4 if dict_id else 0)
    if len(data) - pos < descriptor_len + 1:
        raise MessageDecodeError("lz4 frame descriptor truncated")
    descriptor = data[pos : pos + descriptor_len]
    if (xxh32(descriptor) >> 8) & 0xFF != data[pos + descriptor_len]:
        raise MessageDecodeError("lz4 frame header checksum mismatch")
    if dict_id:
        raise MessageDecodeError("lz4 frames with a dictionary id are not supported")
    content_size = struct.unpack_from("<Q", data, pos + 2)[0] if content_size_present else None
    pos += descriptor_len + 1
    while True:
        if len(data) - pos < 4:
            raise MessageDecodeError("lz4 frame truncated before a block size")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == 0:
            break
        raw = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        if size > block_max:
            raise MessageDecodeError(f"lz4 block of {size} bytes exceeds the frame's {block_max}-byte maximum")
        if len(data) - pos < size + (4 if block_checksum else 0):
            raise MessageDecodeError("lz4 frame truncated inside a block")
        block = data[pos : pos + size]
        pos += size
        if block_checksum:
            (expected,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if xxh32(block) != expected:
                raise MessageDecodeError("lz4 block checksum mismatch")
        if raw:
            if len(out) + size > max_size:
                raise MessageDecodeError(f"lz4 body inflates beyond {max_size} bytes")
            out += block
        else:
            _block(block, out, frame_start, max_size)
    if content_checksum:
        if len(data) - pos < 4:
            raise MessageDecodeError("lz4 frame truncated in the content checksum")
        (expected,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if xxh32(bytes(out[frame_start:])) != expected:
            raise MessageDecodeError("lz4 content checksum mismatch")
    if content_size is not None and content_size != len(out) - frame_start:
        raise MessageDecodeError(f"lz4 frame declares {content_size} bytes but holds {len(out) - frame_start}")
    return pos


def decompress(data: bytes, max_size: int = 64 * 1024 * 1024) -> bytes:
    """Decode concatenated LZ4 frames; raises :class:`MessageDecodeError`."""
    data = bytes(data)
    out = bytearray()
    pos = 0
    if not data:
        raise MessageDecodeError("lz4 body is empty")
    while pos < len(data):
        if len(data) - pos < 4:
            raise MessageDecodeError("lz4 data truncated in a frame magic number")
        (magic,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if magic == FRAME_MAGIC:
            pos = _frame(data, pos, out, max_size)
        elif magic & _SKIPPABLE_MASK == _SKIPPABLE_MAGIC:
            if len(data) - pos < 4:
                raise MessageDecodeError("lz4 skippable frame truncated")
            (size,) = struct.unpack_from("<I", data, pos)
            if size > len(data) - pos - 4:
                raise MessageDecodeError("lz4 skippable frame truncated")
            pos += 4 + size
        else:
            raise MessageDecodeError(f"not an lz4 frame (magic 0x{magic:08X})")
    return bytes(out)

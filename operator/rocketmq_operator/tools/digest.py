"""Message bodies derived from keys, and the order-independent digest shared by producer and consumer.

Contract:

* :func:`body_for` ``(key, size)`` is the body the tools send for ``key``: the first ``size`` bytes of
  SHAKE-256 over ``b"rocketmq-operator/body\\0" + key`` (UTF-8). It is deterministic, so a consumer can
  check any body against its key without knowing the producer's run (:func:`body_matches`).
* The digest of one message is ``sha256(key_utf8 + b"\\0" + body)`` read as a 256-bit big-endian integer
  (:func:`message_digest`). The digest of a collection is the **sum modulo 2^256** of the digests of its
  *distinct* ``(key, body)`` pairs, printed as 64 lowercase hex digits (:class:`Digest`). It does not depend
  on order (addition commutes), adding the same pair twice does not change it (a redelivered message does
  not change the consumer's digest; duplicates are counted separately), and any added, missing or altered
  pair changes it except with negligible probability. The empty collection's digest is 64 zeros.
* Producer and consumer use this same definition, so "every acknowledged message was consumed and nothing
  else" is ``produce(...).acknowledged_digest == consume(...).digest``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

DIGEST_BITS = 256
DIGEST_MODULUS = 1 << DIGEST_BITS
_BODY_DOMAIN = b"rocketmq-operator/body\0"


def body_for(key: str, size: int) -> bytes:
    """The deterministic ``size``-byte body for ``key``."""
    if size < 0:
        raise ValueError(f"body size must be >= 0, got {size}")
    return hashlib.shake_256(_BODY_DOMAIN + key.encode("utf-8")).digest(size)


def body_matches(key: str, body: bytes) -> bool:
    """Whether ``body`` is what :func:`body_for` gives for ``key`` at that length."""
    return body == body_for(key, len(body))


def message_digest(key: str, body: bytes) -> int:
    """``sha256(key + b"\\0" + body)`` as an integer in ``[0, 2^256)``."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8") + b"\0" + body).digest(), "big")


def format_digest(value: int) -> str:
    return f"{value % DIGEST_MODULUS:064x}"


class Digest:
    """Accumulates the digest of a set of distinct ``(key, body)`` pairs."""

    __slots__ = ("_pairs", "_value")

    def __init__(self, pairs: Iterable[tuple[str, bytes]] = ()) -> None:
        self._pairs: set[int] = set()
        self._value = 0
        for key, body in pairs:
            self.add(key, body)

    @classmethod
    def of_digests(cls, items: Iterable[int]) -> Digest:
        """A digest from precomputed :func:`message_digest` values."""
        out = cls()
        for item in items:
            out.add_digest(item)
        return out

    def add(self, key: str, body: bytes) -> bool:
        """Add one pair; ``False`` if that exact pair was already added (the digest is unchanged)."""
        return self.add_digest(message_digest(key, body))

    def add_digest(self, item: int) -> bool:
        """Add one pair given as its :func:`message_digest`."""
        if not 0 <= item < DIGEST_MODULUS:
            raise ValueError("a message digest is an integer in [0, 2^256)")
        if item in self._pairs:
            return False
        self._pairs.add(item)
        self._value = (self._value + item) % DIGEST_MODULUS
        return True

    def __len__(self) -> int:
        return len(self._pairs)

    @property
    def value(self) -> int:
        return self._value

    def hexdigest(self) -> str:
        return format_digest(self._value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Digest):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Digest({self.hexdigest()}, pairs={len(self._pairs)})"


def digest_of(pairs: Iterable[tuple[str, bytes]]) -> str:
    """Hex digest of the distinct pairs in ``pairs``."""
    return Digest(pairs).hexdigest()

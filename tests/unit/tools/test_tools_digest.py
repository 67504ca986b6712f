"""The digest shared by producer and consumer, and the key-derived bodies."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given
from hypothesis import strategies as st
from tools_fakes import FakeClient, make_route

from rocketmq_operator.tools import Digest, body_for, body_matches, consume, digest_of, message_digest, produce
from rocketmq_operator.tools.digest import DIGEST_MODULUS

pairs = st.lists(st.tuples(st.text(max_size=20), st.binary(max_size=64)), max_size=30)


def test_definition_is_sum_mod_2_256_of_sha256() -> None:
    items = [("k1", b"a"), ("k2", b"\x00\xff"), ("", b"")]
    expected = sum(int.from_bytes(hashlib.sha256(k.encode() + b"\0" + b).digest(), "big") for k, b in items)
    assert Digest(items).value == expected % DIGEST_MODULUS
    assert digest_of(items) == f"{expected % DIGEST_MODULUS:064x}"
    assert message_digest("k1", b"a") == int(hashlib.sha256(b"k1\x00a").hexdigest(), 16)


def test_precomputed_digests_give_the_same_value() -> None:
    items = [(f"k{i}", body_for(f"k{i}", 5)) for i in range(20)]
    assert Digest.of_digests(message_digest(k, b) for k, b in items) == Digest(items)


def test_empty_digest_is_zeros() -> None:
    assert Digest().hexdigest() == "0" * 64 and len(Digest()) == 0


@given(pairs, st.randoms(use_true_random=False))
def test_order_independent(items: list[tuple[str, bytes]], rnd: random.Random) -> None:
    shuffled = list(items)
    rnd.shuffle(shuffled)
    assert digest_of(items) == digest_of(shuffled)


@given(pairs)
def test_redelivery_does_not_change_digest(items: list[tuple[str, bytes]]) -> None:
    assert digest_of(items + items) == digest_of(items)
    d = Digest(items)
    assert all(not d.add(k, b) for k, b in items)


@given(pairs, st.text(max_size=10), st.binary(max_size=10))
def test_sensitive_to_added_pair(items: list[tuple[str, bytes]], key: str, body: bytes) -> None:
    if (key, body) in items:
        return
    assert digest_of([*items, (key, body)]) != digest_of(items)


def test_sensitive_to_body_key_and_missing_message() -> None:
    base = [(f"k{i}", body_for(f"k{i}", 16)) for i in range(10)]
    reference = digest_of(base)
    flipped = [*base[:-1], ("k9", bytes([base[-1][1][0] ^ 1]) + base[-1][1][1:])]
    assert digest_of(flipped) != reference
    assert digest_of([*base[:-1], ("k10", base[-1][1])]) != reference
    assert digest_of(base[:-1]) != reference
    # The key/body boundary is delimited: ("ab", "c") and ("a", "bc") differ.
    assert digest_of([("ab", b"c")]) != digest_of([("a", b"bc")])


def test_body_for_is_deterministic_and_sized() -> None:
    assert body_for("k", 1024) == body_for("k", 1024) and len(body_for("k", 1024)) == 1024
    assert body_for("k", 0) == b""
    assert body_for("k", 10) == body_for("k", 1024)[:10]
    assert body_for("k1", 64) != body_for("k2", 64)
    assert body_matches("k", body_for("k", 33)) and not body_matches("k", body_for("j", 33))


async def test_producer_and_consumer_compute_the_same_digest() -> None:
    client = FakeClient(routes={"t": make_route("t", {"a": {0: "a0:1"}, "b": {0: "b0:1"}})})
    report = await produce(None, "t", 37, size=50, concurrency=5, key_prefix="p-", client=client)
    expected = digest_of((f"p-{i}", body_for(f"p-{i}", 50)) for i in range(37))
    assert report.acknowledged_digest == report.digest == report.sent_digest == expected
    read = await consume(None, "t", idle_timeout=0.05, poll_interval=0.01, client=client)
    assert read.digest == expected and read.count == 37 and read.body_mismatches == 0

"""The Spark bench's digest arithmetic: 32-bit chunk sums (what Spark SQL computes) give tools.digest's value."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_operator.spark.bench import DIGEST_CHUNK_HEX, combine_chunk_sums, digest_aggregates
from rocketmq_operator.tools.digest import Digest, format_digest


def chunk_sums(hex_digests: list[str]) -> list[int]:
    """What :func:`digest_aggregates` computes, in Python."""
    return [
        sum(int(d[i * DIGEST_CHUNK_HEX : (i + 1) * DIGEST_CHUNK_HEX], 16) for d in hex_digests)
        for i in range(64 // DIGEST_CHUNK_HEX)
    ]


@given(st.lists(st.integers(0, 2**256 - 1), unique=True, max_size=200))
def test_chunk_sums_combine_to_the_digest(values: list[int]) -> None:
    hex_digests = [format_digest(v) for v in values]
    assert combine_chunk_sums(chunk_sums(hex_digests)) == Digest.of_digests(values).hexdigest()


def test_empty_input_and_null_sums() -> None:
    assert combine_chunk_sums([None] * 8) == "0" * 64  # Spark's sum of no rows


def test_aggregates_cover_the_whole_digest() -> None:
    exprs = digest_aggregates("d")
    assert exprs[0] == "count(*) AS n"
    starts = [int(m.group(1)) for e in exprs[1:] if (m := re.search(r"substr\(d, (\d+), 8\)", e))]
    assert starts == list(range(1, 65, 8))

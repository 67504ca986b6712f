"""`bench quorum` on real brokers: a stalled slave stalls every all-sync put and no quorum put (RIP-34)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.bench.quorum import run_quorum

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def test_a_stalled_slave_stalls_all_sync_and_not_quorum(local_platform: Any, tmp_path: Path) -> None:
    local_platform.stop_current()  # the fixture checked java and the distribution; the bench runs its own groups
    doc = asyncio.run(
        run_quorum(
            tmp_path / "quorum",
            replicas=[3],
            modes=["quorum", "allSync"],
            conditions=["healthy", "stalled"],
            seconds=5.0,
            rate=100.0,
        )
    )
    cells = {(c["mode"], c["condition"]): c for c in doc["cells"]}
    assert set(cells) == {(m, c) for m in ("quorum", "allSync") for c in ("healthy", "stalled")}, doc
    for cell in cells.values():
        assert cell["sends"] > 0 and cell["predicted_statuses"], cell
    # The other slave's ack is enough for 2 of 3: no put waits for the stalled one.
    assert "FLUSH_SLAVE_TIMEOUT" not in cells["quorum", "stalled"]["statuses"], cells["quorum", "stalled"]
    assert cells["quorum", "stalled"]["statuses"].get("PUT_OK", 0) > 0, cells["quorum", "stalled"]
    # 3 of 3 waits for it and times out (stored on the master).
    assert cells["allSync", "stalled"]["statuses"].get("FLUSH_SLAVE_TIMEOUT", 0) > 0, cells["allSync", "stalled"]
    assert cells["allSync", "stalled"]["predicted_statuses"] == ["FLUSH_SLAVE_TIMEOUT"]

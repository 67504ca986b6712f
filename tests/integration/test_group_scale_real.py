"""Growing and shrinking a cluster by broker groups on real brokers (local platform), under a producer and a
committing consumer group, as a user does it with `local apply`:

1. a second group is added to a running one-group cluster: it gets the cluster's topic and consumer group (placed
   by clusterName) and the producer sends to it after its next route refresh;
2. removing it while its consumers have not read it is refused, in one line with the fix, and changes nothing
   (the producer goes on being acknowledged by it);
3. `spec.draining: true`: the producer leaves it, the consumers read it, `local status` says Drained;
4. removing it then succeeds; its processes stop;
5. a group its readers never read is refused removal too (its lag counts from the queues' min offsets), and
   `--force` removes it, saying what is dropped.
Every acknowledged key was consumed by the consumer group, but for those the forced removal said it dropped.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from group_load import Producer, Readers
from rocketmq_operator.tools.noloss import missing_acknowledged

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two-groups.yaml"
TOPIC, READERS, ADDED, UNREAD = "orders", "orders-readers", "broker-b", "broker-c"


def _manifest(path: Path, *, with_added: bool, draining: bool = False, another: str | None = None) -> Path:
    """The example without broker-b, with it (draining or not), or with a copy of it named ``another`` instead."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if d]
    out = []
    for doc in docs:
        if doc["kind"] == "BrokerGroup" and doc["metadata"]["name"] == ADDED:
            if another is not None:
                doc["metadata"]["name"] = another
            elif not with_added:
                continue
            if draining:
                doc["spec"]["draining"] = True
        out.append(doc)
    path.write_text(yaml.safe_dump_all(out, sort_keys=False), encoding="utf-8")
    return path


def _group(doc: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((g for g in doc["groups"] if g["name"] == name), None)


def _until(what: str, predicate: Any, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not reached in {timeout:g} s")
        time.sleep(0.2)


def test_add_then_drain_and_remove_a_group_under_load(local_platform: Any, tmp_path: Path) -> None:
    one = _manifest(tmp_path / "one.yaml", with_added=False)
    two = _manifest(tmp_path / "two.yaml", with_added=True)
    draining = _manifest(tmp_path / "draining.yaml", with_added=True, draining=True)
    unread = _manifest(tmp_path / "unread.yaml", with_added=False, another=UNREAD)
    with local_platform.up(one, name="group-scale") as cluster:
        name_servers = cluster.status()["nameServers"]
        producer, readers = Producer(name_servers, TOPIC), Readers(name_servers, TOPIC, READERS)
        producer.thread.start()
        readers.thread.start()
        try:
            # 1. Added: the cluster's topic and consumer group on it before it is writable; the producer finds it.
            cluster.cli("apply", "-f", str(two), timeout=300)
            cluster.wait_for(
                f"{ADDED} writable with the cluster's topic",
                lambda d: bool((g := _group(d, ADDED)) and g.get("writable") and g.get("topicsAsserted")),
                timeout=300,
            )
            _until(f"the producer sends to {ADDED}", lambda: len(producer.acked(ADDED)) >= 20)

            # 2. Removal with unconsumed messages: refused, nothing changed.
            readers.paused.set()
            before = len(producer.acked(ADDED))
            _until(f"sends to {ADDED} its readers have not read", lambda: len(producer.acked(ADDED)) > before + 10)
            refused = cluster.cli("apply", "-f", str(one), check=False, timeout=120)
            assert refused.returncode == 1, refused.stdout + refused.stderr
            errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
            assert len(errors) == 1, refused.stderr
            assert "removal refused" in errors[0] and "fix:" in errors[0] and ADDED in errors[0], errors[0]
            assert "Traceback" not in refused.stderr
            after_refusal = len(producer.acked(ADDED))
            _until(f"{ADDED} still acknowledges sends", lambda: len(producer.acked(ADDED)) > after_refusal + 10)
            assert _group(cluster.status(), ADDED) is not None

            # 3. Drained: the producer leaves it, the readers read it.
            readers.paused.clear()
            cluster.cli("apply", "-f", str(draining), timeout=120)
            doc = cluster.wait_for(
                f"{ADDED} drained",
                lambda d: bool((g := _group(d, ADDED)) and (g.get("drain") or {}).get("drained")),
                timeout=240,
            )
            drain = _group(doc, ADDED)["drain"]  # type: ignore[index]
            assert drain["lagTotal"] == 0, drain

            # 4. Removed once drained.
            removed = cluster.cli("apply", "-f", str(one), timeout=180)
            assert "removed" in removed.stdout, removed.stdout + removed.stderr
            cluster.wait_for(
                f"{ADDED} gone",
                lambda d: (
                    _group(d, ADDED) is None and not any(p["name"].startswith(f"{ADDED}-") for p in d["processes"])
                ),
                timeout=180,
            )

            # 5. A group its readers never read (no offset committed on it): removal refused all the same, then
            #    forced, saying what it drops.
            readers.paused.set()
            cluster.cli("apply", "-f", str(unread), timeout=300)
            _until(f"sends to {UNREAD}", lambda: len(producer.acked(UNREAD)) >= 10)
            refused = cluster.cli("apply", "-f", str(one), check=False, timeout=120)
            assert refused.returncode == 1 and "removal refused" in refused.stderr, refused.stdout + refused.stderr
            forced = cluster.cli("apply", "-f", str(one), "--force", timeout=180)
            assert "removal forced" in forced.stdout and "dropped" in forced.stdout, forced.stdout + forced.stderr
            readers.paused.clear()
        finally:
            producer.stop.set()
            producer.thread.join(timeout=60)
            readers.stop.set()
            readers.thread.join(timeout=120)
        asyncio.run(readers.read_once())  # what was sent to broker-a meanwhile
        acked = producer.acked()
        on_added = producer.acked(ADDED)
        assert on_added, "no send was acknowledged by the added group"
        dropped = set(producer.acked(UNREAD))  # what the forced removal said it drops
        lost = missing_acknowledged(set(acked) - dropped, readers.keys)
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged keys never consumed, e.g. {sorted(lost)[:5]}"

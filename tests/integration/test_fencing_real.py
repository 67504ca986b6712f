"""A deposed master never acknowledges a write, on real brokers (local platform), repeated to catch races.

- a hung master (SIGSTOP) is fenced (SIGKILL by the supervisor, which owns it) and replaced after
  spec.failover.detectionSeconds; a client whose route still names it keeps sending to it through the
  election and its SIGCONT: it acknowledges nothing, and every acknowledged message is at its queue offset on
  the final master (`deposed_acks`, the bench's check) and is consumed;
- the master SIGKILLed right after the controller leadership moved: recovered, nothing lost;
- every name server (and the controller hosted with it) restarted: the master's route comes back (the policy
  re-registers it at once instead of waiting for RocketMQ's 30 s periodic registration) and sends succeed.
Figures (RTO) are the bench's (docs/benchmarks.md); here only outcomes as the client sees them are asserted.
The first two share one cluster of the fast-detection manifest (`local_platform.shared`: each bench run waits for a
healthy group first), the three-controller one comes last on its own.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from outcomes import LOAD_FAILURES

from rocketmq_operator.bench.failover import run_bench
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException, is_name_server_not_ready
from rocketmq_operator.tools.produce import produce

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FAST = ROOT / "tests" / "integration" / "manifests" / "quickstart-fast-detection.yaml"
THREE_CONTROLLERS = ROOT / "examples" / "three-controllers.yaml"
HUNG_MASTER_TRIALS = 6
LEADER_CHANGE_TRIALS = 4


def _bench(cluster: Any, manifest: Path, trials: int, **options: Any) -> dict[str, Any]:
    # The cluster is already up with the same manifest: the bench's `local up` finds it running and reuses it.
    try:
        return asyncio.run(run_bench([str(manifest)], cluster.state_dir, trials, 200.0, 0.25, True, **options))
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{cluster.log_tails()}") from exc


def _assert_clean(doc: dict[str, Any], trials: int) -> None:
    summary = {k: doc[k] for k in ("lost", "deposed_acks", "stale_route_acks", "unrecovered_trials", "statuses")}
    assert doc["trials"] == trials, summary
    assert doc["acknowledged"] > 0 and doc["consumed"] >= doc["acknowledged"], summary
    assert doc["lost"] == 0, summary
    assert doc["deposed_acks"] == 0, summary
    assert doc["stale_route_acks"] == 0, summary
    assert doc["unrecovered_trials"] == 0, summary
    for trial in doc["per_trial"]:
        assert trial["new_master"] not in (None, trial["killed_broker_id"]), trial


def test_hung_master_is_fenced_and_acknowledges_nothing(local_platform: Any) -> None:
    cluster = local_platform.shared(FAST, name="fencing")
    with local_platform.down_on_failure():
        doc = _bench(cluster, FAST, HUNG_MASTER_TRIALS, fault="stop")
        _assert_clean(doc, HUNG_MASTER_TRIALS)
        assert doc["stale_route_sends"] > 0
        log = (cluster.state_dir / "supervisor.log").read_text(encoding="utf-8")
        # Fenced by the supervisor before the controller's own 10 s timeout could elect.
        assert log.count("fenced master") >= HUNG_MASTER_TRIALS, cluster.log_tails()
        # Frozen first, and the most caught-up SyncStateSet member elected before the kill (docs/fencing.md).
        assert "elected the most caught-up member" in log, cluster.log_tails()


async def _route_answers(namesrv: list[str], topic: str, group: str) -> list[str]:
    """What each name server answers for the topic's route: "master", "no master" (a route whose group has no
    master: every send to it fails), "not ready" (needWaitForService) or "down"."""
    answers: list[str] = []
    async with RemotingClient(namesrv, connect_timeout=1.0, request_timeout=1.0) as client:
        for addr in namesrv:
            try:
                route = await client.get_route(topic, namesrv=addr, timeout=1.0)
            except (RemotingException, OSError) as exc:
                answers.append("not ready" if is_name_server_not_ready(exc) else "down")
                continue
            broker = route.broker(group)
            answers.append("master" if broker is not None and 0 in broker.broker_addrs else "no master")
    return answers


def test_routes_return_after_every_name_server_restarts(local_platform: Any) -> None:
    cluster = local_platform.shared(FAST, name="fencing")
    with local_platform.down_on_failure():
        # Writable, not only elected: the controller names a master before the broker has registered its route
        # (CI saw 20 of 20 first sends fail in that gap at load 20+).
        cluster.wait_for(
            "a writable master",
            lambda d: (
                bool((cluster.group("broker-a", d).get("master") or {}).get("address"))
                and cluster.group("broker-a", d).get("writable") is True
            ),
            timeout=180,
        )
        state = read_state(StateLayout(cluster.state_dir).state_file)
        topic = f"route-{int(time.time())}"
        # With the client's retries; a loaded machine may still fail a send (CI saw 19 of 20 at load 20+), which
        # is not what this test is about: the topic and its route exist once one send is acknowledged.
        report = asyncio.run(produce(state.name_servers, topic, count=20, timeout=3.0))
        assert report.acknowledged > 0 and set(report.failures) <= LOAD_FAILURES, report.failures
        layout = StateLayout(cluster.state_dir)
        for r in state.replicas:
            if r.kind == "ControllerGroup":
                answer = asyncio.run(
                    lifecycle.request(layout, "signal", replica=r.name, signal="KILL", noRestart=False)
                )
                assert answer.get("ok"), answer
        deadline = time.monotonic() + 120
        seen: set[str] = set()
        while True:
            answers = asyncio.run(_route_answers(state.name_servers, topic, "broker-a"))
            seen.update(answers)
            if answers == ["master"] * len(state.name_servers):
                break
            assert time.monotonic() < deadline, f"the route did not come back: {answers}\n{cluster.log_tails()}"
            time.sleep(0.1)
        # A restarted name server first answers "not ready" (needWaitForService, render.config) instead of a route
        # without the master that a client would install and fail every send on (docs/chaos.md, finding 8); by
        # the end of its wait the master has registered (the policy's re-registration, "re-registered master" in
        # supervisor.log, or the broker's own every 10 s), so no name server ever served the group without it.
        assert "not ready" in seen, seen
        assert "no master" not in seen, f"a name server served broker-a's route without its master: {seen}"
        after = asyncio.run(produce(state.name_servers, topic, count=20, timeout=3.0))
        assert after.acknowledged > 0 and set(after.failures) <= LOAD_FAILURES, after.failures


def test_master_killed_after_controller_leader_change(local_platform: Any) -> None:
    with local_platform.up(THREE_CONTROLLERS, name="leader-change") as cluster:
        doc = _bench(cluster, THREE_CONTROLLERS, LEADER_CHANGE_TRIALS, fault="kill", after_leader_change=True)
        _assert_clean(doc, LEADER_CHANGE_TRIALS)
        assert all(t["leader_change_s"] is not None for t in doc["per_trial"])

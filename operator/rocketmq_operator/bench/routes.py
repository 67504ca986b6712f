"""`rocketmq-operator bench routes`: restart every name server (and the controllers hosted with them) N times on
the local platform, and time how long after the name servers answer again the group's master is back in the
topic route (RocketMQ alone: the master's next periodic registration, `registerNameServerPeriod`, 30 s; the
replication policy gives it back at once).

Per trial: SIGKILL every ControllerGroup process through the supervisor (which restarts them after its
back-off), then poll the route of a topic produced to beforehand every 50 ms. `namesrv_back_s`: kill → a name
server answers a route lookup (its "name server not ready" of needWaitForService is not an answer: it is the time
a client gets no route); `route_back_s`: that answer → a route whose broker data has a master (id 0).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from rocketmq_operator.bench.failover import percentile, run_cli
from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.state import read_state
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools.produce import produce
from rocketmq_operator.tools.routing import is_topic_not_exist

POLL_S = 0.05
TRIAL_TIMEOUT_S = 120.0


async def _route(namesrv: list[str], topic: str, group: str) -> tuple[bool, bool]:
    """(a name server answered, the answer routes to the group's master)."""
    async with RemotingClient(namesrv, connect_timeout=0.5, request_timeout=0.5) as client:
        try:
            route = await client.get_route(topic, timeout=0.5)
        except RemotingException as exc:
            # TOPIC_NOT_EXIST is an answer: the name server is up, the route is not there yet.
            return (is_topic_not_exist(exc), False)
        except OSError:
            return (False, False)
        broker = route.broker(group)
        return (True, broker is not None and 0 in broker.broker_addrs)


async def run_bench(files: list[str], state_dir: Path, trials: int, keep: bool) -> dict[str, Any]:
    up_args = ["local", "up", "--wait", "--state-dir", str(state_dir)]
    for f in files:
        up_args += ["-f", f]
    await run_cli(*up_args)
    layout = StateLayout(state_dir)
    state = read_state(layout.state_file)
    groups = [g.name for g in state.groups if g.kind == "BrokerGroup"]
    if not groups:
        raise SystemExit("error: bench routes needs a BrokerGroup")
    group = groups[0]
    processes = [r.name for r in state.replicas if r.kind == "ControllerGroup"]
    topic = f"bench-routes-{int(time.time())}"
    per_trial: list[dict[str, float]] = []
    try:
        sent = await produce(state.name_servers, topic, count=10, timeout=3.0)
        if sent.acknowledged != 10:
            raise SystemExit(f"error: could not produce to {topic}: {sent.statuses}")
        for _ in range(trials):
            await asyncio.sleep(3.0)
            killed_at = time.time()
            for name in processes:
                answer = await lifecycle.request(layout, "signal", replica=name, signal="KILL", noRestart=False)
                if not answer.get("ok"):
                    raise RuntimeError(f"could not SIGKILL {name}: {answer.get('message')}")
            answered_at: float | None = None
            deadline = time.monotonic() + TRIAL_TIMEOUT_S
            while time.monotonic() < deadline:
                answered, routed = await _route(state.name_servers, topic, group)
                now = time.time()
                if answered and answered_at is None:
                    answered_at = now
                if routed and answered_at is not None:
                    per_trial.append(
                        {
                            "namesrv_back_s": round(answered_at - killed_at, 3),
                            "route_back_s": round(now - answered_at, 3),
                        }
                    )
                    break
                await asyncio.sleep(POLL_S)
            else:
                raise SystemExit(f"error: the route of {group} did not come back within {TRIAL_TIMEOUT_S:.0f}s")
    finally:
        if not keep:
            await run_cli("local", "down", "--purge", "--state-dir", str(state_dir))
    back = [t["route_back_s"] for t in per_trial]
    return {
        "group": group,
        "trials": len(per_trial),
        "route_back_s": {"p50": percentile(back, 0.5), "p99": percentile(back, 0.99), "max": max(back, default=None)},
        "per_trial": per_trial,
    }

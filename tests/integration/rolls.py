"""Helpers of the roll and scale tests on real brokers: the manifests they apply and what they read back."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml

from real_parts import IN_CI, missing
from rocketmq_operator.remoting import RemotingClient

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
GROUP = "broker-a"
FROM_VERSION = "5.4.0"
TO_VERSION = "5.5.0"


def require_from_version() -> None:
    from rocketmq_operator.platforms.local import distribution

    if distribution.is_complete(distribution.dist_dir(FROM_VERSION), FROM_VERSION):
        return
    if not IN_CI:
        missing(f"RocketMQ {FROM_VERSION} is not built (python -c \"...ensure_distribution('{FROM_VERSION}')\")")
    distribution.ensure_distribution(FROM_VERSION)


def manifest(path: Path, version: str, broker_config: dict[str, str], quorum: dict[str, int] | None = None) -> Path:
    docs = [d for d in yaml.safe_load_all(QUICKSTART.read_text(encoding="utf-8")) if d]
    for doc in docs:
        if doc["kind"] == "BrokerGroup":
            doc["spec"]["version"] = version
            doc["spec"]["brokerConfig"] = dict(broker_config)
            if quorum:
                doc["spec"]["quorum"].update(quorum)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    return path


def rollout_of(cluster: Any, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(cluster.group(GROUP, doc).get("rollout") or {})


def replica_pids(cluster: Any) -> dict[str, int | None]:
    return {p["name"]: p["pid"] for p in cluster.status()["processes"] if p["group"] == GROUP}


def broker_configs(cluster: Any, key: str) -> dict[str, str | None]:
    addresses = [r["address"] for r in cluster.group(GROUP)["replicas"]]

    async def read() -> dict[str, str | None]:
        async with RemotingClient([], connect_timeout=2.0, request_timeout=5.0) as client:
            return {a: (await client.get_broker_config(a)).get(key) for a in addresses}

    return asyncio.run(read())


def complete(cluster: Any, started_not: str | None = None) -> Any:
    def done(d: dict[str, Any]) -> bool:
        r = rollout_of(cluster, d)
        return r.get("phase") == "Complete" and (started_not is None or r.get("started") != started_not)

    return done


def loss_report(doc: dict[str, Any], state_dir: Path) -> str:
    """The bench's figures and the supervisor's failover, switchover and fencing lines, in full (a dict in an
    assertion message is cut short)."""
    log = (state_dir / "supervisor.log").read_text(encoding="utf-8", errors="replace").splitlines()
    marks = ("switchover", "failover", "fenc", "elect", "restart", "deposed", "permission")
    lines = [line for line in log if any(m in line.lower() for m in marks)]
    return json.dumps(doc, indent=1, default=str) + "\nsupervisor.log:\n" + "\n".join(lines[-80:])

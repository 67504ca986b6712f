"""`make run` (scripts/run-demo.sh) as a user sees it, with `rocketmq-operator` replaced by a stand-in that prints
a real `local status` table (no RocketMQ process) and `sleep` by a no-op: its live view shows the topic rows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from rocketmq_operator.platforms.local.report import render_table

ROOT = Path(__file__).resolve().parents[3]


def _status_doc() -> dict[str, object]:
    replicas = [
        {"name": f"broker-a-{i}", "brokerId": i + 1, "role": "master" if i == 0 else "slave", "alive": True,
         "inSync": True, "maxOffset": 100, "pid": 200 + i, "restarts": 0}
        for i in range(3)
    ]  # fmt: skip
    return {
        "stateDir": "/s",
        "supervisor": {"pid": 7, "running": True, "phase": "running"},
        "nameServers": ["127.0.0.1:1"],
        "controllers": ["127.0.0.1:2"],
        "groups": [
            {"name": "broker-a", "master": {"brokerId": 1, "replica": "broker-a-0", "epoch": 1}, "needAcks": 2,
             "writable": True, "replicas": replicas, "syncStateSet": {"members": [1, 2, 3], "epoch": 1},
             "conditions": [],
             "topics": [{"name": "orders", "exists": True, "writeQueueNums": 8, "readQueueNums": 8,
                         "messageType": "NORMAL", "maxOffsets": 1000}],
             "consumerGroups": [{"name": "orders-readers", "exists": True, "lag": 0}]},
        ],
        "processes": [{"name": "rocketmq-ctl-0", "role": "namesrv", "pid": 5, "running": True, "suspended": False,
                       "restarts": 0, "ports": {"namesrv": 1, "controller": 2}}],
    }  # fmt: skip


def test_the_live_view_shows_the_topic_rows(tmp_path: Path) -> None:
    doc = _status_doc()
    (tmp_path / "table.txt").write_text(render_table(doc) + "\n")
    (tmp_path / "status.json").write_text(json.dumps(doc))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "rocketmq-operator"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'if [ "$1 $2" = "local status" ]; then\n'
        f'  if [ "${{3:-}}" = "--json" ]; then cat {tmp_path / "status.json"}; else cat {tmp_path / "table.txt"}; fi\n'
        'else echo "ran: $*"; fi\n'
    )
    (bin_dir / "sleep").write_text("#!/bin/sh\n")
    for path in (fake, bin_dir / "sleep"):
        path.chmod(0o755)
    env = {**os.environ, "ROP": str(fake), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        ["bash", str(ROOT / "scripts" / "run-demo.sh")], env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    live = run.stdout.split("== live view", 1)[1]
    rows = [line.split() for line in live.splitlines()]
    assert rows.count(["broker-a", "orders", "yes", "8", "8", "NORMAL", "1000"]) == 3, live
    assert rows.count(["broker-a", "orders-readers", "yes", "0"]) == 3, live

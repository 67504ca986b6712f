"""Mutual TLS on real processes (local platform, examples/tls-mutual.yaml: spec.tls.clientAuth Required), measured as
the client sees it:

- the supervisor, which presents the cluster's client certificate, observes the group writable (its status is read
  over mutual TLS from every process);
- a client that trusts the authority but presents no certificate is refused at the handshake, by the name server
  and by the master; so is one presenting a certificate of another authority;
- `produce` and `consume`, configured from `local env` (ROCKETMQ_TLS_CA, ROCKETMQ_TLS_CERT, ROCKETMQ_TLS_KEY) as a
  user would, send and read back every message; without a certificate `produce` says so in one line; the Spark
  source (tlsCertFile, tlsKeyFile) reads every acknowledged key.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from spark_local import local_spark

from rocketmq_operator.control.certificates import issue, new_authority
from rocketmq_operator.remoting import ClientTls, RemotingClient, RemotingConnectionError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tls-mutual.yaml"
GROUP = "broker-mtls"
TOPIC = "orders"
COUNT = 100


def _env(cluster: Any) -> dict[str, str]:
    """What `eval "$(rocketmq-operator local env)"` exports, as a dict."""
    out = cluster.cli("env").stdout
    env = dict(os.environ)
    for line in out.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0]
    return env


async def _route(namesrv: str, tls: ClientTls) -> None:
    async with RemotingClient(namesrv, connect_timeout=3.0, request_timeout=3.0, tls=tls) as client:
        await client.get_route(TOPIC, timeout=3.0)


async def _send(namesrv: str, broker: str, tls: ClientTls) -> None:
    async with RemotingClient(namesrv, connect_timeout=3.0, request_timeout=3.0, tls=tls) as client:
        await client.send(broker, TOPIC, b"no-cert", 0, keys="no-cert", timeout=3.0)


def _tool(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "rocketmq_operator.cli", *args]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_mutual_tls_refuses_clients_without_a_certificate_and_serves_those_with_one(
    local_platform: Any, tmp_path: Path
) -> None:
    with local_platform.up(EXAMPLE, name="mtls") as cluster:
        doc = cluster.wait_for(
            "a writable master, observed over mutual TLS",
            lambda d: (
                bool((cluster.group(GROUP, d).get("master") or {}).get("address"))
                and cluster.group(GROUP, d).get("writable") is True
            ),
            timeout=180,
        )
        namesrv = ";".join(doc["nameServers"])
        master = cluster.group(GROUP, doc)["master"]["address"]
        env = _env(cluster)
        assert {"ROCKETMQ_TLS_CA", "ROCKETMQ_TLS_CERT", "ROCKETMQ_TLS_KEY"} <= set(env), sorted(env)

        no_cert = ClientTls(env["ROCKETMQ_TLS_CA"])
        with pytest.raises(RemotingConnectionError):
            asyncio.run(_route(namesrv, no_cert))
        with pytest.raises(RemotingConnectionError):
            asyncio.run(_send(namesrv, master, no_cert))
        now = time.time()
        stranger = new_authority("stranger", 3600, now)
        pair = issue(stranger, "intruder", ["localhost"], ["127.0.0.1"], 3600, now)
        (tmp_path / "x.crt").write_text(pair.cert_pem)
        (tmp_path / "x.key").write_text(pair.key_pem)
        foreign = ClientTls(env["ROCKETMQ_TLS_CA"], cert_file=str(tmp_path / "x.crt"), key_file=str(tmp_path / "x.key"))
        with pytest.raises(RemotingConnectionError):
            asyncio.run(_route(namesrv, foreign))

        refused = _tool({k: v for k, v in env.items() if k not in ("ROCKETMQ_TLS_CERT", "ROCKETMQ_TLS_KEY")},
                        "produce", "--namesrv", namesrv, "--topic", TOPIC, "--count", "1", "--no-create-topic",
                        "--retries", "0", "--timeout", "3")  # fmt: skip
        assert refused.returncode != 0 and refused.stderr.count("\n") == 1, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr

        sent = _tool(env, "produce", "--namesrv", namesrv, "--topic", TOPIC, "--count", str(COUNT),
                     "--no-create-topic", "--report-keys", "--json")  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        report = json.loads(sent.stdout)
        assert report["acknowledged"] == COUNT, report["failures"]
        read = _tool(env, "consume", "--namesrv", namesrv, "--topic", TOPIC, "--from", "earliest", "--to-end",
                     "--idle-timeout", "5", "--report-keys", "--json")  # fmt: skip
        assert read.returncode == 0, read.stderr
        keys = set(json.loads(read.stdout)["keys"])
        assert set(report["acknowledged_keys"]) <= keys, sorted(set(report["acknowledged_keys"]) - keys)[:10]

        with local_spark("rocketmq-mtls-it", cores=1) as session:
            reader = session.read.format("rocketmq").option("nameServers", namesrv).option("topic", TOPIC)
            reader = reader.option("tlsCaFile", env["ROCKETMQ_TLS_CA"]).option("tlsCertFile", env["ROCKETMQ_TLS_CERT"])
            reader = reader.option("tlsKeyFile", env["ROCKETMQ_TLS_KEY"]).option("pullTimeoutMs", "20000")
            spark_keys = {row["keys"] for row in reader.load().select("keys").collect()}
        assert set(report["acknowledged_keys"]) <= spark_keys, "the Spark source missed acknowledged keys"

"""ACL 2.0 on real brokers (local platform, examples/auth.yaml), measured as the client sees it:

- a send without credentials is refused, one with a wrong password is refused, one with the right user's is
  acknowledged;
- a user whose ACL allows only Pub on the topic can send to it and cannot read it;
- after a SIGKILL of the master, the elected master authenticates the same users (they were created on every
  replica) and every acknowledged message is read back with credentials, by `consume` and by the Spark source;
- through the example's Proxy (spec.auth), RocketMQ 5's gRPC client is held to the same users and ACLs;
- no password appears in the rendered configs, the manifest copy, the status files, `local status --json` or
  any log (the broker's own logs included); only the 0600 secrets file and the broker's run config hold them.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from outcomes import LOAD_FAILURES
from polling import until
from spark_local import local_spark

from rocketmq_operator.platforms.local import lifecycle
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.tools.grpc_client import GrpcReceiveError, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged
from rocketmq_operator.tools.produce import DEFAULT_RETRIES
from signed_clients import signed_read, signed_send

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
AUTH = ROOT / "examples" / "auth.yaml"
GROUP = "broker-a"
TOPIC = "orders"
READERS = "orders-readers"
COUNT = 200


def _passwords() -> dict[str, str]:
    secrets = [d for d in yaml.safe_load_all(AUTH.read_text(encoding="utf-8")) if d and d.get("kind") == "Secret"]
    return {d["metadata"]["name"]: d["stringData"]["password"] for d in secrets}


PASSWORDS = _passwords()
APP = SessionCredentials("orders-app", PASSWORDS["orders-app"])
PUBLISHER = SessionCredentials("orders-publisher", PASSWORDS["orders-publisher"])


def _send(namesrv: str, count: int, credentials: SessionCredentials | None, retries: int = 1) -> Any:
    return signed_send(namesrv, TOPIC, count, credentials, retries)


def _read(namesrv: str, credentials: SessionCredentials | None) -> set[str]:
    return signed_read(namesrv, TOPIC, READERS, credentials)


def _spark_read(namesrv: str, credentials: SessionCredentials) -> set[str]:
    """A batch read of the topic by the Spark source (local mode), signed as ``credentials``; the keys read."""
    with local_spark("rocketmq-auth-it", cores=1) as session:
        reader = session.read.format("rocketmq").option("nameServers", namesrv).option("topic", TOPIC)
        reader = reader.option("consumerGroup", READERS).option("readFrom", "master").option("pullTimeoutMs", "20000")
        reader = reader.option("accessKey", credentials.access_key).option("secretKey", credentials.secret_key)
        return {row["keys"] for row in reader.load().select("keys").collect()}


def _serving(cluster: Any, doc: dict[str, Any]) -> bool:
    g = cluster.group(GROUP, doc)
    return bool((g.get("master") or {}).get("address")) and g.get("writable") is True


def _files_holding(root: Path, needles: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if not path.is_file() or path.stat().st_size > 50_000_000:
            continue
        data = path.read_bytes()
        if any(n.encode() in data for n in needles):
            found.append(str(path.relative_to(root)))
    return sorted(found)


def _through_the_proxy(doc: dict[str, Any]) -> None:
    """The example's Proxy (spec.auth) as RocketMQ 5's gRPC client sees it (rocketmq-python-client): unsigned and
    wrongly signed sends refused, the user's acknowledged and read back by its SimpleConsumer (which acks each), a
    Pub-only user's sends acknowledged and its reads refused. The proxy reads the users from the brokers (after
    the master kill above: from the new master too)."""
    proxies = doc["proxies"]
    assert proxies and all(p["ready"] for p in proxies), proxies
    endpoint = proxies[0]["endpoint"]
    anonymous = send_keys(endpoint, TOPIC, ["grpc-anonymous-0"])
    assert not any(s.ok for s in anonymous), anonymous
    wrong = send_keys(endpoint, TOPIC, ["grpc-wrong-0"], credentials=SessionCredentials(APP.access_key, "not-it"))
    assert not any(s.ok for s in wrong), wrong
    keys = [f"grpc-app-{i}" for i in range(20)]
    sent = send_keys(endpoint, TOPIC, keys, credentials=APP)
    assert all(s.ok for s in sent), [(s.key, s.status, s.error) for s in sent if not s.ok][:3]
    published = send_keys(endpoint, TOPIC, ["grpc-publisher-0"], credentials=PUBLISHER)
    assert all(s.ok for s in published), [(s.status, s.error) for s in published]
    try:
        stolen = receive_keys(endpoint, READERS, TOPIC, keys, idle_s=6, credentials=PUBLISHER)
    except GrpcReceiveError:
        stolen = set()  # every receive refused: what a Pub-only user must see
    assert not stolen, f"a Pub-only user received {len(stolen)} messages through the proxy"
    got = receive_keys(endpoint, READERS, TOPIC, keys, idle_s=20, credentials=APP)
    assert not missing_acknowledged(set(keys), got), sorted(set(keys) - got)[:10]


def test_users_and_acls_on_real_brokers_survive_a_master_kill(local_platform: Any) -> None:
    with local_platform.up(AUTH, name="auth") as cluster:
        doc = cluster.wait_for("a writable master", lambda d: _serving(cluster, d), timeout=180)
        namesrv = ";".join(doc["nameServers"])

        # The operator creates the users once the brokers answer: the right user is accepted as soon as it has.
        report = until("orders-app to be accepted", lambda: (r := _send(namesrv, 5, APP)).acknowledged == 5 and r)
        acknowledged = set()
        # With the Java client's retries. Under load a route lookup or the broker's flow control can still fail a
        # send (seen at load average 40: NO_ROUTE 24, SYSTEM_BUSY 1); none may be an authentication refusal, and
        # every acknowledged one is read back below.
        report = _send(namesrv, COUNT, APP, retries=DEFAULT_RETRIES)
        assert report.acknowledged > COUNT // 2 and set(report.failures) <= LOAD_FAILURES, report.failures
        acknowledged |= {r.key for r in report.records if r.stored}

        anonymous = _send(namesrv, 5, None)
        assert anonymous.acknowledged == 0, anonymous.statuses
        wrong = _send(namesrv, 5, SessionCredentials(APP.access_key, "not-the-password"))
        assert wrong.acknowledged == 0, wrong.statuses

        published = _send(namesrv, 5, PUBLISHER)
        assert published.acknowledged == 5, published.failures
        acknowledged |= {r.key for r in published.records if r.stored}
        assert _read(namesrv, PUBLISHER) == set(), "a Pub-only user read the topic"
        assert _read(namesrv, None) == set(), "an anonymous client read the topic"
        assert acknowledged <= _read(namesrv, APP)

        old = cluster.group(GROUP, doc)["master"]
        answer = asyncio.run(
            lifecycle.request(StateLayout(cluster.state_dir), "signal", replica=old["replica"], signal="KILL")
        )
        assert answer.get("ok"), answer

        def new_master(d: dict[str, Any]) -> bool:
            master = cluster.group(GROUP, d).get("master") or {}
            return _serving(cluster, d) and master.get("brokerId") != old.get("brokerId")

        cluster.wait_for("a new master", new_master, timeout=180)
        after = until("orders-app accepted by the new master", lambda: (r := _send(namesrv, 20, APP)).ok and r)
        acknowledged |= {r.key for r in after.records if r.stored}
        assert _send(namesrv, 5, None).acknowledged == 0
        got = until("every acknowledged message read back", lambda: acknowledged <= (g := _read(namesrv, APP)) and g)
        assert acknowledged <= got

        _through_the_proxy(cluster.status())

        spark_rows = _spark_read(namesrv, APP)
        assert acknowledged <= spark_rows, (
            f"the Spark source read {len(spark_rows & acknowledged)} of {len(acknowledged)}"
        )

        status = cluster.cli("status", "--json").stdout
        root = Path(cluster.state_dir)
        secrets_file = StateLayout(root).secrets
        assert stat.S_IMODE(os.stat(secrets_file).st_mode) == 0o600
        needles = list(PASSWORDS.values())
        assert not any(n in status for n in needles)
        holding = _files_holding(root, needles)
        # The Secret copy, the admin the brokers start with (admins.json, the admin rotation's record), the brokers'
        # run configs (the admin password, as a mounted Secret would hold it) and their user stores; nothing else
        # (configs, status, logs).
        allowed = ("secrets.json", "admins.json")
        assert stat.S_IMODE(os.stat(root / "admins.json").st_mode) == 0o600
        unexpected = [
            p
            for p in holding
            if p not in allowed and not (p.startswith("data/") and ("/conf/" in p or "/config/users/" in p))
        ]
        assert not unexpected, unexpected

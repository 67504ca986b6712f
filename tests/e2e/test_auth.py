"""ACL 2.0 on the real node: examples/auth.yaml applied as a user would (its Secrets, a controller and three
brokers with spec.auth on), in a namespace of its own, before the quickstart (file order) and removed after.

Measured as the client sees it, from pods of the operator image: an unsigned send and a send with a wrong password
are refused; the declared user's sends are acknowledged and read back; after a SIGKILL of the master's JVM the new
master accepts the same user (the operator created the users on every replica, and signs its own requests as the
group's admin, or it could not observe the group at all). The ConfigMap holds no password; the brokers mount the
operator's copy of the admin Secret. The example's Proxy (spec.auth) holds RocketMQ 5's gRPC client to the same
users, reached from the host at its pod's address.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from e2e.conftest import apply_example
from e2e.e2e_helpers import pod_ready, wait_proxy_ready
from rocketmq_operator.remoting.auth import SessionCredentials
from rocketmq_operator.tools.digest import body_for
from rocketmq_operator.tools.grpc_client import GrpcProducer, receive_keys, send_keys
from rocketmq_operator.tools.noloss import missing_acknowledged, no_loss_failure, read_keys, reports_no_loss_failure

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "auth.yaml"
NS = "rocketmq-auth"
PROXY_PODS = "app.kubernetes.io/component=proxy,app.kubernetes.io/instance=proxy"


def _passwords() -> dict[str, str]:
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text(encoding="utf-8")) if d and d.get("kind") == "Secret"]
    return {d["metadata"]["name"]: d["stringData"]["password"] for d in docs}


PASSWORDS = _passwords()
APP = {"ROCKETMQ_ACCESS_KEY": "orders-app", "ROCKETMQ_SECRET_KEY": PASSWORDS["orders-app"]}


def _accepted(group: Any, pod: str, count: int) -> dict[str, Any]:
    """Sends as orders-app until one batch is fully acknowledged: the operator creates the users once the brokers
    answer, so the first sends after the group turns writable may still be refused."""
    deadline = time.monotonic() + 300
    attempt = 0
    while True:
        attempt += 1
        report = group.produce(f"{pod}-{attempt}", count, "--report-keys", env=APP)
        assert report is not None
        if report["acknowledged"] == count:
            return report
        assert time.monotonic() < deadline, f"orders-app was never accepted: {report}"
        time.sleep(2)


def _through_the_proxy(node: Any) -> set[str]:
    """The example's Proxy (spec.auth) from the host, at its pod's address, as RocketMQ 5's gRPC client sees it: an
    unsigned send refused, the user's sends acknowledged and received by its SimpleConsumer. Returns the keys the
    proxy acknowledged (read back after the master kill with the rest)."""
    wait_proxy_ready(node, NS, "proxy", 1)
    pods = [p for p in node.json("-n", NS, "get", "pods", "-l", PROXY_PODS)["items"] if pod_ready(p)]
    endpoint = f"{pods[0]['status']['podIP']}:8081"
    anonymous = send_keys(endpoint, "orders", ["auth-grpc-anonymous"])
    assert not any(s.ok for s in anonymous), anonymous
    keys = [f"auth-grpc-{i}" for i in range(20)]
    credentials = SessionCredentials(APP["ROCKETMQ_ACCESS_KEY"], APP["ROCKETMQ_SECRET_KEY"])
    with GrpcProducer(endpoint, "orders", credentials=credentials, busy_resends=5) as producer:
        # The bodies the read-back below checks (`consume` counts a body that is not the key's as a mismatch).
        sent = [producer.send(seq, key, body_for(key, 128)) for seq, key in enumerate(keys)]
    assert all(s.ok for s in sent), [(s.key, s.status, s.error) for s in sent if not s.ok][:3]
    got = receive_keys(endpoint, "orders-readers", "orders", keys, idle_s=30, credentials=credentials)
    assert not missing_acknowledged(set(keys), got), sorted(set(keys) - got)[:10]
    return set(keys)


def test_auth_example_refuses_unsigned_clients_and_serves_its_users(group_in: Callable[..., Any]) -> None:
    group = group_in(NS)
    node = group.node
    node.ensure_namespaces(NS)  # made by install_operator too
    try:
        apply_example(node, NS, EXAMPLE)
        seconds = group.wait_healthy(timeout=900)
        print(f"auth example apply -> healthy in {seconds:.0f}s")

        config = node.json("-n", NS, "get", "configmap", "broker-a-config")
        assert not [p for p in PASSWORDS.values() if p in json.dumps(config)]
        copy = node.json("-n", NS, "get", "secret", "broker-a-auth-config")
        assert [r["kind"] for r in copy["metadata"]["ownerReferences"]] == ["BrokerGroup"]

        first = _accepted(group, "auth-app", 20)
        through_proxy = _through_the_proxy(node)
        anonymous = group.produce("auth-anonymous", 5, "--retries", "0")
        assert anonymous is not None and anonymous["acknowledged"] == 0, anonymous
        wrong = group.produce("auth-wrong", 5, "--retries", "0", env={**APP, "ROCKETMQ_SECRET_KEY": "not-the-password"})
        assert wrong is not None and wrong["acknowledged"] == 0, wrong

        old = group.master()
        assert old is not None
        group.kill_jvm(old)
        node.wait_for(f"a master other than {old}", lambda: group.master() not in (None, old), 300, 1)
        after = _accepted(group, "auth-app-after-kill", 20)

        read = group.consume_all("auth-read", env=APP, report_keys=True)
        assert read["body_mismatches"] == 0
        loss = reports_no_loss_failure([first, after], read)  # by key: every acknowledged key read back
        assert loss is None, loss
        loss = no_loss_failure(through_proxy, read_keys(read))  # the gRPC client's too
        assert loss is None, loss
        acked = first["acknowledged"] + after["acknowledged"]
        assert read["unique"] >= acked, read
    finally:
        node.delete_namespace(NS)

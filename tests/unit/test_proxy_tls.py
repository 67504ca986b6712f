"""TLS through the Proxy (issue 31): the rule that a proxy speaks TLS exactly when what it connects to does, the
rendered proxy (flags, rmq-proxy.json, the mounted Secret), and the Kubernetes reconciler (the `<proxy>-tls`
certificate from the namespace authority, a mismatch refused in status, a renewal that rolls nothing)."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_fake import FakeApi

from rocketmq_operator.api.models import BrokerGroup, ControllerGroup, Proxy
from rocketmq_operator.api.validation import proxy_tls_mismatch
from rocketmq_operator.control.certificates import CertificateInfo, signed_by
from rocketmq_operator.platforms.kubernetes.auth import secret_data
from rocketmq_operator.platforms.kubernetes.reconcile import reconcile
from rocketmq_operator.platforms.kubernetes.tls import AUTHORITY_SECRET, certificate_objects, dns_names
from rocketmq_operator.render.config import proxy_config
from rocketmq_operator.render.kubernetes.proxy import render_proxy

ROOT = Path(__file__).resolve().parents[2]
DOCS = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "examples" / "tls.yaml").read_text()) if d}
NS = "ns"
NOW = 1_800_000_000.0
JSON = dict[str, Any]


def _doc(kind: str, tls: bool | None = None) -> JSON:
    doc = copy.deepcopy(DOCS[kind])
    doc["metadata"]["namespace"] = NS
    if tls is not None:
        doc["spec"].setdefault("tls", {})["enabled"] = tls
    return doc


def _proxy(tls: bool = True) -> Proxy:
    return Proxy.model_validate(_doc("Proxy", tls))


# --- the rule, shared by validate, local up and the reconciler ---


@pytest.mark.parametrize(
    ("proxy_tls", "brokers_tls", "controller_tls", "says"),
    [
        (True, [True], True, None),
        (False, [False], False, None),
        (False, [], None, None),  # nothing known to compare with
        (True, [], None, None),
        (False, [True], True, "tls.enabled is false and BrokerGroup/broker-tls (cluster DefaultCluster) has "
         "tls.enabled true; rule: a proxy speaks TLS to its name servers and brokers exactly when it serves TLS "
         "(one JVM-wide switch, tls.enable), so it matches them; fix: set spec.tls.enabled: true on the Proxy"),
        (True, [False], False, "tls.enabled is true and BrokerGroup/broker-tls (cluster DefaultCluster) has "
         "tls.enabled false;"),
        (True, [], False, "tls.enabled is true and ControllerGroup/tls-ctl (cluster DefaultCluster) has "
         "tls.enabled false;"),
        (True, [True, False], True, "tls.enabled is true and BrokerGroup/broker-tls (cluster DefaultCluster) has "
         "tls.enabled false;"),
    ],
    ids=["all TLS", "all plain text", "alone, plain text", "alone, TLS", "a plain-text proxy before TLS brokers",
         "a TLS proxy before plain-text brokers", "a TLS proxy before a plain-text ControllerGroup",
         "brokers of both kinds"],
)  # fmt: skip
def test_a_proxy_speaks_tls_exactly_when_its_brokers_and_controllers_do(
    proxy_tls: bool, brokers_tls: list[bool], controller_tls: bool | None, says: str | None
) -> None:
    brokers = [BrokerGroup.model_validate(_doc("BrokerGroup", tls)) for tls in brokers_tls]
    controller = None
    if controller_tls is not None:
        controller = ControllerGroup.model_validate(_doc("ControllerGroup", controller_tls))
    found = proxy_tls_mismatch(_proxy(proxy_tls), brokers, controller)
    if says is None:
        assert found is None
    else:
        assert found is not None and found.startswith(says) and "\n" not in found, found


# --- rendering ---


def test_a_tls_proxy_runs_enforcing_flags_and_its_grpc_server_on_the_mounted_certificate() -> None:
    objects = render_proxy(_proxy(), ControllerGroup.model_validate(_doc("ControllerGroup")))
    by_kind = {o["kind"]: o for o in objects}
    conf = json.loads(by_kind["ConfigMap"]["data"]["rmq-proxy.json"])
    assert conf["tlsTestModeEnable"] is False
    assert (conf["tlsCertPath"], conf["tlsKeyPath"]) == ("/etc/rocketmq-tls/tls.crt", "/etc/rocketmq-tls/tls.key")
    pod = by_kind["Deployment"]["spec"]["template"]["spec"]
    java = next(e["value"] for e in pod["containers"][0]["env"] if e["name"] == "JAVA_OPTS").split()
    # The same files for the JVM's remoting server and the gRPC server: the proxy's file watch compares them.
    assert "-Dtls.server.certPath=/etc/rocketmq-tls/tls.crt" in java and "-Dtls.server.mode=enforcing" in java
    assert "-Dtls.enable=true" in java and "-Dtls.client.trustCertPath=/etc/rocketmq-tls/ca.crt" in java
    assert {"name": "tls", "mountPath": "/etc/rocketmq-tls", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert {"name": "tls", "secret": {"secretName": "proxy-tls-tls", "defaultMode": 0o440}} in pod["volumes"]


@pytest.mark.parametrize("secret_name", [None, "proxy-cert"])
def test_the_mounted_secret_is_the_users_when_named(secret_name: str | None) -> None:
    doc = _doc("Proxy")
    doc["spec"]["tls"]["secretName"] = secret_name
    objects = render_proxy(Proxy.model_validate(doc), ControllerGroup.model_validate(_doc("ControllerGroup")))
    pod = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "tls")
    assert volume["secret"]["secretName"] == (secret_name or "proxy-tls-tls")


def test_a_proxy_without_tls_keeps_rocketmqs_defaults() -> None:
    objects = render_proxy(_proxy(False), ControllerGroup.model_validate(_doc("ControllerGroup", False)))
    conf = json.loads(next(o for o in objects if o["kind"] == "ConfigMap")["data"]["rmq-proxy.json"])
    assert not any(key.startswith("tls") for key in conf)
    pod = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert all(v["name"] != "tls" for v in pod["volumes"])


def test_tls_on_without_certificate_files_is_a_renderer_error() -> None:
    with pytest.raises(ValueError, match=r"spec\.tls is on and no certificate files were placed"):
        proxy_config(_proxy(), ["ns:9876"], 8081, 8080)


# --- Kubernetes: the certificate and the reconciler ---


def test_the_operator_issues_the_proxys_certificate_for_its_service_names_and_localhost() -> None:
    api = FakeApi()
    objects, blocked = asyncio.run(certificate_objects(api, _proxy(), NS, NOW))  # type: ignore[arg-type]
    assert blocked is None and [o["metadata"]["name"] for o in objects] == ["proxy-tls-tls"]
    data = secret_data(objects[0])
    ca = secret_data(api.objects[("Secret", NS, AUTHORITY_SECRET)])["ca.crt"]
    assert data["ca.crt"] == ca and signed_by(data["tls.crt"], ca)
    names = set(CertificateInfo.of(data["tls.crt"]).dns_names)
    assert names == set(dns_names(_proxy(), NS)) == {
        "proxy-tls", "proxy-tls.ns", "proxy-tls.ns.svc", "proxy-tls.ns.svc.cluster.local", "localhost"
    }  # fmt: skip
    assert objects[0]["metadata"]["labels"]["app.kubernetes.io/component"] == "proxy"


def _api(proxy_tls: bool = True) -> FakeApi:
    fake = FakeApi()
    for kind in ("ControllerGroup", "BrokerGroup"):
        fake.put(_doc(kind))
    fake.put(_doc("Proxy", proxy_tls))
    return fake


def _body(fake: FakeApi, kind: str, name: str) -> JSON:
    found = asyncio.run(fake.get(kind, NS, name))
    assert found is not None
    return found


def test_a_tls_proxy_gets_its_secret_before_its_deployment_and_a_renewal_rolls_nothing() -> None:
    fake = _api()
    outcome = asyncio.run(reconcile(fake, _body(fake, "Proxy", "proxy-tls")))  # type: ignore[arg-type]
    assert outcome.blocked_reason is None, outcome.blocked_message
    assert outcome.applied.index("Secret/proxy-tls-tls") < outcome.applied.index("Deployment/proxy-tls")
    template = _body(fake, "Deployment", "proxy-tls")["spec"]["template"]
    # A new certificate in the Secret (a renewal): the next pass changes the Secret and nothing the pods run from.
    secret = _body(fake, "Secret", "proxy-tls-tls")
    del secret["data"]["tls.crt"]
    fake.put(secret)
    outcome = asyncio.run(reconcile(fake, _body(fake, "Proxy", "proxy-tls")))  # type: ignore[arg-type]
    assert outcome.applied == ["Secret/proxy-tls-tls"], outcome.applied
    assert _body(fake, "Deployment", "proxy-tls")["spec"]["template"] == template


@pytest.mark.parametrize("proxy_tls", [False, True], ids=["a plain-text proxy", "a TLS proxy"])
def test_a_proxy_whose_tls_differs_from_its_cluster_is_not_applied_and_says_why(proxy_tls: bool) -> None:
    fake = _api(proxy_tls)
    if proxy_tls:  # the groups without TLS
        for kind in ("ControllerGroup", "BrokerGroup"):
            fake.put(_doc(kind, False))
    outcome = asyncio.run(reconcile(fake, _body(fake, "Proxy", "proxy-tls")))  # type: ignore[arg-type]
    assert outcome.blocked_reason == "TlsMismatch" and outcome.applied == []
    (condition,) = _body(fake, "Proxy", "proxy-tls")["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == ("Reconciled", "False", "TlsMismatch")
    want = "true" if not proxy_tls else "false"
    assert condition["message"].startswith(
        f"Proxy/proxy-tls: spec.tls.enabled: tls.enabled is {str(proxy_tls).lower()} and BrokerGroup/broker-tls"
    )
    assert condition["message"].endswith(f"fix: set spec.tls.enabled: {want} on the Proxy")

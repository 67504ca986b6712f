"""`rocketmq-operator validate` / `render` / `--version` as a new user meets them: every problem of every document
in one run, one `path: message` line each, exit 2; duplicates refused as `local up` refuses them."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketmq_operator.api.validation import validate_files
from rocketmq_operator.cli.main import main

API = "rocketmq-operator.dev/v1alpha1"


def controller(name: str = "ctl") -> dict[str, Any]:
    return {"apiVersion": API, "kind": "ControllerGroup", "metadata": {"name": name}, "spec": {"replicas": 3}}


def broker(name: str = "broker-a", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "BrokerGroup",
        "metadata": {"name": name},
        "spec": {"replicas": 3, "controllerRef": {"name": "ctl"}, **spec},
    }


def topic(name: str = "orders", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": {"brokerGroups": ["broker-a"], **spec},
    }


def consumer_group(name: str = "readers") -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ConsumerGroup",
        "metadata": {"name": name},
        "spec": {"brokerGroups": ["broker-a"]},
    }


def write(tmp_path: Path, *docs: dict[str, Any]) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(list(docs)), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # render's refusal, as the console script ends
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out.splitlines(), err


# --- 1. one object given twice ---


@pytest.mark.parametrize(
    ("again", "kind_name"),
    [
        (broker("broker-a"), "BrokerGroup/broker-a"),
        (controller("ctl"), "ControllerGroup/ctl"),
        (topic("orders"), "Topic/orders"),
        (consumer_group("readers"), "ConsumerGroup/readers"),
    ],
)
def test_validate_refuses_an_object_given_twice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], again: dict[str, Any], kind_name: str
) -> None:
    f = write(tmp_path, controller(), broker(), topic(), consumer_group(), again)
    code, lines, _ = run(capsys, "validate", f)
    assert code == 2
    first = {"BrokerGroup": 2, "ControllerGroup": 1, "Topic": 3, "ConsumerGroup": 4}[again["kind"]]
    assert lines == [
        f"{f}#5 {kind_name}: metadata.name: {kind_name} is given twice (first in {f}#{first}); rule: kind, "
        "namespace and metadata.name name one object, and a second document would replace the first; fix: keep "
        "one of them, or rename the other"
    ]


def test_render_refuses_two_broker_groups_of_one_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, controller(), broker("broker-b"), broker("broker-b", replicas=2))
    code, lines, _ = run(capsys, "render", f)
    assert code == 2
    assert not any("StatefulSet" in line for line in lines)
    (line,) = lines
    assert line.startswith(
        f"{f}#3 BrokerGroup/broker-b: metadata.name: BrokerGroup/broker-b is given twice (first in {f}#2)"
    )


def test_duplicates_across_files_when_used_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`render a b` prints one stream: an object in both is refused, even when the first has other errors;
    `validate a b` may check alternatives (as examples/*.yaml are), each file one set."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump_all([controller(), broker(replicas="three")]), encoding="utf-8")
    b.write_text(yaml.safe_dump(broker()), encoding="utf-8")
    code, lines, _ = run(capsys, "render", str(a), str(b))
    assert code == 2
    assert lines[0].startswith(f"{a}#2 BrokerGroup/broker-a: spec.replicas: 'three'")
    assert lines[1].startswith(f"{b}#1 BrokerGroup/broker-a: metadata.name: BrokerGroup/broker-a is given twice")
    assert f"(first in {a}#2)" in lines[1] and len(lines) == 2
    a.write_text(yaml.safe_dump_all([controller(), broker()]), encoding="utf-8")
    assert run(capsys, "validate", str(a), str(b))[:2] == (0, [])


def test_same_name_in_another_namespace_or_kind_is_not_a_duplicate(tmp_path: Path) -> None:
    other_controller, other_broker = controller(), broker()
    other_controller["metadata"]["namespace"] = other_broker["metadata"]["namespace"] = "other"
    same_name_topic = topic("broker-a")
    f = write(tmp_path, controller(), broker(), other_controller, other_broker, same_name_topic)
    assert validate_files([f], together=True).errors == []


# --- 2. every problem of every document in one run ---


def test_validate_reports_shape_and_rule_problems_together(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(
        tmp_path,
        controller(),
        # two type errors and three rule errors on fields that did parse
        broker(replicas="three", haMode="bogus", storage={"size": "10Gx"}, slaveRead={"memoryRatio": 200}, tls="on"),
        topic(readQueueNums="eight", writeQueueNums=0, deletionPolicy="Forget"),
        broker("Broker_C", jvm={"heap": "lots"}),
    )
    code, lines, _ = run(capsys, "validate", f)
    assert code == 2
    starts = [
        f"{f}#2 BrokerGroup/broker-a: spec.replicas: 'three' is not a whole number",
        f"{f}#2 BrokerGroup/broker-a: spec.tls: 'on' is not a mapping",
        f"{f}#2 BrokerGroup/broker-a: spec.haMode: 'bogus' is not an HA mode",
        f"{f}#2 BrokerGroup/broker-a: spec.storage.size: '10Gx' is not a quantity",
        f"{f}#2 BrokerGroup/broker-a: spec.slaveRead.memoryRatio: 200 is outside 0..100",
        f"{f}#3 Topic/orders: spec.readQueueNums: 'eight' is not a whole number",
        f"{f}#3 Topic/orders: spec.writeQueueNums: 0 write queues is out of range",
        f"{f}#3 Topic/orders: spec.deletionPolicy: 'Forget' is not a deletion policy",
        f"{f}#4 BrokerGroup/Broker_C: metadata.name 'Broker_C' is not a DNS label",
        f"{f}#4 BrokerGroup/Broker_C: spec.jvm.heap: 'lots' is not a quantity",
    ]
    assert len(lines) == len(starts), lines
    for line, start in zip(lines, starts, strict=True):
        assert line.startswith(start), (line, start)
    assert all("; rule: " in line and "; fix: " in line for line in lines), lines


def test_rules_reading_a_field_that_did_not_parse_are_skipped(tmp_path: Path) -> None:
    """replicas did not parse: the rules comparing inSyncReplicas with it cannot be judged (the default replicas
    would be judged instead); the rule on minInSyncReplicas alone still is."""
    f = write(tmp_path, controller(), broker(replicas="three", quorum={"inSyncReplicas": 9, "minInSyncReplicas": 0}))
    errors = validate_files([f]).errors
    assert [e.split(": ", 2)[1] for e in errors] == ["spec.replicas"], errors


def test_a_document_without_spec_reports_only_that(tmp_path: Path) -> None:
    doc = broker()
    del doc["spec"]
    (error,) = validate_files([write(tmp_path, controller(), doc)]).errors
    assert "spec: is required" in error


def test_odd_shapes_are_lines_not_tracebacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    listed_kind = {**broker(), "kind": ["BrokerGroup"]}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": "password=x"}
    f = write(tmp_path, controller(), listed_kind, secret)
    code, lines, _ = run(capsys, "validate", f)
    assert code == 2
    assert lines[0].startswith(f"{f}#2 ['BrokerGroup']/broker-a: kind: ['BrokerGroup'] is not a kind this operator")
    assert lines[1].startswith(f"{f}#3 Secret/s: stringData: is not a mapping; rule: ")
    assert len(lines) == 2


# --- 3. a Topic's permission given as a number ---


def test_permission_number_names_the_values_that_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, controller(), broker(), topic(permission=9))
    code, lines, _ = run(capsys, "validate", f)
    assert code == 2
    assert lines == [
        f"{f}#3 Topic/orders: spec.permission: 9 is not allowed; rule: spec.permission is one of: ReadWrite, "
        "ReadOnly, WriteOnly; fix: use one of: ReadWrite, ReadOnly, WriteOnly"
    ]
    assert "quote" not in lines[0]
    # The fix works; quoting the number does not, and says the same values.
    assert validate_files([write(tmp_path, controller(), broker(), topic(permission="ReadOnly"))]).errors == []
    (quoted,) = validate_files([write(tmp_path, controller(), broker(), topic(permission="9"))]).errors
    assert "permission is one of ReadWrite, ReadOnly, WriteOnly" in quoted


# --- 4. no rule about an unset field that only follows from another field's bad value ---


def test_replicas_zero_is_one_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, controller(), broker(replicas=0))
    code, lines, _ = run(capsys, "validate", f)
    assert code == 2
    assert lines == [
        f"{f}#2 BrokerGroup/broker-a: spec.replicas: 0 replicas is out of range; rule: 1 <= replicas <= 16; "
        "fix: use 3 for a quorum group (2 for slaveActingMaster pairs, 1 for a test)"
    ]


def test_a_set_field_is_still_judged(tmp_path: Path) -> None:
    f = write(tmp_path, controller(), broker(replicas=3, quorum={"inSyncReplicas": 4}))
    (error,) = validate_files([f]).errors
    assert "spec.quorum.inSyncReplicas: 4 is outside 1..replicas (3)" in error


# --- 5. --version ---


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"rocketmq-operator {version('rocketmq-operator')}\n"


def test_the_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    examples = sorted(str(p) for p in (Path(__file__).parents[2] / "examples").glob("*.yaml"))
    code, lines, err = run(capsys, "validate", *examples)
    assert (code, lines) == (0, [])
    assert "resource(s) valid" in err


def test_a_problem_between_two_documents_names_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A TLS switch that differs between a BrokerGroup and its ControllerGroup is found only by looking at both; the
    # line still starts with the document it is about, as every other problem does.
    tls_controller = {**controller(), "spec": {"replicas": 3, "tls": {"enabled": True}}}
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all([tls_controller, broker()]))
    assert main(["validate", str(f)]) == 2
    printed = capsys.readouterr()
    (line,) = [x for x in (printed.out + printed.err).splitlines() if "tls.enabled" in x]
    assert line.startswith(f"{f}#2 BrokerGroup/broker-a: spec.tls.enabled: "), line


def test_client_auth_must_agree_between_a_broker_group_and_its_controller_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mutual_controller = {**controller(), "spec": {"replicas": 3, "tls": {"enabled": True, "clientAuth": "Required"}}}
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all([mutual_controller, broker(tls={"enabled": True})]))
    assert main(["validate", str(f)]) == 2
    printed = capsys.readouterr()
    (line,) = [x for x in (printed.out + printed.err).splitlines() if "clientAuth" in x]
    said = "tls.clientAuth is None and ControllerGroup/ctl's is Required; rule: mutual TLS is one setting"
    assert line.startswith(f"{f}#2 BrokerGroup/broker-a: spec.tls.clientAuth: BrokerGroup/broker-a: {said}"), line
    assert "fix: set spec.tls.clientAuth the same on both" in line


def _proxy(**auth: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"controllerRef": {"name": "ctl"}, "clusterName": "DefaultCluster"}
    if "tls" in auth:
        spec["tls"] = auth.pop("tls")
    if auth:
        spec["auth"] = auth
    return {"apiVersion": API, "kind": "Proxy", "metadata": {"name": "proxy"}, "spec": spec}


TLS_ON = {"enabled": True}
MUTUAL = {"enabled": True, "clientAuth": "Required"}


AUTH_ON = {"enabled": True, "adminSecret": "admin"}


@pytest.mark.parametrize(
    ("broker_spec", "proxy_auth", "says"),
    [
        ({"auth": AUTH_ON}, {}, "spec.auth.enabled: Proxy/proxy: auth.enabled is false and BrokerGroup/broker-a of "
         "cluster DefaultCluster has spec.auth.enabled; rule: a proxy in front of brokers with ACL 2.0 authenticates "
         "its clients and signs as their admin; fix: set spec.auth.enabled: true and spec.auth.adminSecret: admin on "
         "the Proxy"),
        ({}, AUTH_ON, "spec.auth.enabled: Proxy/proxy: auth.enabled is true and no BrokerGroup of cluster "
         "DefaultCluster (broker-a) has spec.auth.enabled"),
        ({"auth": AUTH_ON}, {"enabled": True, "adminSecret": "other"}, "spec.auth.adminSecret: Proxy/proxy: "
         "auth.adminSecret is 'other' and the BrokerGroups of cluster DefaultCluster name 'admin'"),
        ({"tls": TLS_ON}, {}, "spec.tls.enabled: Proxy/proxy: tls.enabled is false and BrokerGroup/broker-a "
         "(cluster DefaultCluster) has tls.enabled true; rule: a proxy speaks TLS to its name servers and brokers "
         "exactly when it serves TLS (one JVM-wide switch, tls.enable), so it matches them; fix: set "
         "spec.tls.enabled: true on the Proxy"),
        ({}, {"tls": TLS_ON}, "spec.tls.enabled: Proxy/proxy: tls.enabled is true and BrokerGroup/broker-a "
         "(cluster DefaultCluster) has tls.enabled false; rule: a proxy speaks TLS to its name servers and brokers "
         "exactly when it serves TLS (one JVM-wide switch, tls.enable), so it matches them; fix: set "
         "spec.tls.enabled: false on the Proxy"),
        ({"tls": TLS_ON}, {"tls": TLS_ON}, None),
        ({"tls": MUTUAL}, {"tls": TLS_ON}, "spec.tls.clientAuth: Proxy/proxy: tls.clientAuth is None and "
         "BrokerGroup/broker-a (cluster DefaultCluster) has tls.clientAuth Required; rule: a proxy presents its "
         "certificate to its name servers and brokers exactly when they require one (its gRPC clients need none); "
         "fix: set spec.tls.clientAuth: Required on the Proxy"),
        ({"tls": MUTUAL}, {"tls": MUTUAL}, None),
        ({"auth": AUTH_ON, "tls": TLS_ON}, {**AUTH_ON, "tls": TLS_ON}, None),
        ({"auth": AUTH_ON}, AUTH_ON, None),
        ({}, {}, None),
    ],
    ids=["brokers authenticate, the proxy not", "the proxy authenticates, the brokers not", "another admin",
         "TLS brokers, a plain-text proxy", "plain-text brokers, a TLS proxy", "TLS on both",
         "mutual-TLS brokers, a proxy presenting nothing", "mutual TLS on both",
         "TLS and authentication on both", "both authenticate", "neither"],
)  # fmt: skip
def test_a_proxy_must_match_the_brokers_of_its_cluster(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    broker_spec: dict[str, Any],
    proxy_auth: dict[str, Any],
    says: str | None,
) -> None:
    controller_doc = controller()
    if "tls" in broker_spec:
        controller_doc["spec"]["tls"] = dict(broker_spec["tls"])
    f = tmp_path / "m.yaml"
    f.write_text(yaml.safe_dump_all([controller_doc, broker(**broker_spec), _proxy(**proxy_auth)]))
    code, lines, err = run(capsys, "validate", str(f))
    if says is None:
        assert code == 0, err
        return
    assert code == 2
    (line,) = [x for x in [*lines, *err.splitlines()] if "Proxy/proxy" in x]
    assert line.startswith(f"{f}#3 Proxy/proxy: {says}"), line
    # Alternatives given as separate files are not held to each other (examples/*.yaml name the same cluster).
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(yaml.safe_dump_all([controller_doc, broker(**broker_spec)]))
    b.write_text(yaml.safe_dump_all([_proxy(**proxy_auth)]))
    assert run(capsys, "validate", str(a), str(b))[0] == 0

"""The local platform runs a Proxy as real proxy processes: ports, rmq-proxy.json (the Kubernetes renderer with
local ports), argv, start phase, `local env`'s ROCKETMQ_PROXY_ENDPOINT, and the refusal of a Proxy whose
ControllerGroup is not among the files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rocketmq_operator.api.validation import validate_document, validate_file
from rocketmq_operator.platforms.local.layout import StateLayout
from rocketmq_operator.platforms.local.lifecycle import env
from rocketmq_operator.platforms.local.placement import (
    PlacementError,
    build_state,
    port_needs,
    render_configs,
)
from rocketmq_operator.platforms.local.ports import pack
from rocketmq_operator.platforms.local.state import write_state

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "proxy.yaml"
STATE = Path("/state")
BASE = 23100


def _resources(path: Path = EXAMPLE) -> list[Any]:
    reports = validate_file(path)
    assert all(r.ok for r in reports)
    return [r.resource for r in reports if r.resource is not None]


def test_proxies_get_a_port_block_each_and_their_own_rmq_proxy_json() -> None:
    res = _resources()
    needs = port_needs(res)
    assert [(n.key, n.offsets) for n in needs if n.key.startswith("proxy-")] == [
        ("proxy-0.grpc", (0, 1, 2)),
        ("proxy-1.grpc", (0, 1, 2)),
    ]
    ports = pack(needs, BASE)
    confs = render_configs(res, ports, StateLayout(STATE))
    first, second = (json.loads(confs[f"proxy-{i}"]) for i in range(2))
    grpc = ports["proxy-0.grpc"]
    assert first["grpcServerPort"] == grpc and first["remotingListenPort"] == grpc + 1
    assert first["metricsPromExporterPort"] == grpc + 2 and first["metricsPromExporterHost"] == "127.0.0.1"
    assert second["grpcServerPort"] == ports["proxy-1.grpc"]
    assert first["namesrvAddr"] == f"127.0.0.1:{ports['rocketmq-ctl-0.namesrv']}"
    assert first["proxyMode"] == "cluster" and first["rocketMQClusterName"] == "DefaultCluster"
    assert first["topicRouteServiceCacheRefreshSeconds"] == 1


def test_proxy_processes_start_last_with_the_proxy_main_class_and_pc() -> None:
    res = _resources()
    ports = pack(port_needs(res), BASE)
    state = build_state(res, ports, StateLayout(STATE), files=[str(EXAMPLE)], distribution="/dist",
                        rocketmq_version="5.5.0")  # fmt: skip
    proxies = [r for r in state.replicas if r.role == "proxy"]
    assert [p.name for p in proxies] == ["proxy-0", "proxy-1"]
    assert all(p.phase > max(r.phase for r in state.replicas if r.role != "proxy") for p in proxies)
    argv = proxies[0].argv
    assert "org.apache.rocketmq.proxy.ProxyStartup" in argv
    i = argv.index("-pc")
    assert argv[i + 1] == proxies[0].run_config and argv[i + 2 : i + 4] == ["-pm", "cluster"]
    assert "-c" not in argv
    # RocketMQ's own TLS mode (permissive), as on Kubernetes: RocketMQ 5's Java client speaks TLS by default and
    # the Python client plain text; a proxy with TLS disabled refused the first (NotSslRecordException).
    assert not any(flag.startswith("-Dtls.server.mode=") for flag in argv), argv
    assert proxies[0].ports == {"grpc": ports["proxy-0.grpc"], "remoting": ports["proxy-0.grpc"] + 1}
    assert state.proxy_endpoints == [f"127.0.0.1:{ports['proxy-0.grpc']}", f"127.0.0.1:{ports['proxy-1.grpc']}"]
    assert state.group("proxy") is not None and state.group("proxy").kind == "Proxy"  # type: ignore[union-attr]


def test_local_env_exports_the_first_proxy_endpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _resources()
    layout = StateLayout(tmp_path)
    ports = pack(port_needs(res), BASE)
    state = build_state(res, ports, layout, files=[str(EXAMPLE)], distribution="/dist", rocketmq_version="5.5.0")
    write_state(layout.state_file, state)
    printed: list[str] = []
    code = env(tmp_path, out=printed.append)
    assert code == 3  # nothing runs, but what is known is printed first
    want = f"export ROCKETMQ_PROXY_ENDPOINT=127.0.0.1:{ports['proxy-0.grpc']}"
    assert want in printed
    assert "stopped" in capsys.readouterr().err


def test_a_proxy_without_its_controller_group_is_refused_in_one_line() -> None:
    proxy = validate_document(
        {
            "apiVersion": "rocketmq-operator.dev/v1alpha1",
            "kind": "Proxy",
            "metadata": {"name": "p"},
            "spec": {"controllerRef": {"name": "elsewhere"}},
        }
    ).resource
    cg = validate_document(
        {
            "apiVersion": "rocketmq-operator.dev/v1alpha1",
            "kind": "ControllerGroup",
            "metadata": {"name": "ctl"},
            "spec": {"replicas": 1},
        }
    ).resource
    res = [cg, proxy]
    with pytest.raises(PlacementError) as info:
        build_state(res, pack(port_needs(res), BASE), StateLayout(STATE), files=[], distribution="/d",
                    rocketmq_version="5.5.0")  # fmt: skip
    message = str(info.value)
    assert message.startswith("Proxy/p: spec.controllerRef.name 'elsewhere'") and "fix:" in message
    assert "\n" not in message


TLS_EXAMPLE = ROOT / "examples" / "tls.yaml"


def test_a_tls_proxy_serves_its_own_certificate_and_speaks_tls_to_the_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/tls.yaml: the proxy runs enforcing TLS flags over its own files in the state directory, its
    rmq-proxy.json names the same files (the gRPC server reads those; its file watch reloads only when they are
    the JVM's -Dtls.server.* paths), RocketMQ's self-signed test certificate is off, and `local env` exports both
    the proxy's endpoint and the authority to trust."""
    from rocketmq_operator.platforms.local.tls import check_tls, tls_groups

    res = _resources(TLS_EXAMPLE)
    check_tls(res)
    assert set(tls_groups(res)) == {"tls-ctl", "broker-tls", "proxy-tls"}
    layout = StateLayout(tmp_path)
    ports = pack(port_needs(res), BASE)
    state = build_state(res, ports, layout, files=[str(TLS_EXAMPLE)], distribution="/dist", rocketmq_version="5.5.0")
    (proxy,) = [r for r in state.replicas if r.role == "proxy"]
    cert, key = str(layout.tls_cert("proxy-tls-0")), str(layout.tls_key("proxy-tls-0"))
    assert "-Dtls.server.mode=enforcing" in proxy.argv and "-Dtls.enable=true" in proxy.argv
    assert f"-Dtls.server.certPath={cert}" in proxy.argv and f"-Dtls.server.keyPath={key}" in proxy.argv
    assert f"-Dtls.client.trustCertPath={layout.tls_ca}" in proxy.argv
    conf = json.loads(render_configs(res, ports, layout)["proxy-tls-0"])
    assert (conf["tlsTestModeEnable"], conf["tlsCertPath"], conf["tlsKeyPath"]) == (False, cert, key)
    assert conf["tlsCertWatchIntervalMs"] == 10_000
    write_state(layout.state_file, state)
    printed: list[str] = []
    assert env(tmp_path, out=printed.append) == 3
    assert f"export ROCKETMQ_PROXY_ENDPOINT=127.0.0.1:{ports['proxy-tls-0.grpc']}" in printed
    assert f"export ROCKETMQ_TLS_CA={layout.tls_ca}" in printed
    capsys.readouterr()


def test_a_tls_proxys_certificate_is_issued_names_its_address_and_renews_without_a_restart(tmp_path: Path) -> None:
    from rocketmq_operator.control.certificates import CertificateInfo, signed_by
    from rocketmq_operator.platforms.local.tls import TlsPolicy, ensure_certificates

    res = _resources(TLS_EXAMPLE)
    layout = StateLayout(tmp_path)
    layout.tls_dir.mkdir(parents=True)
    state = build_state(
        res, pack(port_needs(res), BASE), layout, files=[str(TLS_EXAMPLE)], distribution="/d", rocketmq_version="5.5.0"
    )
    issued = ensure_certificates(layout, state)
    assert any(line.startswith("issue proxy-tls-0: no certificate") for line in issued), issued
    info = CertificateInfo.of(layout.tls_cert("proxy-tls-0").read_text())
    assert "127.0.0.1" in info.ip_addresses and "localhost" in info.dns_names
    assert signed_by(layout.tls_cert("proxy-tls-0").read_text(), layout.tls_ca.read_text())
    # Due for renewal (past notAfter - renewBefore): issued again, and the proxy is never restarted for it.
    policy = TlsPolicy(state, layout)
    later = info.not_after - 3600
    planned = policy._plan(later, restarts=True)
    assert ("issue proxy-tls-0" in " ".join(line for line, _ in planned)) and not [
        replica for _, replica in planned if replica is not None and replica.role == "proxy"
    ]


@pytest.mark.parametrize(
    ("proxy_tls", "group_tls", "says"),
    [
        (False, True, "spec.tls.enabled is true in BrokerGroup/broker-tls, ControllerGroup/tls-ctl and false in "
         "Proxy/proxy-tls; rule: one local cluster speaks TLS everywhere or nowhere"),
        (True, False, "spec.tls.enabled is true in Proxy/proxy-tls and false in BrokerGroup/broker-tls, "
         "ControllerGroup/tls-ctl; rule: one local cluster speaks TLS everywhere or nowhere"),
    ],
    ids=["a plain-text proxy before TLS groups", "a TLS proxy before plain-text groups"],
)  # fmt: skip
def test_the_local_platform_refuses_a_proxy_whose_tls_differs_in_one_line(
    proxy_tls: bool, group_tls: bool, says: str
) -> None:
    from rocketmq_operator.platforms.local.tls import TlsConfigError, check_tls

    res = _resources(TLS_EXAMPLE)
    for r in res:
        if hasattr(r.spec, "tls"):
            r.spec.tls.enabled = proxy_tls if r.kind == "Proxy" else group_tls
    with pytest.raises(TlsConfigError) as info:
        check_tls(res)
    assert str(info.value).startswith(says) and "\n" not in str(info.value)


def test_local_up_refuses_a_plain_text_proxy_before_tls_groups_with_validates_line(tmp_path: Path) -> None:
    """`local up` validates first (`lifecycle.validate`): the line is the one `validate` prints."""
    from rocketmq_operator.platforms.local.lifecycle import validate

    text = TLS_EXAMPLE.read_text(encoding="utf-8").replace(
        "  tls:\n    enabled: true                   # as the groups", "  tls:\n    enabled: false  # unlike the groups"
    )
    f = tmp_path / "m.yaml"
    f.write_text(text, encoding="utf-8")
    _, errors, _, _ = validate([str(f)])
    (line,) = errors
    assert "Proxy/proxy-tls: spec.tls.enabled: Proxy/proxy-tls: tls.enabled is false and BrokerGroup/broker-tls" in line
    assert line.endswith("fix: set spec.tls.enabled: true on the Proxy")

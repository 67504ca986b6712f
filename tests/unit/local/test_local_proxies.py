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

"""The multi-node cluster's address plan and the configs each node gets (`k8s/cluster.py`), as plain data: no
namespace, process or cgroup is touched. The cluster itself is checked by bringing it up (docs/notes/three-nodes.md).
"""

from __future__ import annotations

import ipaddress
import json
import tomllib
from pathlib import Path

import pytest

import k8s_scripts

cluster = k8s_scripts.load("cluster")
node = k8s_scripts.load("node")


def test_three_nodes_have_distinct_names_zones_addresses_and_pod_cidrs() -> None:
    nodes = cluster.plan(3)
    assert [n.name for n in nodes] == ["rmq-n1", "rmq-n2", "rmq-n3"]
    assert [n.zone for n in nodes] == ["zone-a", "zone-b", "zone-c"]
    assert [n.ip for n in nodes] == ["10.213.0.11", "10.213.0.12", "10.213.0.13"]
    assert [n.pod_cidr for n in nodes] == ["10.213.1.0/24", "10.213.2.0/24", "10.213.3.0/24"]
    network = ipaddress.IPv4Network(cluster.NETWORK)
    bridge = ipaddress.IPv4Network(f"{cluster.API_ADDRESS}/24", strict=False)
    for n in nodes:
        cidr = ipaddress.IPv4Network(n.pod_cidr)
        assert cidr.subnet_of(network) and not cidr.overlaps(bridge), n  # the guard covers it; no clash
        assert ipaddress.ip_address(n.ip) in bridge and ipaddress.ip_address(n.gateway) in cidr, n
        assert len(n.veth) <= 15 and len(n.netns) <= 15, n  # interface names: IFNAMSIZ


def test_each_node_routes_to_every_other_nodes_pods_through_that_node() -> None:
    nodes = cluster.plan(3)
    assert nodes[0].routes(nodes) == [("10.213.2.0/24", "10.213.0.12"), ("10.213.3.0/24", "10.213.0.13")]
    assert cluster.plan(1)[0].routes(cluster.plan(1)) == []


@pytest.mark.parametrize("count", [0, cluster.MAX_NODES + 1])
def test_a_node_count_out_of_range_is_refused_naming_the_range(count: int) -> None:
    with pytest.raises(cluster.HarnessError, match=rf"--nodes {count}: .* 1 to {cluster.MAX_NODES} nodes"):
        cluster.plan(count)


def test_the_guard_drops_the_whole_cluster_network_leaving_by_another_interface() -> None:
    rules = cluster.guard_rules()
    assert f'ip saddr {cluster.NETWORK} oifname != "{cluster.BRIDGE}" drop' in rules
    assert f'ip daddr {cluster.NETWORK} iifname != "{cluster.BRIDGE}" drop' in rules


def test_daemons_run_in_the_node_namespace_without_a_mount_namespace_of_their_own() -> None:
    n = cluster.plan(2)[1]
    argv = cluster.in_netns(n, ["kubelet", "--v=1"])
    assert argv == ["nsenter", "--net=/run/netns/rmq-n2", "--", "kubelet", "--v=1"]


def test_a_nodes_configs_name_its_address_cidr_cgroup_root_and_runc_root(tmp_path: Path) -> None:
    n = cluster.plan(3)[2]
    nd = tmp_path / "nodes" / n.name
    kubelet = json.loads(
        node._kubelet_config(
            nd, tmp_path, 10248, 10250, address=n.ip, healthz_address=n.ip, pod_cidr=n.pod_cidr, cgroup_root=n.cgroup
        )
    )
    assert (kubelet["address"], kubelet["healthzBindAddress"], kubelet["podCIDR"]) == (n.ip, n.ip, n.pod_cidr)
    assert kubelet["cgroupRoot"] == "/rmq-n3"
    # a crashed container's restart waits the first back-off at most, never the 5 min escalation (docs/node.md)
    assert kubelet["crashLoopBackOff"] == {"maxContainerRestartPeriod": "10s"}
    proxy = json.loads(
        node._kube_proxy_config(
            nd, 10256, 10249, name=n.name, address=n.ip, local_address=n.ip, cluster_cidr=cluster.NETWORK
        )
    )
    assert proxy["hostnameOverride"] == "rmq-n3" and proxy["nodePortAddresses"] == ["10.213.0.13/32"]
    assert proxy["clusterCIDR"] == "10.213.0.0/16" and proxy["healthzBindAddress"] == "10.213.0.13:10256"
    cni = json.loads(node._cni_config(nd, bridge="cni0", subnet=n.pod_cidr, gateway=n.gateway))
    plugin = cni["plugins"][0]
    assert plugin["bridge"] == "cni0" and plugin["ipam"]["ranges"] == [[{"subnet": n.pod_cidr, "gateway": n.gateway}]]
    containerd = node._containerd_config(nd, runc_root=nd / "containerd" / "runc")
    assert f'Root = "{nd / "containerd" / "runc"}"' in containerd
    assert "Root =" not in node._containerd_config(nd)  # the one-node cluster's stays as it was
    assert "cgroupRoot" not in json.loads(node._kubelet_config(nd, tmp_path, 1, 2))


def test_a_planted_seed_links_every_file_but_the_databases_containerd_writes_in_place(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    blob = seed / "io.containerd.content.v1.content" / "blobs" / "sha256" / "ab"
    layer = seed / "io.containerd.snapshotter.v1.overlayfs" / "snapshots" / "1" / "fs" / "bin" / "sh"
    for path in (blob, layer, *(seed / name for name in cluster.SEED_DBS), *(seed / n for n in cluster.SEED_DROP)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(path.name)
    (seed / ".complete").write_text("[]\n")
    root = tmp_path / "node" / "root"
    root.parent.mkdir()
    cluster.plant_seed(seed, root)
    for path in (blob, layer):
        assert (root / path.relative_to(seed)).stat().st_ino == path.stat().st_ino  # the same file: no copy
    for name in cluster.SEED_DBS:
        copy = root / name
        assert copy.read_text() == (seed / name).read_text() and copy.stat().st_ino != (seed / name).stat().st_ino
    assert not any((root / n).exists() for n in cluster.SEED_DROP) and not (root / ".complete").exists()


def test_kube_router_runs_only_its_network_policy_firewall(tmp_path: Path) -> None:
    n = cluster.plan(3)[0]
    argv = cluster.kube_router_argv(Path("/bin/kube-router"), tmp_path, n)
    assert {"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false"} <= set(argv)
    assert f"--hostname-override={n.name}" in argv and f"--service-cluster-ip-range={cluster.SERVICE_CIDR}" in argv


def test_the_container_environment_goes_into_a_base_runtime_spec_or_nowhere(tmp_path: Path) -> None:
    """`$ROCKETMQ_OPERATOR_NODE_CONTAINER_ENV` unset or empty: containerd's own default, no base spec line; a word
    that is not NAME=value is refused with the variable's name and the rule (before containerd is asked)."""
    assert node.base_runtime_spec(tmp_path, {}) is None
    assert node.base_runtime_spec(tmp_path, {node.CONTAINER_ENV: ""}) is None
    assert "base_runtime_spec" not in node._containerd_config(tmp_path)
    with pytest.raises(node.HarnessError, match=f"{node.CONTAINER_ENV}: '-XX:TieredStopAtLevel=1' is not NAME=value"):
        node.base_runtime_spec(tmp_path, {node.CONTAINER_ENV: "-XX:TieredStopAtLevel=1"})
    config = node._containerd_config(tmp_path, base_spec=tmp_path / "spec.json")
    runc = tomllib.loads(config)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]["runc"]
    assert runc["base_runtime_spec"] == str(tmp_path / "spec.json")  # the runc runtime's own key

#!/usr/bin/env python3
"""A real multi-node Kubernetes cluster on this machine, without Docker (issue 29, docs/notes/three-nodes.md).

Python 3.11 stdlib only. The control plane of ``k8s/harness.py`` and one kube-scheduler run on the host, as for
the one-node cluster of ``k8s/node.py``; each worker node is a **network namespace** of its own (``rmq-n<i>``)
with its own address, containerd (own root, state, socket, runc root), bridge CNI (``cni0`` inside the
namespace, pod CIDR 10.213.<i>.0/24), kubelet (its own ``cgroupRoot`` /rmq-n<i>), kube-proxy and kube-router
(its NetworkPolicy firewall only: iptables and ipsets of the node's namespace), the way kind runs nodes as
containers. Images come from one seed (``ensure_seed``: imported once, hard-linked into every node). The node
daemons are started with ``nsenter --net=``, not ``ip netns exec`` (which would unshare the mount namespace:
the kubelet's and containerd's mounts must be the host's).

    cluster.py up     [--nodes 3] [--state-dir .k8s] [--no-build]
    cluster.py down   [--state-dir .k8s]
    cluster.py status [--state-dir .k8s]
    cluster.py import IMAGE.tar [...] [--state-dir .k8s]   # into every node's containerd
    cluster.py check                                       # DNS and a Service from inside every node
    cluster.py power-off --node rmq-n2                     # a machine that lost power: link cut, all killed
    cluster.py power-on  --node rmq-n2                     # back on what it left on disk

Network (``plan``): the host bridge ``rmqk8s0`` holds 10.213.0.1/24 (the API server's address, as today); node i
is 10.213.0.<10+i> on a veth whose host end is a port of that bridge; in each namespace a route to every other
node's pod CIDR through that node's address, and on the host one to each pod CIDR. Pod-to-pod traffic between
nodes is switched by the host bridge, never forwarded by the host (its ``ip_forward`` is left alone), and the
guard table ``inet rmq-node`` drops anything from 10.213.0.0/16 that would leave through another interface.
Zones: ``topology.kubernetes.io/zone=zone-a|b|c...``, one per node, so spread rules mean something.

``down`` removes what ``up`` made: processes (daemons, pods, shims), mounts, the namespaces (their veths, routes,
rules and bridges go with them), cgroups, the bridge, the guard table. One cluster or node per machine: the
record is ``k8s/node.py``'s.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if "node" not in sys.modules:  # loaded by path, as tests/k8s_scripts.py does; node.py loads the harness
    import importlib.util

    _spec = importlib.util.spec_from_file_location("node", HERE / "node.py")
    assert _spec and _spec.loader
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["node"] = _module
    _spec.loader.exec_module(_module)
node = sys.modules["node"]
harness = node.harness  # type: ignore[attr-defined]
build_tools = node.build_tools  # type: ignore[attr-defined]
HarnessError = node.HarnessError  # type: ignore[attr-defined]

API_ADDRESS = node.NODE_IP  # type: ignore[attr-defined]  # 10.213.0.1 on the host bridge
BRIDGE = node.BRIDGE  # type: ignore[attr-defined]
NETWORK = "10.213.0.0/16"  # node addresses and every pod CIDR
GUARD_TABLE = node.GUARD_TABLE  # type: ignore[attr-defined]
NODE_PORTS = {
    "kubelet": 10250,
    "kubelet-healthz": 10248,
    "proxy-healthz": 10256,
    "proxy-metrics": 10249,
    "router-health": 20244,
}
SERVICE_CIDR = "10.0.0.0/24"  # the harness's --service-cluster-ip-range
MAX_NODES = 9  # 10.213.0.11-19 and pod CIDRs 10.213.1-9.0/24
CGROUP_ROOT = Path("/sys/fs/cgroup")
DAEMONS = ("containerd", "kubelet", "kube-proxy", "kube-router")  # per node, start order; stopped in reverse
# The cluster's storage (docs/node.md, "Storage that grows"): loop devices on sparse files, `local` PVs of the
# default StorageClass, which allows expansion (k8s/resizer.py plays the back end's half).
EXPANDABLE_CLASS = "rmq-expandable"
# The e2e tests' claims (about 20: two quickstarts, the auth, TLS and lease groups, Spark's) with room to spare:
# volumes are Retain, a deleted claim's is not reused.
VOLUMES = 24
VOLUME_SIZE = "10Gi"  # the examples' broker size; a 1Gi controller claim binds one too
VOLUME_BYTES = 10 * 2**30
# XFS, not ext4: growing a mounted ext4 needs CAP_SYS_RESOURCE (EXT4_IOC_RESIZE_FS), which root lacks on machines
# like this one (a sandbox's bounding set; "resize2fs: Permission denied"); xfs_growfs needs CAP_SYS_ADMIN only.
VOLUME_FS = "xfs"
RESIZER = "resizer"  # its pid file and log in the state dir; started after the control plane, stopped before it
# kube-router's NetworkPolicy controller reads these (its informers start whatever it runs) and writes nothing.
KUBE_ROUTER_RBAC = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "rmq:kube-router"}
rules:
- apiGroups: [""]
  resources: [pods, namespaces, nodes, services, endpoints]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "rmq:kube-router"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "rmq:kube-router"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:kube-router"}
"""


@dataclass(frozen=True)
class NodePlan:
    """One worker node: its names and addresses (pure data, ``plan``)."""

    index: int
    name: str
    zone: str
    netns: str
    veth: str  # host end, a port of the host bridge; the node end is eth0 in the namespace
    ip: str
    pod_cidr: str
    gateway: str  # cni0's address in the namespace, the pods' gateway
    cgroup: str  # the kubelet's cgroupRoot, in every v1 hierarchy

    def routes(self, nodes: Sequence[NodePlan]) -> list[tuple[str, str]]:
        """(destination, via) in this node's namespace: the other nodes' pod CIDRs through their addresses."""
        return [(other.pod_cidr, other.ip) for other in nodes if other.index != self.index]


def plan(count: int) -> list[NodePlan]:
    """The address plan of ``count`` nodes (1..MAX_NODES)."""
    if not 1 <= count <= MAX_NODES:
        raise HarnessError(f"--nodes {count}: a cluster here has 1 to {MAX_NODES} nodes; fix: pick one of those")
    zones = "abcdefghi"
    return [
        NodePlan(
            index=i,
            name=f"rmq-n{i}",
            zone=f"zone-{zones[i - 1]}",
            netns=f"rmq-n{i}",
            veth=f"rmqv{i}",
            ip=f"10.213.0.{10 + i}",
            pod_cidr=f"10.213.{i}.0/24",
            gateway=f"10.213.{i}.1",
            cgroup=f"/rmq-n{i}",
        )
        for i in range(1, count + 1)
    ]


def guard_rules() -> str:
    """The guard table: nothing from the cluster's addresses leaves through an interface other than the bridge."""
    return f"""table inet {GUARD_TABLE} {{
  chain forward {{
    type filter hook forward priority -10; policy accept;
    ip saddr {NETWORK} oifname != "{BRIDGE}" drop
    ip daddr {NETWORK} iifname != "{BRIDGE}" drop
  }}
}}
"""


def _say(msg: str) -> None:
    print(msg, flush=True)


def _run(
    *argv: str, check: bool = True, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return node._run(*argv, check=check, input=input, timeout=timeout)  # type: ignore[attr-defined,no-any-return]


def node_dir(state: Path, n: NodePlan) -> Path:
    return state / "nodes" / n.name


def kube_router_argv(binary: Path, nd: Path, n: NodePlan) -> list[str]:
    """kube-router as the node's NetworkPolicy agent only: no routing (the routes are static), no service proxy
    (kube-proxy's; the flaw reported for v2.1.0 is in that proxy), no CNI config of its own (bridge CNI's)."""
    return [
        str(binary),
        f"--kubeconfig={nd / 'kube-router.kubeconfig'}",
        f"--hostname-override={n.name}",
        "--run-firewall=true",
        "--run-router=false",
        "--run-service-proxy=false",
        "--enable-cni=false",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        f"--health-port={NODE_PORTS['router-health']}",
        "--metrics-port=0",
        "--v=1",
    ]


def in_netns(n: NodePlan, argv: Sequence[str]) -> list[str]:
    """``argv`` run in the node's network namespace (and nothing else of it: the mounts stay the host's)."""
    return ["nsenter", f"--net=/run/netns/{n.netns}", "--", *argv]


# ---------------------------------------------------------------- network


def _setup_network(nodes: Sequence[NodePlan]) -> None:
    if _run("ip", "link", "show", BRIDGE, check=False).returncode != 0:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "replace", f"{API_ADDRESS}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    _run("nft", "delete", "table", "inet", GUARD_TABLE, check=False)
    _run("nft", "-f", "-", input=guard_rules())
    for n in nodes:
        _run("ip", "netns", "del", n.netns, check=False)  # a leftover of a killed run
        _run("ip", "netns", "add", n.netns)
        _run("ip", "link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
        _run("ip", "link", "set", n.veth, "master", BRIDGE, "up")
        _run("ip", "-n", n.netns, "link", "set", "lo", "up")
        _run("ip", "-n", n.netns, "addr", "add", f"{n.ip}/24", "dev", "eth0")
        _run("ip", "-n", n.netns, "link", "set", "eth0", "up")
        _run("ip", "-n", n.netns, "route", "add", "default", "via", API_ADDRESS)
        for dst, via in n.routes(nodes):
            _run("ip", "-n", n.netns, "route", "add", dst, "via", via)
        _run("ip", "route", "replace", n.pod_cidr, "via", n.ip, "dev", BRIDGE)
        # Per-namespace sysctls: a new namespace starts with forwarding off.
        _run(*in_netns(n, ["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"]))


def _teardown_network(nodes: Sequence[NodePlan]) -> None:
    for n in nodes:
        _run("ip", "netns", "del", n.netns, check=False)  # its eth0 goes, and the veth's host end with it
        _run("ip", "link", "del", n.veth, check=False)
    _run("nft", "delete", "table", "inet", GUARD_TABLE, check=False)
    if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        _run("ip", "link", "del", BRIDGE, check=False)  # the host routes to the pod CIDRs go with it


# ---------------------------------------------------------------- cgroups and processes


def _hierarchies() -> list[Path]:
    """The mounted v1 hierarchies (and the v2 one), real directories only (cpu,cpuacct links skipped)."""
    return [p for p in sorted(CGROUP_ROOT.iterdir()) if p.is_dir() and not p.is_symlink()]


def _make_cgroups(n: NodePlan) -> None:
    for hierarchy in _hierarchies():
        path = hierarchy / n.cgroup.lstrip("/")
        path.mkdir(exist_ok=True)
        if hierarchy.name == "cpuset":  # a new cpuset is empty: it must be given the parent's
            for key in ("cpuset.cpus", "cpuset.mems"):
                (path / key).write_text((hierarchy / key).read_text())


def _cgroup_dirs(n: NodePlan) -> list[Path]:
    """Every directory of the node's cgroup tree over all hierarchies, deepest first."""
    return node._cgroup_dirs(n.cgroup.lstrip("/"))  # type: ignore[attr-defined,no-any-return]


def _pod_pids(n: NodePlan) -> set[int]:
    return node._pod_pids(n.cgroup.lstrip("/"))  # type: ignore[attr-defined,no-any-return]


def _stop_node(state: Path, n: NodePlan) -> None:
    """Stop one node's daemons and every pod and shim of it; remove its cgroups."""
    nd = node_dir(state, n)
    for name in ("kube-router", "kube-proxy", "kubelet"):
        harness._stop_pid(harness._read_pid(nd, name), state)  # type: ignore[attr-defined]
    pods, cgroups = (lambda: _pod_pids(n)), (lambda: _cgroup_dirs(n))
    node._kill_pods_and_shims(nd, pods, cgroups)  # type: ignore[attr-defined]  # containers before containerd
    harness._stop_pid(harness._read_pid(nd, "containerd"), state)  # type: ignore[attr-defined]
    node._kill_pods_and_shims(nd, pods, cgroups)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- images


def ctr(state: Path, n: NodePlan, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    sock = node_dir(state.resolve(), n) / "containerd" / "containerd.sock"
    return node.ctr_at(sock, *args, timeout=timeout)  # type: ignore[attr-defined,no-any-return]


def import_images(state: Path, nodes: Sequence[NodePlan], archives: Sequence[Path]) -> None:
    """Import every archive into every node's containerd, all at once."""
    for archive in archives:
        if not archive.is_file():
            raise HarnessError(f"no image archive at {archive}")

    def one(n: NodePlan, archive: Path) -> None:
        started = time.monotonic()
        ctr(state, n, "images", "import", "--snapshotter", "overlayfs", str(archive))
        _say(f"{n.name}: imported {archive.name} in {time.monotonic() - started:.1f}s")

    jobs = [(n, a) for n in nodes for a in archives]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        for future in [pool.submit(one, n, a) for n, a in jobs]:
            future.result()


# ---------------------------------------------------------------- the image seed

SEED_DBS = ("io.containerd.metadata.v1.bolt/meta.db", "io.containerd.snapshotter.v1.overlayfs/metadata.db")
SEED_DROP = ("io.containerd.grpc.v1.introspection/uuid",)  # each containerd makes its own identity


def seed_dir(archives: Sequence[Path]) -> Path:
    """Where the seed of these archives lives: their names carry their content keys, so a rebuilt image is a
    new seed. Beside the binaries, under the cache."""
    containerd = _run("containerd", "--version").stdout.split()[2]
    names = [*sorted(a.name for a in archives), containerd]
    key = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    return build_tools.bin_dir().parent / "containerd-seed" / key


def ensure_seed(archives: Sequence[Path]) -> Path:
    """A containerd root holding every archive imported (made once by a throwaway containerd, under a lock; older
    seeds deleted). Importing into N containerds would cost N times the CPU and the disk of one import: a node
    is given a copy of the seed instead (`plant_seed`)."""
    seed = seed_dir(archives)
    if (seed / ".complete").is_file():
        return seed
    with build_tools._lock(seed.parent / ".lock"):  # type: ignore[attr-defined]
        if (seed / ".complete").is_file():
            return seed
        # The newest other seed stays (`make k8s-cluster-up` by hand and `make test` use different image sets);
        # older ones and interrupted builds go.
        others = sorted((d for d in seed.parent.iterdir() if d.is_dir() and d != seed), key=lambda d: d.stat().st_mtime)
        kept = [d for d in others if (d / ".complete").is_file()][-1:]
        for old in others:
            if old not in kept:
                shutil.rmtree(old, ignore_errors=True)
        # A short directory for containerd's sockets (a unix socket path is at most 104 bytes; the cache's can be
        # longer), on the cache's filesystem if /tmp is not (the root is renamed into place).
        work = Path(tempfile.mkdtemp(prefix="rmq-seed-"))
        shutil.rmtree(seed, ignore_errors=True)
        (work / "containerd").mkdir(parents=True, exist_ok=True)
        (work / "logs").mkdir()
        (work / "cni" / "net.d").mkdir(parents=True)
        (work / "containerd" / "config.toml").write_text(node._containerd_config(work))  # type: ignore[attr-defined]
        started = time.monotonic()
        pid = harness._spawn(work, "containerd", ["containerd", "--config", str(work / "containerd" / "config.toml")])  # type: ignore[attr-defined]
        sock = work / "containerd" / "containerd.sock"
        try:

            def answers() -> tuple[bool, str]:
                if not sock.exists():
                    return False, ""
                res = _run("ctr", "--address", str(sock), "version", check=False, timeout=5)
                return res.returncode == 0, res.stderr

            harness._wait("the seed's containerd", answers, 60, work, "containerd")  # type: ignore[attr-defined]

            def one(archive: Path) -> None:
                node.ctr_at(sock, "images", "import", "--snapshotter", "overlayfs", str(archive), timeout=900)  # type: ignore[attr-defined]

            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(archives))) as pool:
                for future in [pool.submit(one, a) for a in archives]:
                    future.result()
        except BaseException:
            harness._stop_pid(pid, work)  # type: ignore[attr-defined]
            shutil.rmtree(work, ignore_errors=True)
            raise
        harness._stop_pid(pid, work)  # type: ignore[attr-defined]
        shutil.move(work / "containerd" / "root", seed)
        shutil.rmtree(work, ignore_errors=True)
        (seed / ".complete").write_text(json.dumps([a.name for a in archives]) + "\n")
        _say(f"image seed {seed.name}: {len(archives)} archives imported in {time.monotonic() - started:.0f}s")
    return seed


def plant_seed(seed: Path, root: Path) -> None:
    """``root`` (a node's containerd root, not yet started) becomes a copy of the seed: every file a hard link
    (content blobs and committed snapshots are never written again: overlay lower layers, content-addressed
    blobs) but the two bolt databases, which containerd writes in place and so are real copies."""
    shutil.rmtree(root, ignore_errors=True)
    _run("cp", "-al", str(seed), str(root))
    (root / ".complete").unlink(missing_ok=True)
    for name in SEED_DROP:
        (root / name).unlink(missing_ok=True)
    for name in SEED_DBS:
        path = root / name
        if path.is_file():
            copy = path.with_name(path.name + ".copy")
            shutil.copy2(path, copy)
            os.replace(copy, path)


# ---------------------------------------------------------------- up / down


def _record_nodes(record: dict | None) -> list[NodePlan]:
    return [NodePlan(**n) for n in (record or {}).get("nodes", [])]


def up(state_dir: Path, count: int, *, build: bool = True, timeout: float = 300.0, images: Sequence[Path] = ()) -> None:
    """``images``: archives every node has from the start (in the image seed, with the node's own pause and
    CoreDNS images)."""
    state = state_dir.resolve()
    nodes = plan(count)
    node._preflight()  # type: ignore[attr-defined]
    started = time.monotonic()
    wanted = list(build_tools.NODE_BINARIES)
    bin_dir = build_tools.build(quiet=True, only=wanted) if build else build_tools.bin_dir()
    need = [b for b in wanted if b != "helm" and not (bin_dir / b).is_file()]
    if need:
        raise HarnessError(f"missing binaries in {bin_dir}: {', '.join(need)} (run `make k8s-cluster-up`)")
    record = node._read_record()  # type: ignore[attr-defined]
    if record and Path(record["state_dir"]) != state and node.running_node():  # type: ignore[attr-defined]
        raise HarnessError(
            f"a node or cluster is already up with state dir {record['state_dir']}; one per machine: "
            f"stop it first (`make k8s-cluster-down` or `make k8s-node-down` with that state dir)"
        )
    if record:  # stale, or ours: start clean
        down(Path(record["state_dir"]), quiet=True)
    record = {
        "state_dir": str(state),
        "started": time.time(),
        "cluster": True,
        "nodes": [asdict(n) for n in nodes],
        "sysctls": {k: node._sysctl_read(k) for k in node.SYSCTLS},  # type: ignore[attr-defined]
        "host_paths_before": [p for p in node.HOST_PATHS if os.path.lexists(p)],  # type: ignore[attr-defined]
    }
    node._write_record(record)  # type: ignore[attr-defined]
    try:
        _start(state, nodes, bin_dir, timeout, images)
    except BaseException:
        if os.environ.get("ROCKETMQ_OPERATOR_NODE_KEEP") == "1":
            _say("cluster start failed; ROCKETMQ_OPERATOR_NODE_KEEP=1: left running, `make k8s-cluster-down` stops it")
            raise
        _say("cluster start failed or interrupted; stopping what was started ...")
        down(state, quiet=True)
        raise
    _say(
        f"cluster of {count} nodes up in {time.monotonic() - started:.1f}s\n"
        f"  export KUBECONFIG={state / 'kubeconfig'} PATH={state / 'bin'}:$PATH"
    )


def _start(
    state: Path, nodes: Sequence[NodePlan], bin_dir: Path, timeout: float, role_archives: Sequence[Path]
) -> None:
    _say(f"network: bridge {BRIDGE} {API_ADDRESS}/24, nodes {', '.join(f'{n.name} {n.ip}' for n in nodes)}")
    _setup_network(nodes)
    certs = {
        "kube-scheduler": "/CN=system:kube-scheduler",
        "kube-proxy": "/CN=system:kube-proxy",
        "kube-router": "/CN=system:kube-router",
    }
    certs |= {f"kubelet-{n.name}": f"/O=system:nodes/CN=system:node:{n.name}" for n in nodes}
    pki = state / "pki"
    cluster = node.start_control_plane(state, bin_dir, timeout, API_ADDRESS, certs)  # type: ignore[attr-defined]
    sched_dir = state / "scheduler"
    sched_dir.mkdir(parents=True, exist_ok=True)
    (sched_dir / "logs").mkdir(exist_ok=True)
    sched_kc = sched_dir / "kube-scheduler.kubeconfig"
    harness._write_kubeconfig(sched_kc, cluster.server, pki, "kube-scheduler", "kube-scheduler")  # type: ignore[attr-defined]
    sched_port = harness._free_port()  # type: ignore[attr-defined]
    harness._spawn(  # type: ignore[attr-defined]
        sched_dir,
        "kube-scheduler",
        node.scheduler_argv(bin_dir, sched_kc, sched_port, sched_dir / "certs"),  # type: ignore[attr-defined]
    )
    kc = node.kubectl_runner(bin_dir, state)  # type: ignore[attr-defined]
    kc("apply", "-f", "-", input=KUBE_ROUTER_RBAC)
    images = node.node_images(bin_dir)  # type: ignore[attr-defined]
    seed = ensure_seed([*images.values(), *role_archives])
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(nodes)) as pool:
        for future in [pool.submit(_start_node, state, n, cluster.server, bin_dir, seed, timeout) for n in nodes]:
            future.result()

    def all_ready() -> tuple[bool, str]:
        res = kc(
            "get",
            "nodes",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=='Ready')].status} {end}",
            check=False,
        )
        ready = {pair.split("=")[0] for pair in res.stdout.split() if pair.endswith("=True")}
        return ready >= {n.name for n in nodes}, res.stdout + res.stderr

    harness._wait("every node Ready", all_ready, timeout, state, None)  # type: ignore[attr-defined]
    coredns_image = next(i for i in images if i.startswith(node.COREDNS_IMAGE_REPO))  # type: ignore[attr-defined]
    _say("deploying CoreDNS")
    kc("apply", "-f", "-", input=node._coredns_manifest(coredns_image))  # type: ignore[attr-defined]

    def dns_ready() -> tuple[bool, str]:
        res = kc("-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.status.readyReplicas}", check=False)
        return res.stdout.strip() == "1", res.stdout + res.stderr

    harness._wait("CoreDNS Ready", dns_ready, timeout, state, None)  # type: ignore[attr-defined]
    loops = attach_volumes(state)
    _say(f"storage: {len(loops)} local PersistentVolumes of {VOLUME_SIZE} on loop devices, class {EXPANDABLE_CLASS}")
    kc("apply", "-f", "-", input=local_volumes([loop["device"] for loop in loops], nodes))
    harness._spawn(state, RESIZER, [sys.executable, str(HERE / "resizer.py"), "--state-dir", str(state)])  # type: ignore[attr-defined]


def local_volumes(devices: Sequence[str], nodes: Sequence[NodePlan]) -> str:
    """The default StorageClass (expandable, bound when a pod is scheduled) and one `local` PV per loop device.
    Every node may mount every volume, as a network disk follows its pod: a drained or lost node's replica can
    start elsewhere on its own data (all nodes are this machine). The kubelet formats a volume at its first mount
    and grows its file system online (`xfs_growfs`) once the back end has grown the device."""
    items: list[dict[str, object]] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {
                "name": EXPANDABLE_CLASS,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
            "reclaimPolicy": "Retain",
        }
    ]
    anywhere = {"key": "kubernetes.io/hostname", "operator": "In", "values": [n.name for n in nodes]}
    for i, device in enumerate(devices):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"rmq-pv{i}"},
                "spec": {
                    "capacity": {"storage": VOLUME_SIZE},
                    # ReadWriteMany too, as a network file system offers it (Spark's driver and executors share a
                    # checkpoint): sound here only because every node is this one kernel, which mounts one device
                    # at several places as one file system.
                    "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": EXPANDABLE_CLASS,
                    "volumeMode": "Filesystem",
                    "local": {"path": device, "fsType": VOLUME_FS},
                    "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [anywhere]}]}},
                },
            }
        )
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def attach_volumes(state: Path) -> list[dict[str, str]]:
    """`VOLUMES` sparse files under the state dir, each on a loop device; recorded at once, so that `down` detaches
    them whatever fails later."""
    volumes = state / "volumes"
    volumes.mkdir(parents=True, exist_ok=True)
    loops: list[dict[str, str]] = []
    record = node._read_record() or {}  # type: ignore[attr-defined]
    for i in range(VOLUMES):
        path = volumes / f"pv{i}.img"
        with path.open("wb") as f:
            f.truncate(VOLUME_BYTES)
        device = _run("losetup", "--find", "--show", str(path)).stdout.strip()
        loops.append({"file": str(path), "device": device})
        record["loops"] = loops
        node._write_record(record)  # type: ignore[attr-defined]
    return loops


def detach_volumes(record: dict) -> None:
    """Detach the loop devices `attach_volumes` recorded, each only while it is still backed by its file."""
    for loop in record.get("loops", []):
        name = Path(loop["device"]).name
        with contextlib.suppress(OSError):
            if (Path("/sys/block") / name / "loop" / "backing_file").read_text().strip() == loop["file"]:
                _run("losetup", "-d", loop["device"], check=False)


def _start_node(state: Path, n: NodePlan, server: str, bin_dir: Path, seed: Path | None, timeout: float) -> None:
    """``seed``: the image seed its containerd root becomes a copy of; None: a node powered on again, which keeps
    the root (and every other directory) it had."""
    nd = node_dir(state, n)
    for d in ("containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "logs"):
        (nd / d).mkdir(parents=True, exist_ok=True)
    pki = state / "pki"
    harness._write_kubeconfig(nd / "kubelet.kubeconfig", server, pki, f"kubelet-{n.name}", f"kubelet-{n.name}")  # type: ignore[attr-defined]
    harness._write_kubeconfig(nd / "kube-proxy.kubeconfig", server, pki, "kube-proxy", "kube-proxy")  # type: ignore[attr-defined]
    harness._write_kubeconfig(nd / "kube-router.kubeconfig", server, pki, "kube-router", "kube-router")  # type: ignore[attr-defined]
    (nd / "resolv.conf").write_text("# no upstream DNS: the node never queries a server off this machine\n")
    (nd / "containerd" / "config.toml").write_text(
        node._containerd_config(  # type: ignore[attr-defined]
            nd,
            runc_root=nd / "containerd" / "runc",
            base_spec=node.base_runtime_spec(nd),  # type: ignore[attr-defined]
        )
    )
    (nd / "cni" / "net.d" / "10-rmq-node.conflist").write_text(
        node._cni_config(nd, bridge="cni0", subnet=n.pod_cidr, gateway=n.gateway)  # type: ignore[attr-defined]
    )
    (nd / "kubelet-config.json").write_text(
        node._kubelet_config(  # type: ignore[attr-defined]
            nd,
            state,
            NODE_PORTS["kubelet-healthz"],
            NODE_PORTS["kubelet"],
            address=n.ip,
            healthz_address=n.ip,
            pod_cidr=n.pod_cidr,
            cgroup_root=n.cgroup,
        )
    )
    (nd / "kube-proxy-config.json").write_text(
        node._kube_proxy_config(  # type: ignore[attr-defined]
            nd,
            NODE_PORTS["proxy-healthz"],
            NODE_PORTS["proxy-metrics"],
            name=n.name,
            address=n.ip,
            local_address=n.ip,
            cluster_cidr=NETWORK,
        )
    )
    _make_cgroups(n)
    if seed is not None:
        plant_seed(seed, nd / "containerd" / "root")

    def spawn(name: str, argv: list[str]) -> None:
        harness._spawn(nd, name, in_netns(n, argv))  # type: ignore[attr-defined]

    def wait(what: str, check: Callable[[], tuple[bool, str]], component: str, secs: float = timeout) -> None:
        harness._wait(f"{n.name}: {what}", check, secs, nd, component)  # type: ignore[attr-defined]

    http_ok = node.http_ok  # type: ignore[attr-defined]

    spawn("containerd", ["containerd", "--config", str(nd / "containerd" / "config.toml")])
    sock = nd / "containerd" / "containerd.sock"
    wait(
        "containerd's socket",
        lambda: (ctr(state, n, "version", timeout=5).returncode == 0 if sock.exists() else False, ""),
        "containerd",
        60,
    )
    spawn(
        "kubelet",
        [
            str(bin_dir / "kubelet"),
            f"--config={nd / 'kubelet-config.json'}",
            f"--kubeconfig={nd / 'kubelet.kubeconfig'}",
            f"--hostname-override={n.name}",
            f"--node-ip={n.ip}",
            f"--node-labels=topology.kubernetes.io/zone={n.zone}",
            f"--root-dir={nd / 'kubelet'}",
            f"--cert-dir={nd / 'kubelet' / 'pki'}",
            "--v=1",
        ],
    )
    wait("kubelet /healthz", http_ok(f"http://{n.ip}:{NODE_PORTS['kubelet-healthz']}/healthz"), "kubelet")
    spawn("kube-proxy", [str(bin_dir / "kube-proxy"), f"--config={nd / 'kube-proxy-config.json'}", "--v=1"])
    wait("kube-proxy /healthz", http_ok(f"http://{n.ip}:{NODE_PORTS['proxy-healthz']}/healthz"), "kube-proxy")
    spawn("kube-router", kube_router_argv(bin_dir / "kube-router", nd, n))
    wait("kube-router /healthz", http_ok(f"http://{n.ip}:{NODE_PORTS['router-health']}/healthz"), "kube-router")
    _say(f"{n.name}: containerd, kubelet, kube-proxy and kube-router up at {n.ip} ({n.zone}, pods {n.pod_cidr})")


# ---------------------------------------------------------------- a node lost and back


def _node_named(state: Path, name: str) -> NodePlan:
    record = node._read_record() or {}  # type: ignore[attr-defined]
    if not record.get("cluster") or Path(record.get("state_dir", "")) != state:
        raise HarnessError(f"no multi-node cluster runs from {state} (`make k8s-cluster-up` starts one)")
    nodes = _record_nodes(record)
    for n in nodes:
        if n.name == name:
            return n
    raise HarnessError(f"no node {name!r} in this cluster; its nodes: {', '.join(n.name for n in nodes)}")


def daemon_pid(state_dir: Path, name: str, daemon: str) -> int:
    """The PID of one daemon of node ``name`` (``kubelet``, ``containerd``, ...), for a test that stops it."""
    if daemon not in DAEMONS:
        raise HarnessError(f"no daemon {daemon!r} on a node; its daemons: {', '.join(DAEMONS)}")
    state = state_dir.resolve()
    pid = harness._read_pid(node_dir(state, _node_named(state, name)), daemon)  # type: ignore[attr-defined]
    if not pid:
        raise HarnessError(f"{name}: {daemon} has no PID file: is the node up?")
    return int(pid)


def pod_log(state_dir: Path, name: str, namespace: str, pod: str, container: str) -> str:
    """What a container of a pod on node ``name`` wrote, read from the node's pod-logs directory (needs no kubelet:
    a test that stopped it can still read), every restart of the container in order."""
    logs = node_dir(state_dir.resolve(), _node_named(state_dir.resolve(), name)) / "pod-logs"
    files = sorted(logs.glob(f"{namespace}_{pod}_*/{container}/*.log"), key=lambda p: p.stat().st_mtime)
    return "".join(f.read_text(errors="replace") for f in files)


def power_off(state_dir: Path, name: str) -> None:
    """Node ``name`` as a machine that lost its power: its link cut first (no last word leaves it), then every
    process of it killed at once (kube-router, kube-proxy, the kubelet, every pod and shim, containerd; the pods'
    cgroups removed). What it has on disk stays, as a disk does: containerd's root, the kubelet's directory, the
    pods' volumes. The API server learns of it only by the kubelet's silence (the node controller: `Unknown`)."""
    state = state_dir.resolve()
    n = _node_named(state, name)
    _run("ip", "link", "set", n.veth, "down")
    _stop_node(state, n)
    _say(f"{n.name}: powered off (link down, every process killed)")


def power_on(state_dir: Path, name: str, timeout: float = 300.0) -> None:
    """Node ``name`` back after `power_off`: its link up and its daemons started on what they left on disk (no
    image seed planted again); the kubelet then starts the pods the API server still binds to it."""
    state = state_dir.resolve()
    n = _node_named(state, name)
    server = json.loads((state / "kubeconfig").read_text())["clusters"][0]["cluster"]["server"]  # harness writes JSON
    sockets = node_dir(state, n) / "containerd"
    for stale in ("containerd.sock", "containerd.sock.ttrpc"):  # a machine's /run does not survive its power
        (sockets / stale).unlink(missing_ok=True)
    _run("ip", "link", "set", n.veth, "up")
    _start_node(state, n, server, build_tools.bin_dir(), None, timeout)


# ---------------------------------------------------------------- check

# Run by python3 inside a node's namespace: one DNS A query over UDP (stdlib only; no image, no pod needed),
# printing the addresses of the answer, one per line.
_DNS_QUERY = r"""
import socket, struct, sys
server, name = sys.argv[1], sys.argv[2]
query = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
query += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(3)
sock.sendto(query, (server, 53))
data = sock.recv(4096)
answers = struct.unpack(">H", data[6:8])[0]
at = 12
while data[at]:
    at += data[at] + 1
at += 5
for _ in range(answers):
    at += 2 if data[at] & 0xC0 == 0xC0 else len(data[at:].split(b"\0", 1)[0]) + 1
    kind, _, _, length = struct.unpack(">HHIH", data[at:at + 10])
    at += 10
    if kind == 1:
        print(socket.inet_ntoa(data[at:at + length]))
    at += length
"""


def check(state_dir: Path) -> list[str]:
    """What a user of the cluster relies on, from inside every node's namespace: the `kubernetes` Service's
    name resolves through the cluster DNS (kube-proxy's rules there, CoreDNS on whichever node it runs: traffic
    between nodes) and its address takes a TCP connection (the API server behind it). Returns the failures."""
    record = node._read_record() or {}  # type: ignore[attr-defined]
    failures: list[str] = []
    for n in _record_nodes(record):
        name = "kubernetes.default.svc.cluster.local"
        # Right after `up` a node's kube-proxy may not have CoreDNS's endpoint yet (it rejects the query): retried.
        deadline = time.monotonic() + 30
        while True:
            res = _run(*in_netns(n, ["python3", "-c", _DNS_QUERY, node.CLUSTER_DNS, name]), check=False, timeout=30)  # type: ignore[attr-defined]
            if (res.returncode == 0 and res.stdout.split()) or time.monotonic() > deadline:
                break
            time.sleep(1)
        addresses = res.stdout.split()
        if res.returncode != 0 or not addresses:
            failures.append(f"{n.name}: {name} did not resolve through {node.CLUSTER_DNS}: {res.stderr.strip()[-300:]}")  # type: ignore[attr-defined]
            continue
        connect = "import socket, sys; socket.create_connection((sys.argv[1], 443), timeout=3).close()"
        res = _run(*in_netns(n, ["python3", "-c", connect, addresses[0]]), check=False, timeout=30)
        if res.returncode != 0:
            failures.append(f"{n.name}: no TCP connection to {addresses[0]}:443: {res.stderr.strip()[-300:]}")
        else:
            _say(f"{n.name}: {name} -> {addresses[0]} through {node.CLUSTER_DNS}, and it takes a connection")  # type: ignore[attr-defined]
    return failures


def down(state_dir: Path, *, quiet: bool = False) -> None:
    state = state_dir.resolve()
    record = node._read_record() or {}  # type: ignore[attr-defined]
    if not record.get("cluster"):
        node.down(state, quiet=quiet)  # type: ignore[attr-defined]  # a one-node cluster, or nothing
        return
    if Path(record.get("state_dir", "")) != state:
        raise HarnessError(f"the cluster on this machine runs from {record['state_dir']}, not {state}")
    nodes = _record_nodes(record)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        for future in [pool.submit(_stop_node, state, n) for n in nodes]:
            future.result()
    harness._stop_pid(harness._read_pid(state / "scheduler", "kube-scheduler"), state)  # type: ignore[attr-defined]
    harness._stop_pid(harness._read_pid(state, RESIZER), state)  # type: ignore[attr-defined]
    harness._stop_all(state)  # type: ignore[attr-defined]
    node.release_mounts(state, record)  # type: ignore[attr-defined]
    detach_volumes(record)
    _teardown_network(nodes)
    for key, value in record.get("sysctls", {}).items():
        if value is not None and node._sysctl_read(key) != value:  # type: ignore[attr-defined]
            node._sysctl_write(key, value)  # type: ignore[attr-defined]
    node.release_host_paths(record)  # type: ignore[attr-defined]
    harness.down(state, quiet=True)  # type: ignore[attr-defined]
    with contextlib.suppress(OSError):
        node.registry_file().unlink()  # type: ignore[attr-defined]
    if not quiet:
        _say(f"cluster stopped; removed {state}, {len(nodes)} node namespaces, bridge {BRIDGE}, the guard table")


def status(state_dir: Path) -> int:
    state = state_dir.resolve()
    record = node._read_record() or {}  # type: ignore[attr-defined]
    rc = harness.status(state)  # type: ignore[attr-defined]
    healthy = rc == 0
    for n in _record_nodes(record):
        nd = node_dir(state, n)
        for c in DAEMONS:
            pid = harness._read_pid(nd, c)  # type: ignore[attr-defined]
            alive = harness._is_ours(pid, state)  # type: ignore[attr-defined]
            healthy &= alive
            print(f"{n.name:8} {c:12} pid {pid:<8} {'running' if alive else 'NOT RUNNING'}")
    return 0 if healthy else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("up", "down", "status", "import", "check", "deps", "power-off", "power-on"))
    ap.add_argument("archives", nargs="*", type=Path)
    ap.add_argument("--node", help="power-off, power-on: the node (rmq-n1, ...)")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--image", dest="images", action="append", type=Path, default=[], help="an archive every node has")
    ap.add_argument("--state-dir", type=Path, default=Path(".k8s"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "up":
            up(args.state_dir, args.nodes, build=not args.no_build, timeout=args.timeout, images=args.images)
        elif args.cmd == "down":
            down(args.state_dir)
        elif args.cmd == "status":
            return status(args.state_dir)
        elif args.cmd == "deps":
            node.deps()  # type: ignore[attr-defined]
        elif args.cmd in ("power-off", "power-on"):
            if not args.node:
                raise HarnessError(f"{args.cmd} needs --node NAME (rmq-n1, rmq-n2, ...)")
            if args.cmd == "power-off":
                power_off(args.state_dir, args.node)
            else:
                power_on(args.state_dir, args.node, timeout=args.timeout)
        elif args.cmd == "check":
            failures = check(args.state_dir)
            for failure in failures:
                print(f"error: {failure}", file=sys.stderr)
            return 1 if failures else 0
        elif args.cmd == "import":
            if not args.archives:
                raise HarnessError("import needs at least one image archive (OCI or docker-archive .tar)")
            import_images(args.state_dir, _record_nodes(node._read_record()), args.archives)  # type: ignore[attr-defined]
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted; `python3 k8s/cluster.py down` stops what was started", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

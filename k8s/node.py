#!/usr/bin/env python3
"""A real one-node Kubernetes cluster on this machine, without Docker (docs/node.md).

Python 3.11 stdlib only. On top of the control plane of ``k8s/harness.py`` (etcd, kube-apiserver,
kube-controller-manager) it starts kube-scheduler, containerd (Debian's, with runc) with our own sandbox
image, the kubelet (cgroup v1 allowed: ``failCgroupV1: false``), bridge + host-local CNI (Debian's
containernetworking-plugins), kube-proxy (nftables mode) and CoreDNS as a Deployment, all built by
``k8s/tools/build.py`` except the Debian packages.

    node.py up     [--state-dir .k8s] [--no-build]
    node.py down   [--state-dir .k8s]
    node.py status [--state-dir .k8s]
    node.py import IMAGE.tar [...] [--state-dir .k8s]    # into containerd's k8s.io namespace
    node.py deps                                          # apt-get install the Debian packages if missing

Networking touches only what it creates: the bridge ``rmqk8s0`` holding the node IP 10.213.0.1/24 (pods get
10.213.0.2-254), the nftables tables ``ip kube-proxy``/``ip6 kube-proxy`` (kube-proxy) and ``inet rmq-node``
(ours: drops anything from the pod network that would leave through another interface, so no pod ever
sends traffic off this machine), the chains the kubelet adds (KUBE-*), and the sysctls the kubelet and the
node need. ``down`` removes all of it and restores every sysctl it changed. One node per machine.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import gzip
import hashlib
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE_NAME = "rmq-node"
BRIDGE = "rmqk8s0"
POD_CIDR = "10.213.0.0/24"
NODE_IP = "10.213.0.1"
CLUSTER_DNS = "10.0.0.10"
GUARD_TABLE = "rmq-node"  # nft table family inet
PERSISTENT_VOLUMES = 12
NODE_COMPONENTS = ("containerd", "kubelet", "kube-scheduler", "kube-proxy")  # start order; stop in reverse
DEBIAN_PACKAGES = {  # command -> Debian package
    "containerd": "containerd",
    "runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "nft": "nftables",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "ip": "iproute2",
    "ipset": "ipset",  # kube-router's NetworkPolicy firewall on the multi-node cluster (k8s/cluster.py)
    "/usr/sbin/xfs_growfs": "xfsprogs",  # the multi-node cluster's volumes: formatted and grown online by the kubelet
}
SANDBOX_IMAGE = "localhost/rocketmq-operator/pause:1.0"
COREDNS_IMAGE_REPO = "localhost/rocketmq-operator/coredns"
# Sysctls the kubelet sets (protectKernelDefaults: false) or the node needs; saved at `up`, restored at `down`.
SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/ipv4/conf/all/route_localnet",
)
CONTAINER_ENV = "ROCKETMQ_OPERATOR_NODE_CONTAINER_ENV"
"""Environment variables every container on the node starts with (shell words, each NAME=value), set through
containerd's base runtime spec: what a test suite wants of every pod without touching the manifests under test.
The e2e tests set `JAVA_TOOL_OPTIONS` to the JIT flags the local tests give every RocketMQ JVM
(tests/e2e/e2e_node.py, tests/jvm_flags.py). Unset: containerd's own default spec, unchanged."""
# Host paths the kubelet/containerd create whatever their configuration says; removed at `down` if they
# did not exist before `up`.
HOST_PATHS = ("/run/netns", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd")


def _load(name: str, path: Path) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


harness = sys.modules.get("rocketmq_operator_k8s_harness") or _load(
    "rocketmq_operator_k8s_harness", HERE / "harness.py"
)
build_tools = harness.build_tools  # type: ignore[attr-defined]
HarnessError = harness.HarnessError  # type: ignore[attr-defined]


def _say(msg: str) -> None:
    print(msg, flush=True)


def _run(
    *argv: str, check: bool = True, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(argv), capture_output=True, text=True, input=input, timeout=timeout)
    if check and res.returncode != 0:
        raise HarnessError(
            f"{' '.join(argv)} failed (exit {res.returncode}): {(res.stderr or res.stdout).strip()[:500]}"
        )
    return res


def registry_file() -> Path:
    return build_tools.cache_root() / "k8s" / "node.json"


def node_dir(state: Path) -> Path:
    return state / "node"


# ---------------------------------------------------------------- prerequisites


def missing_deps() -> list[str]:
    out = []
    for cmd, pkg in DEBIAN_PACKAGES.items():
        if not (Path(cmd).exists() if cmd.startswith("/") else shutil.which(cmd)):
            out.append(pkg)
    return sorted(set(out))


def deps() -> None:
    """Install the Debian packages the node needs (root; apt-get), only those missing."""
    need = missing_deps()
    if not need:
        _say("node packages present: " + ", ".join(sorted(set(DEBIAN_PACKAGES.values()))))
        return
    if os.geteuid() != 0:
        raise HarnessError(f"missing Debian packages {' '.join(need)}; as root: apt-get install {' '.join(need)}")
    _say(f"apt-get install {' '.join(need)}")
    apt_install(need)


APT_LOCK: Path = build_tools.APT_LOCK  # one lock for every apt-get of the project (the Makefile takes it too)


def apt_install(packages: Sequence[str]) -> None:
    """`apt-get update` and `install` of ``packages``, one caller at a time: `make test` installs the Python side
    and the cluster's parts at once, and apt refuses a second apt-get while one holds its locks."""
    import fcntl

    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    with open(APT_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env)


def _preflight() -> None:
    if os.geteuid() != 0:
        raise HarnessError("the node needs root (containerd, kubelet, network setup); run as root")
    need = missing_deps()
    if need:
        raise HarnessError(f"missing Debian packages: {' '.join(need)} (run `make k8s-node-deps`)")
    if not Path("/proc/sys/net/bridge/bridge-nf-call-iptables").exists():
        raise HarnessError("the kernel has no br_netfilter (/proc/sys/net/bridge missing): Services cannot work")


# ---------------------------------------------------------------- images (OCI archives, no builder needed)


def _tar_bytes(files: dict[str, tuple[bytes, int]]) -> bytes:
    """A deterministic tar of ``{path: (content, mode)}`` (parent dirs added)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(d) for p in files for d in Path(p).parents if str(d) != "."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)
        for path in sorted(files):
            data, mode = files[path]
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def oci_archive(
    out: Path, name: str, files: dict[str, tuple[bytes, int]], entrypoint: list[str], user: str = ""
) -> None:
    """Write a one-layer OCI image archive ``out`` named ``name`` (what `ctr images import` reads)."""
    layer = _tar_bytes(files)
    layer_gz = gzip.compress(layer, mtime=0)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": entrypoint, **({"User": user} if user else {})},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    blobs: dict[str, bytes] = {}

    def add(data: bytes) -> dict[str, object]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    cfg_desc = add(json.dumps(config, sort_keys=True).encode())
    layer_desc = add(layer_gz)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **cfg_desc},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer_desc}],
    }
    man_desc = add(json.dumps(manifest, sort_keys=True).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **man_desc,
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1],
                },
            }
        ],
    }
    files_out = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True).encode(),
        **{f"blobs/sha256/{d.split(':', 1)[1]}": b for d, b in blobs.items()},
    }
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(_tar_bytes({p: (b, 0o644) for p, b in files_out.items()}))
    os.replace(tmp, out)


def node_images(bin_dir: Path) -> dict[str, Path]:
    """Build (if stale) the sandbox and CoreDNS image archives from the built binaries; name -> archive."""
    versions = build_tools.Versions.load()
    out_dir = bin_dir.parent / "images"
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = {
        SANDBOX_IMAGE: ("pause", ["/pause"], ""),
        f"{COREDNS_IMAGE_REPO}:{versions.coredns.lstrip('v')}": ("coredns", ["/coredns"], "65532"),
    }
    result = {}
    for name, (binary, entry, user) in specs.items():
        src = bin_dir / binary
        key = hashlib.sha256(src.read_bytes() + name.encode()).hexdigest()[:16]
        archive = out_dir / f"{binary}-{key}.oci.tar"
        if not archive.is_file():
            for old in out_dir.glob(f"{binary}-*.oci.tar"):
                old.unlink()
            oci_archive(archive, name, {binary: (src.read_bytes(), 0o755)}, entry, user)
        result[name] = archive
    return result


# ---------------------------------------------------------------- config files


def base_runtime_spec(nd: Path, environ: dict[str, str] | None = None) -> Path | None:
    """containerd's default container spec (`ctr oci spec`, what the CRI plugin starts from without one) with the
    variables of `$ROCKETMQ_OPERATOR_NODE_CONTAINER_ENV` appended to its environment, written under ``nd``; None
    when that is unset. The CRI plugin keeps the base spec's variables and adds the image's and the pod's (a
    pod's own value of the same name wins)."""
    words = shlex.split((os.environ if environ is None else environ).get(CONTAINER_ENV, ""))
    bad = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
    if bad:
        raise HarnessError(f"{CONTAINER_ENV}: {bad[0]!r} is not NAME=value; set it to NAME=value words")
    if not words:
        return None
    res = subprocess.run(["ctr", "oci", "spec"], capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise HarnessError(f"ctr oci spec failed: {res.stderr.strip()}")
    spec = json.loads(res.stdout)
    spec["process"]["env"] = [*spec["process"].get("env", []), *words]
    path = nd / "containerd" / "base-runtime-spec.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, indent=2))
    return path


def _containerd_config(nd: Path, runc_root: Path | None = None, base_spec: Path | None = None) -> str:
    """``runc_root``: runc's state directory (default: containerd's shared /run/containerd/runc); a node of a
    multi-node cluster keeps its own, so that no two containerds share one. ``base_spec``: the base runtime spec
    of every container (`base_runtime_spec`), or containerd's default."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    root_line = f'\n        Root = "{runc_root}"' if runc_root else ""
    base_line = f'\n      base_runtime_spec = "{base_spec}"' if base_spec else ""
    return f"""version = 2
root = "{nd / "containerd" / "root"}"
state = "{nd / "containerd" / "state"}"
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = "{nd / "containerd" / "containerd.sock"}"

[ttrpc]
  address = "{nd / "containerd" / "containerd.sock.ttrpc"}"

[debug]
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{nd / "containerd" / "opt"}"

[{cri}]
  sandbox_image = "{SANDBOX_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # This machine gives root no CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below containerd's own
  # (the kubelet asks -998 for sandboxes; runc init then fails with "can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"{base_line}
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{shutil.which("runc") or "runc"}"{root_line}
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{nd / "cni" / "net.d"}"
    max_conf_num = 1
"""


def _cni_config(nd: Path, bridge: str = BRIDGE, subnet: str = POD_CIDR, gateway: str = NODE_IP) -> str:
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": "rmq-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": bridge,
                    "isGateway": True,
                    "ipMasq": False,  # nothing leaves this machine; see the guard table
                    "hairpinMode": True,  # a pod reaching itself through its Service
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(nd / "cni" / "ipam"),
                    },
                }
            ],
        },
        indent=2,
    )


def _kubelet_config(
    nd: Path,
    state: Path,
    healthz_port: int,
    kubelet_port: int,
    *,
    address: str = NODE_IP,
    healthz_address: str = "127.0.0.1",
    pod_cidr: str = POD_CIDR,
    cgroup_root: str | None = None,
) -> str:
    """``cgroup_root``: where the kubelet puts ``kubepods`` (default the hierarchy's root); each node of a multi-node
    cluster has its own."""
    cfg: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This host runs cgroup v1 (hybrid); kubelet >= 1.35 refuses it unless told otherwise.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{nd / 'containerd' / 'containerd.sock'}",
        "address": address,
        "port": kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": healthz_address,
        "healthzPort": healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(state / "pki" / "ca.crt")},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": "cluster.local",
        "clusterDNS": [CLUSTER_DNS],
        "resolvConf": str(nd / "resolv.conf"),
        "podCIDR": pod_cidr,
        "failSwapOn": False,
        "protectKernelDefaults": False,
        "serializeImagePulls": False,
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 99,
        "imageGCLowThresholdPercent": 98,
        "volumePluginDir": str(nd / "kubelet" / "volume-plugins"),
        "podLogsDir": str(nd / "pod-logs"),
        "staticPodPath": "",
        "registerNode": True,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "shutdownGracePeriod": "0s",
        # How often the kubelet syncs each running pod (default 1 min): also when it grows a mounted volume's file
        # system after the volume grew (tests/e2e/test_storage.py waited 71 s on the default); pod syncs are cheap.
        "syncFrequency": "10s",
        "localStorageCapacityIsolation": True,
        # A container restarted after a crash waits at most the kubelet's first back-off (10 s), never the
        # escalation to 5 min that a container killed again within 10 minutes gets by default: a chaos campaign
        # kills the same three brokers every few faults, and the escalated waits paced a 200-fault campaign on
        # Kubernetes at minutes a fault (docs/chaos.md). What the operator and the clients do during a fault is
        # the same; only the killed replica's return is not delayed further. (KubeletCrashLoopBackOffMax, beta
        # and on by default since 1.35; docs/node.md.)
        "crashLoopBackOff": {"maxContainerRestartPeriod": "10s"},
    }
    if cgroup_root:
        cfg["cgroupRoot"] = cgroup_root
    return json.dumps(cfg, indent=2)


def _kube_proxy_config(
    nd: Path,
    healthz_port: int,
    metrics_port: int,
    *,
    name: str = NODE_NAME,
    address: str = NODE_IP,
    local_address: str = "127.0.0.1",
    cluster_cidr: str = POD_CIDR,
) -> str:
    cfg = {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(nd / "kube-proxy.kubeconfig")},
        "hostnameOverride": name,
        "bindAddress": address,
        "healthzBindAddress": f"{local_address}:{healthz_port}",
        "metricsBindAddress": f"{local_address}:{metrics_port}",
        "clusterCIDR": cluster_cidr,
        "nodePortAddresses": [f"{address}/32"],
        # 0: leave the host's conntrack sysctls alone.
        "conntrack": {"maxPerCore": 0, "min": 0, "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
    }
    return json.dumps(cfg, indent=2)


def _coredns_manifest(image: str) -> str:
    corefile = (
        ".:1053 {\n    errors\n    health :8080\n    ready :8181\n"
        "    kubernetes cluster.local in-addr.arpa ip6.arpa {\n        pods insecure\n"
        "        fallthrough in-addr.arpa ip6.arpa\n    }\n    cache 30\n    loadbalance\n}\n"
    )  # no `forward`: nothing is ever asked of a DNS server outside this node
    labels = {"k8s-app": "kube-dns"}
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "coredns", "namespace": "kube-system"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "system:coredns"},
            "rules": [
                {"apiGroups": [""], "resources": ["services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:coredns"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:coredns"},
            "subjects": [{"kind": "ServiceAccount", "name": "coredns", "namespace": "kube-system"}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "coredns", "namespace": "kube-system"},
            "data": {"Corefile": corefile},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "coredns", "namespace": "kube-system", "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "priorityClassName": "system-cluster-critical",
                        "dnsPolicy": "Default",
                        "containers": [
                            {
                                "name": "coredns",
                                "image": image,
                                "imagePullPolicy": "Never",
                                "args": ["-conf", "/etc/coredns/Corefile"],
                                "ports": [
                                    {"name": "dns", "containerPort": 1053, "protocol": "UDP"},
                                    {"name": "dns-tcp", "containerPort": 1053, "protocol": "TCP"},
                                ],
                                # Unprivileged port: an added NET_BIND_SERVICE is not effective for a non-root user
                                # without file capabilities, which our one-layer image does not set.
                                "securityContext": {
                                    "capabilities": {"drop": ["ALL"]},
                                    "readOnlyRootFilesystem": True,
                                    "allowPrivilegeEscalation": False,
                                },
                                "resources": {
                                    "requests": {"cpu": "50m", "memory": "40Mi"},
                                    "limits": {"memory": "170Mi"},
                                },
                                "livenessProbe": {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10},
                                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 2},
                                "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns", "readOnly": True}],
                            }
                        ],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
            "spec": {
                "selector": labels,
                "clusterIP": CLUSTER_DNS,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 1053},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 1053},
                ],
            },
        },
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


def _persistent_volumes(nd: Path) -> str:
    """Static hostPath PVs without a class (PVCs without a class bind to them), world-writable directories so
    that any pod user can write (fsGroup does not apply to hostPath). Removed with the state dir."""
    items = []
    for i in range(PERSISTENT_VOLUMES):
        path = nd / "volumes" / f"pv{i}"
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"{NODE_NAME}-pv{i}", "labels": {"rocketmq-operator.dev/node": NODE_NAME}},
                "spec": {
                    "capacity": {"storage": "100Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "hostPath": {"path": str(path), "type": "Directory"},
                },
            }
        )
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


# ---------------------------------------------------------------- host network and sysctls


def _sysctl_read(key: str) -> str | None:
    try:
        return Path(f"/proc/sys/{key}").read_text().strip()
    except OSError:
        return None


def _sysctl_write(key: str, value: str) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/sys/{key}").write_text(value + "\n")


def _nft_tables() -> list[str]:
    res = _run("nft", "list", "tables", check=False)
    return [line.removeprefix("table ").strip() for line in res.stdout.splitlines() if line.startswith("table ")]


def _setup_network() -> None:
    if _run("ip", "link", "show", BRIDGE, check=False).returncode != 0:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "replace", f"{NODE_IP}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    _sysctl_write("net/ipv4/ip_forward", "1")
    _sysctl_write("net/bridge/bridge-nf-call-iptables", "1")
    _sysctl_write("net/bridge/bridge-nf-call-ip6tables", "1")
    # Forwarding is on while the node runs: make sure the pod network can talk only to itself and the node.
    rules = f"""table inet {GUARD_TABLE} {{
  chain forward {{
    type filter hook forward priority -10; policy accept;
    ip saddr {POD_CIDR} oifname != "{BRIDGE}" drop
    ip daddr {POD_CIDR} iifname != "{BRIDGE}" drop
  }}
}}
"""
    _run("nft", "delete", "table", "inet", GUARD_TABLE, check=False)
    _run("nft", "-f", "-", input=rules)


def _iptables_cleanup() -> None:
    """Remove the chains the kubelet/kube-proxy/CNI add (KUBE-*, CNI-*) and every rule that jumps to them."""
    for tool in ("iptables", "ip6tables"):
        if not shutil.which(tool):
            continue
        for table in ("filter", "nat", "mangle"):
            res = _run(tool, "-w", "-t", table, "-S", check=False)
            if res.returncode != 0:
                continue
            ours = re.compile(r"^(KUBE-|CNI-)")
            chains = [
                ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("-N ") and ours.match(ln.split()[1])
            ]
            for ln in res.stdout.splitlines():
                parts = ln.split()
                if parts[:1] == ["-A"] and not ours.match(parts[1]) and any(ours.match(p) for p in parts[2:]):
                    _run(tool, "-w", "-t", table, "-D", *parts[1:], check=False)
            for chain in chains:
                _run(tool, "-w", "-t", table, "-F", chain, check=False)
            for chain in chains:
                _run(tool, "-w", "-t", table, "-X", chain, check=False)


def _teardown_network(record: dict) -> None:
    for table in ("ip kube-proxy", "ip6 kube-proxy", f"inet {GUARD_TABLE}"):
        _run("nft", "delete", "table", *table.split(), check=False)
    _iptables_cleanup()
    before = set(record.get("nft_tables_before", []))
    for table in _nft_tables():
        if table in before:
            continue
        listing = _run("nft", "list", "table", *table.split(), check=False).stdout
        body = [ln.strip() for ln in listing.splitlines()]
        has_rules = any(
            ln and not ln.startswith(("table", "chain", "type ", "}", "policy")) and not ln.endswith("{") for ln in body
        )
        if not has_rules:  # an empty table iptables-nft created for the kubelet's chains
            _run("nft", "delete", "table", *table.split(), check=False)
    if _run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        _run("ip", "link", "del", BRIDGE, check=False)
    for key, value in record.get("sysctls", {}).items():
        if value is not None and _sysctl_read(key) != value:
            _sysctl_write(key, value)


# ---------------------------------------------------------------- processes, mounts, cgroups


def _mounts_under(prefixes: list[str]) -> list[str]:
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if any(point == p or point.startswith(p.rstrip("/") + "/") for p in prefixes):
                found.append(point)
    return found


def _unmount_all(prefixes: list[str]) -> None:
    for _ in range(5):
        points = _mounts_under(prefixes)
        if not points:
            return
        for point in sorted(set(points), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True)


def _cgroup_dirs(top: str = "kubepods") -> list[Path]:
    """Every directory of the cgroup tree ``top`` (default the kubelet's kubepods, cgroupfs driver), deepest first,
    over all hierarchies. A node of k8s/cluster.py passes its own cgroup root."""
    dirs: list[Path] = []
    root = Path("/sys/fs/cgroup")
    for hierarchy in [p for p in root.iterdir() if p.is_dir()] + [root]:
        path = hierarchy / top
        if path.is_dir():
            dirs += [Path(d) for d, _, _ in os.walk(path)]
    return sorted(set(dirs), key=lambda p: len(p.parts), reverse=True)


def _pod_pids(top: str = "kubepods") -> set[int]:
    """Every process in a kubepods cgroup under ``top``."""
    pids: set[int] = set()
    for d in _cgroup_dirs(top):
        if "kubepods" in d.parts:
            with contextlib.suppress(OSError):
                pids |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
    return pids


def _node_strays(state: Path) -> list[int]:
    names = {*NODE_COMPONENTS, "containerd-shim-runc-v2", "containerd-shim", "ctr"}  # ctr: background imports
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            args = harness._cmdline(int(entry.name))  # type: ignore[attr-defined]
            if args and Path(args[0]).name in names and harness._names_state(args, state):  # type: ignore[attr-defined]
                out.append(int(entry.name))
    return out


def _kill_pods_and_shims(
    state: Path,
    pod_pids: Callable[[], set[int]] | None = None,
    cgroup_dirs: Callable[[], list[Path]] | None = None,
) -> None:
    """SIGKILL every pod process (``pod_pids``: default this node's kubepods cgroups) and every shim or import
    naming ``state``, wait for them to go, then remove the pods' cgroups (``cgroup_dirs``, deepest first). A node
    of k8s/cluster.py passes its own cgroup tree."""
    pod_pids = pod_pids or _pod_pids
    cgroup_dirs = cgroup_dirs or _cgroup_dirs
    for _ in range(3):
        pids = pod_pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not pids:
            break
        time.sleep(0.5)
    for pid in _node_strays(state):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (pod_pids() or _node_strays(state)) and time.monotonic() < deadline:
        time.sleep(0.2)
    for d in cgroup_dirs():
        with contextlib.suppress(OSError):
            d.rmdir()


def _stop_node_components(state: Path) -> None:
    nd = node_dir(state)
    for name in ("kube-proxy", "kube-scheduler", "kubelet"):
        harness._stop_pid(harness._read_pid(nd, name), state)  # type: ignore[attr-defined]
    _kill_pods_and_shims(state)  # containers die before containerd, so their shims and mounts can go
    harness._stop_pid(harness._read_pid(nd, "containerd"), state)  # type: ignore[attr-defined]
    _kill_pods_and_shims(state)


# ---------------------------------------------------------------- up / down


def _write_record(record: dict) -> None:
    path = registry_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")


def _read_record() -> dict | None:
    try:
        return json.loads(registry_file().read_text())
    except (OSError, ValueError):
        return None


def running_node() -> dict | None:
    """The record of the node up on this machine, or None. The record lives in the cache, which outlives the
    processes: a run killed with its machine, or a cache restored on a fresh CI machine, leaves a record whose
    processes are all gone. Such a record is stale (`up` clears it and restores what it changed), not a node."""
    record = _read_record()
    if not record:
        return None
    state = Path(record.get("state_dir", ""))
    if _node_strays(state) or harness._strays(state):  # type: ignore[attr-defined]
        return record
    return None


def _node_healthy(state: Path) -> bool:
    nd = node_dir(state)
    cluster = harness.load(state)  # type: ignore[attr-defined]
    if cluster is None or not harness._healthy(cluster):  # type: ignore[attr-defined]
        return False
    return all(harness._is_ours(harness._read_pid(nd, c), state) for c in NODE_COMPONENTS)  # type: ignore[attr-defined]


def ctr_at(sock: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``ctr`` against the containerd at ``sock``, in the kubelet's namespace (k8s.io)."""
    return _run("ctr", "--address", str(sock), "--namespace", "k8s.io", *args, timeout=timeout)


def ctr(state: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return ctr_at(node_dir(state.resolve()) / "containerd" / "containerd.sock", *args, timeout=timeout)


def import_images(state: Path, archives: list[Path]) -> None:
    """Import image archives into the node's containerd, concurrently: each import mostly waits on unpacking
    layers to disk, and containerd serializes what must be (shared layers are unpacked once)."""
    for archive in archives:
        if not archive.is_file():
            raise HarnessError(f"no image archive at {archive}")

    def one(archive: Path) -> None:
        started = time.monotonic()
        ctr(state, "images", "import", "--snapshotter", "overlayfs", str(archive))
        _say(f"imported {archive.name} in {time.monotonic() - started:.1f}s")

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(archives))) as pool:
        for future in [pool.submit(one, a) for a in archives]:
            future.result()


IMPORTS_DIR = "imports"


def import_images_in_background(state: Path, archives: list[Path], later: Sequence[Path] = ()) -> None:
    """Start importing ``archives`` into the node's containerd, all at once, then ``later`` once every one of
    ``archives`` has ended, and return at once: one detached shell runs them. Each import leaves
    ``<state>/imports/<archive>.started``, then ``.done`` or ``.failed`` (its output in ``.log``);
    `wait_for_images` waits for them. The e2e run needs the Spark image (1.15 GB, the longest import) only for its
    last test: imported beside the others, it slowed the imports the tests wait for."""
    marks = state.resolve() / IMPORTS_DIR
    marks.mkdir(parents=True, exist_ok=True)
    sock = node_dir(state.resolve()) / "containerd" / "containerd.sock"
    script = (
        "sock=$1; shift; "
        'imp() { touch "$2.started"; ctr --address "$sock" --namespace k8s.io images import --snapshotter overlayfs '
        '"$1" >"$2.log" 2>&1 && touch "$2.done" || touch "$2.failed"; }; '
        'while [ "$1" != -- ]; do imp "$1" "$2" & shift 2; done; shift; wait; '
        'while [ $# -gt 0 ]; do imp "$1" "$2" & shift 2; done; wait'
    )
    args: list[str] = []
    for group in (archives, later):
        for archive in group:
            if not archive.is_file():
                raise HarnessError(f"no image archive at {archive}")
            mark = marks / archive.name
            for suffix in (".started", ".done", ".failed", ".log"):
                Path(f"{mark}{suffix}").unlink(missing_ok=True)
            args += [str(archive), str(mark)]
        if group is archives:
            args.append("--")
    subprocess.Popen(
        ["sh", "-c", script, "sh", str(sock), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_for_images(state: Path, archives: list[Path], timeout: float = 900.0) -> None:
    """Return once every archive started by `import_images_in_background` is imported; raise naming the one that
    failed (with its `ctr` output) or the ones still importing at the deadline (a bound for a hang)."""
    marks = state.resolve() / IMPORTS_DIR
    deadline = time.monotonic() + timeout
    while True:
        failed = [a for a in archives if Path(f"{marks / a.name}.failed").exists()]
        if failed:
            log = Path(f"{marks / failed[0].name}.log")
            output = log.read_text(errors="replace").strip()[-400:] if log.exists() else ""
            raise HarnessError(f"importing {failed[0].name} into the node failed: {output or 'no output'}")
        pending = [a.name for a in archives if not Path(f"{marks / a.name}.done").exists()]
        if not pending:
            for a in archives:
                mark = marks / a.name
                took = Path(f"{mark}.done").stat().st_mtime - Path(f"{mark}.started").stat().st_mtime
                _say(f"imported {a.name} in {took:.1f}s")
            return
        if time.monotonic() > deadline:
            raise HarnessError(f"importing {', '.join(pending)} into the node did not finish within {timeout:.0f}s")
        time.sleep(0.5)


# ---------------------------------------------------------------- shared with k8s/cluster.py


AUDIT_POLICY = """\
# Every request a pod's ServiceAccount makes (the operator's above all), its verb, object and response code; nothing
# of the admin's, the nodes' or the control plane's own. What tests/e2e reads to prove the chart's RBAC refused the
# operator nothing (e2e_node.rbac_refusals).
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"""


def audit_log_path(state: Path) -> Path:
    """The API server's audit log (`AUDIT_POLICY`): one JSON event per line."""
    return state / "audit.log"


def start_control_plane(state: Path, bin_dir: Path, timeout: float, address: str, certs: dict[str, str]) -> Any:
    """The control plane real nodes join (harness.up on ``address``): the Node authorizer and NodeRestriction, and
    the API server's own client certificate for the kubelets, added to ``certs``."""
    certs = {**certs, "apiserver-kubelet-client": "/O=system:masters/CN=kube-apiserver-kubelet-client"}
    pki = state / "pki"
    # Beside the state directory, not in it: harness.up empties that before it starts anything.
    policy = state.parent / f"{state.name}.audit-policy.yaml"
    policy.write_text(AUDIT_POLICY, encoding="utf-8")
    return harness.up(  # type: ignore[attr-defined]
        state,
        build=False,
        bin_dir=bin_dir,
        timeout=timeout,
        address=address,
        extra_certs=certs,
        apiserver_flags=(
            "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}",
            "--kubelet-preferred-address-types=InternalIP",
            # A node IP is not loopback: the `kubernetes` Service gets real endpoints (pods reach the API).
            "--endpoint-reconciler-type=lease",
            f"--audit-policy-file={policy}",
            f"--audit-log-path={audit_log_path(state)}",
            "--audit-log-maxsize=500",
            "--audit-log-maxbackup=1",
        ),
    )


def scheduler_argv(bin_dir: Path, kubeconfig: Path, port: int, cert_dir: Path) -> list[str]:
    """The one kube-scheduler of the cluster: its own identity, no leader election, serving on loopback."""
    return [
        str(bin_dir / "kube-scheduler"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
        f"--cert-dir={cert_dir}",
        "--v=1",
    ]


def http_ok(url: str) -> Callable[[], tuple[bool, str]]:
    """A readiness check: ``url`` answers 200 (for `harness._wait`)."""

    def check() -> tuple[bool, str]:
        import urllib.request

        with urllib.request.urlopen(url, timeout=3) as resp:
            return resp.status == 200, resp.read().decode(errors="replace")

    return check


def kubectl_runner(bin_dir: Path, state: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``kc(*args, input=None, check=True)``: kubectl as the cluster's admin; HarnessError naming the command."""
    env = harness.cluster_env(state)  # type: ignore[attr-defined]

    def kc(*args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [str(bin_dir / "kubectl"), *args], env=env, capture_output=True, text=True, input=input, timeout=120
        )
        if check and res.returncode != 0:
            raise HarnessError(f"kubectl {' '.join(args)}: {res.stderr.strip()[:400]}")
        return res

    return kc


def up(
    state_dir: Path,
    *,
    build: bool = True,
    timeout: float = 300.0,
    background_images: Sequence[Path] = (),
    late_images: Sequence[Path] = (),
) -> None:
    state = state_dir.resolve()
    _preflight()
    started = time.monotonic()
    bin_dir = build_tools.build(quiet=True) if build else build_tools.bin_dir()
    need = [b for b in build_tools.BINARIES if b not in ("helm", "promtool") and not (bin_dir / b).is_file()]
    if need:
        raise HarnessError(f"missing binaries in {bin_dir}: {', '.join(need)} (run `make k8s-tools`)")
    record = _read_record()
    if record and Path(record["state_dir"]) != state and running_node():
        raise HarnessError(
            f"a node is already up with state dir {record['state_dir']}; one node per machine: "
            f"run `python3 k8s/node.py down --state-dir {record['state_dir']}` first"
        )
    if record and Path(record["state_dir"]) == state and _node_healthy(state):
        _say(f"node already up (KUBECONFIG={state / 'kubeconfig'})")
        return
    if record:  # stale (killed run): clean it first
        down(Path(record["state_dir"]), quiet=True)
    images = node_images(bin_dir)
    record = {
        "state_dir": str(state),
        "started": time.time(),
        "sysctls": {k: _sysctl_read(k) for k in SYSCTLS},
        "nft_tables_before": _nft_tables(),
        "host_paths_before": [p for p in HOST_PATHS if os.path.lexists(p)],
    }
    _write_record(record)
    try:
        _start(state, bin_dir, images, timeout, list(background_images), list(late_images))
    except BaseException:
        if os.environ.get("ROCKETMQ_OPERATOR_NODE_KEEP") == "1":  # debugging: leave it up for inspection
            _say("node start failed; ROCKETMQ_OPERATOR_NODE_KEEP=1: left running, `make k8s-node-down` stops it")
            raise
        _say("node start failed or interrupted; stopping what was started ...")
        down(state, quiet=True)
        raise
    _say(
        f"node up in {time.monotonic() - started:.1f}s\n"
        f"  export KUBECONFIG={state / 'kubeconfig'} PATH={state / 'bin'}:$PATH"
    )


def _start(
    state: Path,
    bin_dir: Path,
    images: dict[str, Path],
    timeout: float,
    background_images: list[Path],
    late_images: list[Path],
) -> None:
    _say(f"network: bridge {BRIDGE} {NODE_IP}/24, guard table inet {GUARD_TABLE}")
    _setup_network()
    certs = {
        "kube-scheduler": "/CN=system:kube-scheduler",
        "kube-proxy": "/CN=system:kube-proxy",
        "kubelet": f"/O=system:nodes/CN=system:node:{NODE_NAME}",
    }
    pki = state / "pki"
    cluster = start_control_plane(state, bin_dir, timeout, NODE_IP, certs)
    nd = node_dir(state)
    for d in ("containerd", "cni/net.d", "cni/ipam", "kubelet", "pod-logs", "logs"):
        (nd / d).mkdir(parents=True, exist_ok=True)
    for name in certs:
        harness._write_kubeconfig(nd / f"{name}.kubeconfig", cluster.server, pki, name, name)  # type: ignore[attr-defined]
    (nd / "resolv.conf").write_text("# no upstream DNS: the node never queries a server off this machine\n")
    (nd / "containerd" / "config.toml").write_text(_containerd_config(nd, base_spec=base_runtime_spec(nd)))
    (nd / "cni" / "net.d" / "10-rmq-node.conflist").write_text(_cni_config(nd))
    free = harness._free_port  # type: ignore[attr-defined]
    kubelet_healthz, kubelet_port, proxy_healthz, proxy_metrics, sched_port = free(), free(), free(), free(), free()
    (nd / "kubelet-config.json").write_text(_kubelet_config(nd, state, kubelet_healthz, kubelet_port))
    (nd / "kube-proxy-config.json").write_text(_kube_proxy_config(nd, proxy_healthz, proxy_metrics))

    def spawn(name: str, argv: list[str]) -> None:
        harness._spawn(nd, name, argv)  # type: ignore[attr-defined]

    def wait(what: str, check, component: str, secs: float = timeout) -> None:  # type: ignore[no-untyped-def]
        harness._wait(what, check, secs, nd, component)  # type: ignore[attr-defined]

    _say("starting containerd " + _run("containerd", "--version").stdout.split()[2])
    spawn("containerd", ["containerd", "--config", str(nd / "containerd" / "config.toml")])
    sock = nd / "containerd" / "containerd.sock"
    wait(
        "containerd's socket",
        lambda: (ctr(state, "version", timeout=5).returncode == 0 if sock.exists() else False, ""),
        "containerd",
        60,
    )
    import_images(state, list(images.values()))
    # While the rest of the node starts (the imports mostly wait on the disk): the caller waits for them.
    import_images_in_background(state, background_images, late_images)

    _say("starting kube-scheduler")
    sched_kc = str(nd / "kube-scheduler.kubeconfig")
    spawn("kube-scheduler", scheduler_argv(bin_dir, Path(sched_kc), sched_port, nd / "scheduler-certs"))
    _say("starting kubelet")
    spawn(
        "kubelet",
        [
            str(bin_dir / "kubelet"),
            f"--config={nd / 'kubelet-config.json'}",
            f"--kubeconfig={nd / 'kubelet.kubeconfig'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_IP}",
            f"--root-dir={nd / 'kubelet'}",
            f"--cert-dir={nd / 'kubelet' / 'pki'}",
            "--v=1",
        ],
    )
    wait("kubelet /healthz", http_ok(f"http://127.0.0.1:{kubelet_healthz}/healthz"), "kubelet")
    _say("starting kube-proxy (nftables)")
    spawn("kube-proxy", [str(bin_dir / "kube-proxy"), f"--config={nd / 'kube-proxy-config.json'}", "--v=1"])
    wait("kube-proxy /healthz", http_ok(f"http://127.0.0.1:{proxy_healthz}/healthz"), "kube-proxy")

    kc = kubectl_runner(bin_dir, state)

    def node_ready() -> tuple[bool, str]:
        res = kc(
            "get", "node", NODE_NAME, "-o", "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False
        )
        return res.stdout.strip() == "True", res.stdout + res.stderr

    wait(f"node {NODE_NAME} Ready", node_ready, "kubelet")
    coredns_image = next(n for n in images if n.startswith(COREDNS_IMAGE_REPO))
    _say("deploying CoreDNS")
    kc("apply", "-f", "-", input=_coredns_manifest(coredns_image))

    def dns_ready() -> tuple[bool, str]:
        res = kc("-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.status.readyReplicas}", check=False)
        return res.stdout.strip() == "1", res.stdout + res.stderr

    wait("CoreDNS Ready", dns_ready, "kubelet")
    _say(f"creating {PERSISTENT_VOLUMES} hostPath PersistentVolumes under {nd / 'volumes'}")
    kc("apply", "-f", "-", input=_persistent_volumes(nd))
    for tool in ("ctr",):
        link = state / "bin" / tool
        if not link.exists():
            link.write_text(f'#!/bin/sh\nexec ctr --address {sock} --namespace k8s.io "$@"\n')
            link.chmod(0o755)


def down(state_dir: Path, *, quiet: bool = False) -> None:
    state = state_dir.resolve()
    record = _read_record() or {}
    if not record:  # no node on this machine: only a control plane (or nothing) to stop
        harness.down(state, quiet=quiet)  # type: ignore[attr-defined]
        return
    if Path(record.get("state_dir", "")) != state:
        raise HarnessError(f"the node on this machine runs from {record['state_dir']}, not {state}")
    _stop_node_components(state)
    harness._stop_all(state)  # type: ignore[attr-defined]
    release_mounts(state, record)
    _teardown_network(record)
    release_host_paths(record)
    harness.down(state, quiet=True)  # type: ignore[attr-defined]
    with contextlib.suppress(OSError):
        registry_file().unlink()
    if not quiet:
        _say(f"node stopped; removed {state}, bridge {BRIDGE}, nft tables, KUBE-* chains; sysctls restored")


def release_mounts(state: Path, record: dict) -> None:
    """Unmount everything under the state dir and the pod network namespaces (``/run/netns/cni-*``) made since
    ``record``'s start, and remove those namespace files."""
    prefixes = [str(state)]
    started = record.get("started", 0.0)
    netns = Path("/run/netns")
    if netns.is_dir():
        for ns in netns.glob("cni-*"):
            with contextlib.suppress(OSError):
                if ns.stat().st_mtime >= started - 1:
                    prefixes.append(str(ns))
    _unmount_all(prefixes)
    for ns in prefixes[1:]:
        with contextlib.suppress(OSError):
            Path(ns).unlink()


def release_host_paths(record: dict) -> None:
    """Remove the host paths the kubelet and containerd made (`HOST_PATHS` absent before `up`, now unmounted)."""
    before = set(record.get("host_paths_before", HOST_PATHS))
    for path in HOST_PATHS:
        if path not in before and os.path.lexists(path) and not _mounts_under([path]):
            shutil.rmtree(path, ignore_errors=True)


def status(state_dir: Path) -> int:
    state = state_dir.resolve()
    rc = harness.status(state)  # type: ignore[attr-defined]
    nd = node_dir(state)
    for c in NODE_COMPONENTS:
        pid = harness._read_pid(nd, c)  # type: ignore[attr-defined]
        print(f"{c:26} pid {pid:<8} {'running' if harness._is_ours(pid, state) else 'NOT RUNNING'}")  # type: ignore[attr-defined]
    return 0 if rc == 0 and _node_healthy(state) else 1


def _still_running(state: Path) -> str:
    """One line for Ctrl-C: which of our processes still run, and how to stop them."""
    pids = sorted(set(harness._strays(state)) | set(_node_strays(state)) | _pod_pids())  # type: ignore[attr-defined]
    names = sorted({Path((harness._cmdline(p) or ["?"])[0]).name for p in pids})  # type: ignore[attr-defined]
    bridge = _run("ip", "link", "show", BRIDGE, check=False).returncode == 0 if shutil.which("ip") else False
    if not pids and not bridge and not _read_record():
        return "nothing of the node is left running"
    left = ", ".join(names) + (f" (pids {' '.join(map(str, pids))})" if pids else "")
    return f"still running: {left or 'no process'}{'; bridge ' + BRIDGE if bridge else ''}; `make k8s-down` stops it"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("up", "down", "status", "import", "deps"))
    ap.add_argument("archives", nargs="*", type=Path)
    ap.add_argument("--state-dir", type=Path, default=Path(".k8s"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "up":
            up(args.state_dir, build=not args.no_build, timeout=args.timeout)
        elif args.cmd == "down":
            down(args.state_dir)
        elif args.cmd == "status":
            return status(args.state_dir)
        elif args.cmd == "import":
            if not args.archives:
                raise HarnessError("import needs at least one image archive (OCI or docker-archive .tar)")
            import_images(args.state_dir, args.archives)
        elif args.cmd == "deps":
            deps()
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted; {_still_running(args.state_dir.resolve())}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`rocketmq-operator bench operator-scale`: what the operator costs as the number of BrokerGroups grows.

What is real and what is simulated:

* **Real:** the API server (kube-apiserver + etcd + kube-controller-manager, started by `k8s/harness.py` from the
  binaries `make k8s-tools` builds, or the one ``--kubeconfig`` names); the CRDs; the ControllerGroup and the N
  BrokerGroups, created through the API; the operator, `rocketmq-operator run --standalone -n NAMESPACE` in its
  own process (`bench.operator_scale_launch`), which reconciles them (StatefulSets, Services, ConfigMaps, PDBs
  ... applied for real; the controller manager makes the pods), observes every group on its timer and writes
  status, pod labels, readiness conditions and Events for real.
* **Simulated:** the RocketMQ processes (`bench.operator_sim`: controllers, name servers and brokers answering
  the remoting protocol on 127.0.0.0/8, one address per pod); the kubelet (no node runs: the bench writes each
  pod's status as a kubelet would, Running and Ready with its container started and its pod IP the simulated
  broker's address); the cluster DNS (the operator's process resolves the ControllerGroup's pod names, and only
  those, to the simulated controllers). Brokers are addressed by pod IP and port 10911 as on a real cluster.

Per size (a fresh namespace each): create the groups, start the operator, wait until every group's status names
the simulated master and every replica alive (bounded) and for `WARM_UP_PASSES` more passes of every group (their
hot keys and pod labels written), then measure a window of ``passes`` observation passes of every group (counted
at the simulated controller: one SyncStateSet read per group pass; bounded in time): the operator process's CPU
seconds, its resident memory, kube-apiserver's `apiserver_request_total` (less the same counter over an equally
long window with the operator stopped: the controller manager's and the bench's own requests), and the remoting
requests the simulator answered. Then ``changes`` simulated elections on groups picked by a seeded random
choice, one at a time: the observation lag is the time from the election to the BrokerGroup's status naming the
new master (polled every `LAG_POLL_S`); the time to the group's next pass, and from it to the status, are
recorded beside it. The operator is stopped, the baseline window measured, the namespace deleted, and the size's
figures written to ``STATE_DIR/size-N.json`` (kept if a later size fails). Everything is bounded in count and
time; the bench stops by itself.

Its own control plane gets a /16 Service range (`SERVICE_RANGE`): each group has two ClusterIP Services. A cluster
named by ``--kubeconfig`` must have room for them, no scheduler (the bench stops at a pod placed on a node: a
kubelet would own its status), and gets the CRDs created only where missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import platform
import random
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rocketmq_operator.api.crd import all_crds
from rocketmq_operator.api.models import API_GROUP, API_VERSION
from rocketmq_operator.bench.operator_scale_plan import (
    ScaleBenchError,
    WindowCounts,
    apiserver_total,
    lag_bound,
    lag_summary,
    linear_until,
    memory_slopes,
    window_figures,
)
from rocketmq_operator.bench.operator_sim import SimulatedRocketMQ, controller_host
from rocketmq_operator.bench.phase import announce as phase
from rocketmq_operator.platforms.kubernetes.kube import KubeClient, KubeError

JSON = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]
HARNESS = ROOT / "k8s" / "harness.py"
CONTROLLER_GROUP = "sim-ctl"
CONTROLLERS = 3
OBSERVE_SECONDS_DEFAULT = 2.0
LAG_POLL_S = 0.1
WARM_UP_PASSES = 2
KUBELET_INTERVAL_S = 2.0
SETTLE_BASE_S = 120.0
SETTLE_PER_GROUP_S = 1.5
LAG_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
NAMESPACE_GONE_TIMEOUT_S = 60.0
SERVICE_RANGE = "10.0.0.0/16"
"""The bench's own control plane's Service range: every group has two ClusterIP Services (its client Service and
`<group>-master`), and the harness's default /24 holds 254 (200 groups met "range is full")."""


@dataclass(frozen=True)
class ScaleSettings:
    sizes: list[int]
    passes: int = 15
    changes: int = 12
    seed: int = 1
    kubeconfig: Path | None = None
    state_dir: Path = Path(".bench-state/operator-scale")


def group_names(size: int) -> list[str]:
    return [f"g-{i:04d}" for i in range(size)]


def controller_group_manifest(namespace: str) -> JSON:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "ControllerGroup",
        "metadata": {"name": CONTROLLER_GROUP, "namespace": namespace},
        "spec": {"replicas": CONTROLLERS, "resources": {"requests": {"cpu": "100m"}}, "jvm": {"heap": "512Mi"}},
    }


def broker_group_manifest(name: str, namespace: str) -> JSON:
    """The quickstart's group (3 replicas, controller mode, 2 of 3), as many times as a size asks."""
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "BrokerGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterName": "DefaultCluster",
            "replicas": 3,
            "haMode": "controller",
            "controllerRef": {"name": CONTROLLER_GROUP},
            "quorum": {"inSyncReplicas": 2, "minInSyncReplicas": 2},
            "storage": {"size": "10Gi"},
            "resources": {"requests": {"cpu": "250m"}},
            "jvm": {"heap": "1Gi"},
        },
    }


def controller_hosts(namespace: str) -> dict[str, str]:
    """The pod DNS names of the ControllerGroup's pods (`render.kubernetes.names.pod_dns`) -> simulated address."""
    return {
        f"{CONTROLLER_GROUP}-{i}.{CONTROLLER_GROUP}-headless.{namespace}.svc": controller_host(i)
        for i in range(CONTROLLERS)
    }


def kubelet_status(pod: JSON, ip: str, now: str) -> JSON:
    """The status a kubelet writes for a started, ready pod (every container running since ``now``)."""
    containers = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    ready = [
        {"type": t, "status": "True", "lastTransitionTime": now}
        for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
    ]
    return {
        "phase": "Running",
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "hostIP": "127.0.0.1",
        "startTime": now,
        "conditions": ready,
        "containerStatuses": [
            {
                "name": name,
                "ready": True,
                "started": True,
                "restartCount": 0,
                "image": "simulated",
                "imageID": "simulated",
                "state": {"running": {"startedAt": now}},
            }
            for name in containers
        ],
    }


# ------------------------------------------------------------------------------------------------ the API server


def _load_harness() -> Any:
    if not HARNESS.is_file():
        raise ScaleBenchError(
            f"no API server: --kubeconfig was not given and {HARNESS} (which starts one) is not here; fix: run from "
            "a source checkout, or pass --kubeconfig FILE of a cluster with no nodes (make k8s-up)"
        )
    spec = importlib.util.spec_from_file_location("rocketmq_operator_k8s_harness", HARNESS)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def api_server(settings: ScaleSettings) -> Iterator[Path]:
    """The kubeconfig of ``--kubeconfig``, else of a control plane started for the bench and stopped after it."""
    if settings.kubeconfig is not None:
        if not settings.kubeconfig.is_file():
            raise ScaleBenchError(
                f"--kubeconfig {settings.kubeconfig}: no such file; fix: the kubeconfig of a cluster with no nodes, "
                "e.g. .k8s/kubeconfig after make k8s-up"
            )
        yield settings.kubeconfig
        return
    harness = _load_harness()
    state = (settings.state_dir / "k8s").resolve()
    try:
        cluster = harness.up(
            state, build=False, quiet=True, apiserver_flags=(f"--service-cluster-ip-range={SERVICE_RANGE}",)
        )
    except harness.HarnessError as exc:
        harness.down(state, quiet=True)
        raise ScaleBenchError(f"the local control plane did not start: {exc}") from None
    try:
        yield Path(cluster.kubeconfig)
    finally:
        harness.down(state, quiet=True)


def kube_client(kubeconfig: Path) -> KubeClient:
    from kubernetes import client, config

    configuration = client.Configuration()
    load: Callable[..., None] = config.load_kube_config  # the client carries no annotations
    load(config_file=str(kubeconfig), client_configuration=configuration)
    return KubeClient.from_configuration(configuration)


class Api:
    """The bench's own API calls (the groups, the simulated kubelet, status reads, the server's metrics)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def get_any(self, api_version: str, kind: str, name: str) -> JSON | None:
        """GET a cluster-scoped object of a kind the operator itself never reads (Namespace, CRD)."""
        kube = self.kube
        return await kube._request(
            "get",
            kind,
            lambda r: kube._dynamic.get(r, name=name, **kube._options()),
            api_version=api_version,
            missing=True,
        )

    async def delete_any(self, api_version: str, kind: str, name: str) -> None:
        kube = self.kube
        await kube._request(
            "delete", kind, lambda r: kube._dynamic.delete(r, name=name, **kube._options()), api_version=api_version,
            missing=True,
        )  # fmt: skip

    async def metrics(self) -> tuple[float, dict[str, float]]:
        """kube-apiserver's request counter (GET /metrics with the bench's credentials)."""
        api = self.kube._dynamic.client
        configuration = api.configuration
        headers = {
            str(setting["key"]): str(setting["value"])
            for setting in configuration.auth_settings().values()
            if setting.get("in") == "header" and setting.get("value")
        }

        def read() -> str:
            response = api.call_api("GET", f"{configuration.host}/metrics", header_params=headers, _request_timeout=30)
            response.read()
            return str(response.data.decode("utf-8"))

        return apiserver_total(await asyncio.to_thread(read))

    async def install_crds(self) -> None:
        """Create the CRDs a cluster does not have yet (CRDs already there are left as they are)."""
        for crd in all_crds():
            await self.kube.create(crd)
        deadline = time.monotonic() + 60
        names = [crd["metadata"]["name"] for crd in all_crds()]
        while time.monotonic() < deadline:
            established = 0
            for name in names:
                live = await self.get_any("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
                conditions = ((live or {}).get("status") or {}).get("conditions") or []
                established += any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
            if established == len(names):
                return
            await asyncio.sleep(0.5)
        raise ScaleBenchError("the CRDs were not Established within 60 s; fix: check the API server's log")

    async def create_namespace(self, name: str) -> None:
        await self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def delete_namespace(self, name: str) -> bool:
        """Strip kopf's finalizers (the operator is stopped), delete the namespace; whether it went in time."""
        for kind in ("BrokerGroup", "ControllerGroup"):
            for item in await self.kube.list(kind, name):
                with contextlib.suppress(KubeError):
                    await self.kube.patch(kind, name, item["metadata"]["name"], {"metadata": {"finalizers": None}})
        await self.delete_any("v1", "Namespace", name)
        deadline = time.monotonic() + NAMESPACE_GONE_TIMEOUT_S
        while time.monotonic() < deadline:
            if await self.get_any("v1", "Namespace", name) is None:
                return True
            await asyncio.sleep(1.0)
        return False


@dataclass
class KubeletProblem:
    """What stops the simulated kubelet (a pod placed on a node: a real kubelet would run it and own its status)."""

    message: str | None = None

    def check(self) -> None:
        if self.message is not None:
            raise ScaleBenchError(self.message)


async def simulated_kubelet(
    api: Api, namespace: str, sim: SimulatedRocketMQ, stop: asyncio.Event, problem: KubeletProblem
) -> None:
    """Until ``stop``: every pod of ``namespace`` without the simulated status gets it (see `kubelet_status`).
    A pod a scheduler placed on a node stops it (``problem``): that cluster runs pods for real."""
    controller_ips = {f"{CONTROLLER_GROUP}-{i}": controller_host(i) for i in range(CONTROLLERS)}
    while not stop.is_set():
        with contextlib.suppress(KubeError):
            for pod in await api.kube.list("Pod", namespace):
                name = pod["metadata"]["name"]
                node = (pod.get("spec") or {}).get("nodeName")
                if node:
                    problem.message = (
                        f"pod {namespace}/{name} was scheduled on node {node}: this cluster runs pods, and its kubelet "
                        "would own their status; fix: a control plane with no scheduler or nodes (omit --kubeconfig: "
                        "the bench starts one)"
                    )
                    return
                ip = controller_ips.get(name) or sim.pod_ip(name)
                if ip is None or pod["metadata"].get("deletionTimestamp"):
                    continue
                if (pod.get("status") or {}).get("podIP") == ip:
                    continue
                now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                with contextlib.suppress(KubeError):
                    await api.kube.patch_strategic(
                        "Pod", namespace, name, {"status": kubelet_status(pod, ip, now)}, "status"
                    )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), KUBELET_INTERVAL_S)


# ------------------------------------------------------------------------------------------------ the operator


class OperatorProcess:
    """`rocketmq-operator run` for one namespace, with the simulated DNS (`bench.operator_scale_launch`)."""

    def __init__(self, kubeconfig: Path, namespace: str, hosts: dict[str, str], log: Path) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.hosts = hosts
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        hosts_file = self.log.with_suffix(".hosts.json")
        hosts_file.write_text(json.dumps(self.hosts), encoding="utf-8")
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        for key in ("ROCKETMQ_OPERATOR_JAVA_OPTS",):
            env.pop(key, None)
        argv = [
            sys.executable,
            "-m",
            "rocketmq_operator.bench.operator_scale_launch",
            "--hosts",
            str(hosts_file),
            "--namespace",
            self.namespace,
        ]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            tail = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise ScaleBenchError(f"the operator exited (log {self.log}): {tail[0][:300]}")

    def cpu_s(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text(encoding="utf-8").rpartition(")")[2].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (stat fields 14, 15)

    def memory_mib(self) -> dict[str, float]:
        assert self.proc is not None
        out: dict[str, float] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out["rss_mib" if key == "VmRSS" else "rss_peak_mib"] = round(int(value.split()[0]) / 1024, 1)
        return out

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------------------------------------ one size


def _master_id(body: JSON | None) -> int | None:
    master = ((body or {}).get("status") or {}).get("master") or {}
    value = master.get("brokerId")
    return value if isinstance(value, int) else None


def fully_observed(body: JSON | None, master_id: int, replicas: int) -> bool:
    """The group's status names ``master_id`` and every one of its ``replicas`` answered the pass. The master
    alone is not enough: it comes from the controller, while the StatefulSet makes its pods one by one and the
    simulated kubelet gives each its address in turn; a window that began then counted passes that could reach
    only some brokers (at 200 groups on 2 cores, a third of them no broker at all)."""
    status = (body or {}).get("status") or {}
    observed = [r for r in status.get("replicas") or [] if isinstance(r, dict)]
    return _master_id(body) == master_id and len(observed) == replicas and all(r.get("alive") for r in observed)


async def _counts(api: Api, operator: OperatorProcess | None, sim: SimulatedRocketMQ) -> WindowCounts:
    total, by_kind = await api.metrics()
    return WindowCounts(
        at=time.monotonic(),
        operator_cpu_s=operator.cpu_s() if operator is not None else 0.0,
        apiserver_requests=total,
        remoting_requests=dict(sim.requests),
        sync_state_reads=dict(sim.sync_state_reads),
        apiserver_by_kind=by_kind,
    )


async def _settle(
    api: Api, namespace: str, sim: SimulatedRocketMQ, operator: OperatorProcess, size: int, problem: KubeletProblem
) -> float:
    """Seconds until every group's status names its simulated master and every replica alive (`fully_observed`;
    ScaleBenchError past the bound)."""
    began = time.monotonic()
    deadline = began + SETTLE_BASE_S + SETTLE_PER_GROUP_S * size
    while time.monotonic() < deadline:
        operator.check_alive()
        problem.check()
        groups = {g["metadata"]["name"]: g for g in await api.kube.list("BrokerGroup", namespace)}
        settled = sum(
            1 for name, g in sim.groups.items() if fully_observed(groups.get(name), g.master_id, len(g.replicas))
        )
        phase(f"{size} groups: {settled} observed")
        if settled == size:
            return time.monotonic() - began
        await asyncio.sleep(2.0)
    raise ScaleBenchError(
        f"{size} groups: not every BrokerGroup's status named its master and every replica alive within "
        f"{SETTLE_BASE_S + SETTLE_PER_GROUP_S * size:.0f} s (operator log {operator.log})"
    )


async def _window(
    api: Api,
    operator: OperatorProcess | None,
    sim: SimulatedRocketMQ,
    passes: int,
    observe_s: float,
    seconds: float | None,
) -> tuple[WindowCounts, WindowCounts, bool]:
    """Counters at the start and the end of a window: ``passes`` passes of every group (or ``seconds`` long)."""
    start = await _counts(api, operator, sim)
    bound = passes * observe_s * 4 + 60.0 if seconds is None else seconds
    deadline = time.monotonic() + bound
    complete = seconds is not None
    while time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        if seconds is None:
            if operator is not None:
                operator.check_alive()
            least = min(sim.sync_state_reads.get(g, 0) - start.sync_state_reads.get(g, 0) for g in sim.groups)
            if least >= passes:
                complete = True
                break
    return start, await _counts(api, operator, sim), complete


async def _whole_passes(
    operator: OperatorProcess, sim: SimulatedRocketMQ, start: WindowCounts, end: WindowCounts, bound_s: float
) -> dict[str, int] | None:
    """The groups' requests by code name in exactly the window's passes, each from its SyncStateSet read to the
    next one: waits (at most ``bound_s``) for every group's next pass to begin; None if one did not."""
    deadline = time.monotonic() + bound_s
    total: Counter[str] = Counter()
    pending = list(sim.groups)
    while pending:
        operator.check_alive()
        still: list[str] = []
        for group in pending:
            counted = sim.whole_pass_requests(
                group, start.sync_state_reads.get(group, 0), end.sync_state_reads.get(group, 0)
            )
            if counted is None:
                still.append(group)
            else:
                total.update(counted)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.2)
    return dict(sorted(total.items()))


async def _lags(
    api: Api, namespace: str, sim: SimulatedRocketMQ, changes: int, observe_s: float, rng: random.Random
) -> list[JSON]:
    out: list[JSON] = []
    names = list(sim.groups)
    for _ in range(changes):
        await asyncio.sleep(rng.uniform(0, observe_s))  # not in step with the operator's timers
        group = rng.choice(names)
        new_id, elected_at = sim.elect(group)
        seen: float | None = None
        deadline = time.monotonic() + LAG_TIMEOUT_S
        while time.monotonic() < deadline:
            if _master_id(await api.kube.get("BrokerGroup", namespace, group)) == new_id:
                seen = time.time()
                break
            await asyncio.sleep(LAG_POLL_S)
        next_pass = sim.first_read_after(group, elected_at)
        out.append(
            {
                "group": group,
                "new_master": new_id,
                "lag_s": None if seen is None else round(seen - elected_at, 3),
                "to_next_pass_s": None if next_pass is None else round(next_pass - elected_at, 3),
                "pass_to_status_s": None if seen is None or next_pass is None else round(seen - next_pass, 3),
            }
        )
    return out


async def run_size(api: Api, kubeconfig: Path, size: int, settings: ScaleSettings, observe_s: float) -> JSON:
    namespace = f"operator-scale-{size}"
    names = group_names(size)
    sim = SimulatedRocketMQ(names, controllers=CONTROLLERS)
    stop_kubelet = asyncio.Event()
    log = settings.state_dir.resolve() / f"operator-{size}.log"
    operator = OperatorProcess(kubeconfig, namespace, controller_hosts(namespace), log)
    rng = random.Random(settings.seed * 1000 + size)
    async with _running(sim):
        phase(f"{size} groups: creating")
        await api.create_namespace(namespace)
        problem = KubeletProblem()
        kubelet = asyncio.create_task(simulated_kubelet(api, namespace, sim, stop_kubelet, problem))
        gone = False
        try:
            await api.kube.create(controller_group_manifest(namespace))
            for name in names:
                await api.kube.create(broker_group_manifest(name, namespace))
            operator.start()
            settle_s = await _settle(api, namespace, sim, operator, size, problem)
            # Warm-up, not measured: every group's first passes apply its hot keys and label its pods.
            phase(f"{size} groups: warming up ({WARM_UP_PASSES} passes)")
            await _window(api, operator, sim, WARM_UP_PASSES, observe_s, None)
            load_before = os.getloadavg()
            phase(f"{size} groups: measuring {settings.passes} passes")
            bench_cpu = resource.getrusage(resource.RUSAGE_SELF)
            start, end, complete = await _window(api, operator, sim, settings.passes, observe_s, None)
            bench_cpu_after = resource.getrusage(resource.RUSAGE_SELF)
            whole = await _whole_passes(operator, sim, start, end, observe_s * 4 + 60.0)
            memory = operator.memory_mib()
            load_after = os.getloadavg()
            phase(f"{size} groups: {settings.changes} elections")
            lags = await _lags(api, namespace, sim, settings.changes, observe_s, rng)
            operator.check_alive()
            operator.stop()
            phase(f"{size} groups: baseline (operator stopped)")
            base_start, base_end, _ = await _window(api, None, sim, 0, observe_s, end.at - start.at)
        finally:
            operator.stop()
            stop_kubelet.set()
            await kubelet
            phase(f"{size} groups: deleting namespace {namespace}")
            with contextlib.suppress(KubeError):
                gone = await api.delete_namespace(namespace)
    figures = window_figures(
        start,
        end,
        size,
        baseline_requests=base_end.apiserver_requests - base_start.apiserver_requests,
        baseline_seconds=base_end.at - base_start.at,
        whole_pass_requests=whole,
    )
    lag_values = [float(x["lag_s"]) for x in lags if x["lag_s"] is not None]
    to_pass = [float(x["to_next_pass_s"]) for x in lags if x["to_next_pass_s"] is not None]
    to_status = [float(x["pass_to_status_s"]) for x in lags if x["pass_to_status_s"] is not None]
    cpu_per_pass = figures["cpu_s_per_pass"]
    return {
        "groups": size,
        "brokers": size * 3,
        "settle_s": round(settle_s, 1),
        "window_complete": complete,
        "load_average_1m": {"window_start": round(load_before[0], 2), "window_end": round(load_after[0], 2)},
        **figures,
        "bench_process_cpu_s": round(
            bench_cpu_after.ru_utime + bench_cpu_after.ru_stime - bench_cpu.ru_utime - bench_cpu.ru_stime, 3
        ),
        **memory,
        "cpu_s_per_round": None if not isinstance(cpu_per_pass, float) else round(cpu_per_pass * size, 4),
        "observation_lag": lag_summary(lag_values),
        "lag_to_next_pass": lag_summary(to_pass),
        "lag_pass_to_status": lag_summary(to_status),
        "lags_unseen": sum(1 for x in lags if x["lag_s"] is None),
        "unsupported_requests": dict(sim.unsupported),
        "namespace_deleted": gone,
        "per_change": lags,
    }


@contextlib.asynccontextmanager
async def _running(sim: SimulatedRocketMQ) -> AsyncIterator[SimulatedRocketMQ]:
    try:
        await sim.start()
    except OSError as exc:
        raise ScaleBenchError(
            f"the simulated RocketMQ cannot listen: {exc.strerror}; fix: free that port (one bench operator-scale "
            "runs at a time: its brokers are 127.77.x.y:10911)"
        ) from None
    try:
        yield sim
    finally:
        await sim.stop()


def _machine() -> JSON:
    model = ""
    with contextlib.suppress(OSError):
        model = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    load = os.getloadavg()
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "load_average_at_end": [round(x, 2) for x in load],
    }


async def run_operator_scale(settings: ScaleSettings) -> JSON:
    """The whole bench (module docstring); the JSON document."""
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    observe_s = float(os.environ.get("ROCKETMQ_OPERATOR_OBSERVE_SECONDS", OBSERVE_SECONDS_DEFAULT))
    began = datetime.now(UTC)
    with api_server(settings) as kubeconfig:
        api = Api(kube_client(kubeconfig))
        try:
            phase("installing the CRDs")
            await api.install_crds()
            results = []
            for size in settings.sizes:
                result = await run_size(api, kubeconfig, size, settings, observe_s)
                # Kept as each size ends: a later size's failure or a Ctrl-C leaves the earlier ones' figures.
                (settings.state_dir / f"size-{size}.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
                results.append(result)
        finally:
            await api.kube.close()
    sizes = [r["groups"] for r in results]
    small, large = results[0], results[-1]
    return {
        "bench": "operator-scale",
        "started_at": began.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "ended_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "observe_interval_s": observe_s,
        "passes": settings.passes,
        "changes": settings.changes,
        "seed": settings.seed,
        "machine": _machine(),
        "sizes": results,
        "linear_until": {
            "cpu_s_per_pass": linear_until(sizes, [r["cpu_s_per_pass"] for r in results]),
            "apiserver_requests_per_pass": linear_until(sizes, [r["apiserver_requests_per_pass"] for r in results]),
            "remoting_requests_per_pass": linear_until(sizes, [r["remoting_requests_per_pass"] for r in results]),
            "mean_pass_interval_s": linear_until(sizes, [r["mean_pass_interval_s"] for r in results]),
        },
        "rss_mib_per_added_group": memory_slopes(sizes, [r.get("rss_mib") for r in results]),
        "lag_p99_bound": {
            "smallest": small["groups"],
            "largest": large["groups"],
            **lag_bound(small["observation_lag"]["p99_s"], large["observation_lag"]["p99_s"]),
        },
    }


def summary_lines(doc: JSON) -> list[str]:
    """The human summary: one line per size, then the verdicts."""
    lines = [
        f"operator-scale {doc['started_at']} .. {doc['ended_at']}, observe every {doc['observe_interval_s']} s, "
        f"{doc['machine']['cpus']} CPUs, load {doc['machine']['load_average_at_end']}",
        f"{'groups':>6} {'passes':>7} {'interval s':>10} {'CPU ms/pass':>11} {'API req/pass':>12} "
        f"{'remoting/pass':>13} {'RSS MiB':>8} {'lag p50 s':>9} {'lag p99 s':>9}",
    ]
    for r in doc["sizes"]:
        cpu = r["cpu_s_per_pass"]
        lines.append(
            f"{r['groups']:>6} {r['passes']:>7} {r['mean_pass_interval_s'] or 0:>10.2f} "
            f"{(cpu or 0) * 1000:>11.1f} {r['apiserver_requests_per_pass'] or 0:>12.2f} "
            f"{r['remoting_requests_per_pass'] or 0:>13.2f} {r.get('rss_mib', 0):>8.1f} "
            f"{r['observation_lag']['p50_s'] or 0:>9.3f} {r['observation_lag']['p99_s'] or 0:>9.3f}"
        )
    linear = ", ".join(f"{k} up to {v}" for k, v in doc["linear_until"].items())
    lines.append(f"linear (per group within 25% of the smallest size): {linear}")
    bound = doc["lag_p99_bound"]
    lines.append(
        f"lag p99 at {bound['largest']} groups / at {bound['smallest']}: {bound['ratio']} "
        f"(bound {bound['factor']}x: {'met' if bound['met'] else 'NOT met' if bound['met'] is False else 'unknown'})"
    )
    return lines

"""The chaos campaign on Kubernetes (`rocketmq-operator chaos --platform kubernetes`): `chaos.run_campaign` on a
BrokerGroup already running in a cluster, its faults executed on the pods' processes from the node that runs them.

Contract: `run_chaos_kubernetes(namespace, group, campaign)` finds the BrokerGroup, its ControllerGroup and their pods
through the API server (the kubeconfig, as kubectl finds it), runs the producer and the read-back on this host
against the pods' addresses (the name servers' and brokers' client ports; the controllers' port is the group's
own, closed to the host by its NetworkPolicy), and injects each fault on the process of a pod as the node's own
administrator would. It needs root on the node that runs the target pod; the project's test cluster runs every
node on one machine (`k8s/cluster.py`), so one host reaches them all. A pod whose process is not on this host is
reported as a note on the fault, never silently skipped.

* kill: SIGKILL of the container's JVM (the kubelet restarts the container, as it would after a crash: nothing
  to do at heal);
* suspend: the container's cgroup freezer (v1 `freezer.state`, else v2 `cgroup.freeze`), thawed at heal (a
  container the fence removed meanwhile has nothing left to thaw);
* loss / partition: iptables in the pod's network namespace (entered through its sandbox process, which lives as
  long as the pod) drops 80% / all of what the pod sends, loopback excepted (its probes and lease agent still
  reach the broker, as on a machine whose network fails);
* pod-delete: the pod deleted with grace period 0 (its StatefulSet makes it again). Where the controllers host
  the name servers, brokers only: the producer addresses the name servers by pod IP, which a new pod changes (a
  controller's pod-delete is then noted and not injected). Standalone controllers (`spec.standalone`) take it
  too: only the brokers address them, by name.
* the operator (target `master+operator`): the master gets the fault and every operator pod (label
  `rocketmq-operator.dev/operator=true`, any namespace) is deleted with grace period 0 at once, so the failover
  happens while the operator starts again; its Deployment makes it again, and health waits for it Ready.

Health before each fault: every pod of both groups Ready, and the BrokerGroup's status Ready, writable, every
replica alive and in sync and the SyncStateSet full (the operator's view, used only to pace the campaign; the
outcomes are the producer's). The master a fault targets is the status's too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from rocketmq_operator.bench.chaos import Campaign, run_campaign
from rocketmq_operator.bench.chaos_plan import (
    BROKER_ONLY_FAMILIES,
    KUBERNETES_FAMILIES,
    LOSS_PROBABILITY,
    OPERATOR_PROCESS,
)
from rocketmq_operator.platforms.kubernetes.kube import KubeClient
from rocketmq_operator.remoting import RemotingClient

JSON = dict[str, Any]
MAIN_CLASSES = ("BrokerStartup", "ControllerStartup", "NamesrvStartup", "ProxyStartup")
NAMESRV_PORT = 9876
RULE_COMMENT = "rocketmq-operator-chaos"
COMPONENT_LABEL = "app.kubernetes.io/component"
OPERATOR_PODS = "rocketmq-operator.dev/operator=true"


class ChaosTargetError(RuntimeError):
    """A group that cannot be the target of a campaign; the message names what is missing and the fix."""


def pod_processes(uid: str, proc: Path = Path("/proc")) -> tuple[int | None, int | None, str]:
    """(the host PID of the pod's RocketMQ JVM, of its sandbox process, the JVM's cgroup file) for the pod with
    ``uid``, found by the uid in their cgroup paths (both the cgroupfs and the systemd drivers' spellings)."""
    spellings = (uid, uid.replace("-", "_"))
    jvm: int | None = None
    sandbox: int | None = None
    cgroup_of_jvm = ""
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cgroup = (entry / "cgroup").read_text()
            if not any(s in cgroup for s in spellings):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(main in cmdline for main in MAIN_CLASSES):
            jvm, cgroup_of_jvm = int(entry.name), cgroup
        elif cmdline.strip().endswith("/pause") or cmdline.strip() == "/pause":
            sandbox = int(entry.name)
    return jvm, sandbox, cgroup_of_jvm


def freezer_file(cgroup: str, root: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The file that freezes the cgroup of a process (its /proc/PID/cgroup text): v1's `freezer.state`, else v2's
    `cgroup.freeze`."""
    for line in cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[1] == "freezer":
            return root / "freezer" / parts[2].lstrip("/") / "freezer.state"
    for line in cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            return root / parts[2].lstrip("/") / "cgroup.freeze"
    return None


def drop_rule(probability: float) -> list[str]:
    """The iptables rule (after the chain) that drops ``probability`` of what a pod sends, loopback excepted."""
    rule = ["OUTPUT", "!", "-o", "lo"]
    if probability < 1.0:
        rule += ["-m", "statistic", "--mode", "random", "--probability", str(probability)]
    return [*rule, "-m", "comment", "--comment", RULE_COMMENT, "-j", "DROP"]


def _serves_name_server(pod: JSON) -> bool:
    ports = (port for c in pod["spec"]["containers"] for port in c.get("ports") or [])
    return any(port.get("containerPort") == NAMESRV_PORT for port in ports)


def pod_ready(pod: JSON) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def controller_pods(pods: list[JSON]) -> list[JSON]:
    """The controllers among a ControllerGroup's pods: standalone controllers have name servers of their own in the
    group (component "namesrv"), which are not controllers."""
    return [p for p in pods if (p["metadata"].get("labels") or {}).get(COMPONENT_LABEL) != "namesrv"]


def group_healthy(status: JSON, replicas: int) -> bool:
    """The BrokerGroup's status says: Ready, writable, a master, every replica alive and in sync, and a full
    SyncStateSet."""
    members = (status.get("syncStateSet") or {}).get("members") or []
    rows = status.get("replicas") or []
    return (
        status.get("phase") == "Ready"
        and bool(status.get("writable"))
        and bool((status.get("master") or {}).get("replica"))
        and len(members) == replicas
        and len(rows) == replicas
        and all(r.get("alive") and r.get("inSync") for r in rows)
    )


class KubernetesChaos:
    """The Kubernetes executor of a campaign (see the module doc)."""

    def __init__(self, kube: KubeClient, namespace: str, group: str, controller_group: str, replicas: int) -> None:
        self.kube = kube
        self.namespace = namespace
        self.group = group
        self.controller_group = controller_group
        self.replicas = replicas
        self.brokers: list[str] = [f"{group}-{i}" for i in range(replicas)]
        self.controllers: list[str] = []
        self.name_servers: list[str] = []
        self.name_server_pods: list[str] = []
        self.broker_only_families: frozenset[str] = BROKER_ONLY_FAMILIES
        self.faults_operator = False
        self.open: list[tuple[str, str, Any]] = []  # (family, pod, what to heal) not yet healed

    async def discover(self) -> None:
        pods = sorted(await self._pods(self.controller_group), key=lambda p: str(p["metadata"]["name"]))
        self.controllers = [p["metadata"]["name"] for p in controller_pods(pods)]
        serving = [p for p in pods if p.get("status", {}).get("podIP") and _serves_name_server(p)]
        self.name_servers = [f"{p['status']['podIP']}:{NAMESRV_PORT}" for p in serving]
        self.name_server_pods = [p["metadata"]["name"] for p in serving]
        hosted = bool(set(self.name_server_pods) & set(self.controllers))
        self.broker_only_families = BROKER_ONLY_FAMILIES if hosted else frozenset()
        self.faults_operator = bool(await self._operator_pods())
        if not self.name_servers:
            raise ChaosTargetError(
                f"ControllerGroup {self.namespace}/{self.controller_group}: no pod with an address serves name "
                f"server port {NAMESRV_PORT}; fix: wait until its pods run (kubectl -n {self.namespace} get pods)"
            )

    async def _pods(self, group: str) -> list[JSON]:
        return await self.kube.list("Pod", self.namespace, f"rocketmq-operator.dev/group={group}")

    async def _operator_pods(self) -> list[JSON]:
        return await self.kube.list("Pod", None, OPERATOR_PODS)

    async def _uid(self, pod: str) -> str | None:
        obj = await self.kube.get("Pod", self.namespace, pod)
        return str(obj["metadata"]["uid"]) if obj is not None else None

    async def _processes(self, pod: str) -> tuple[int | None, int | None, str]:
        uid = await self._uid(pod)
        if uid is None:
            return None, None, ""
        return await asyncio.to_thread(pod_processes, uid)

    async def _iptables(self, sandbox: int, op: str, probability: float) -> str | None:
        argv = ["nsenter", "-t", str(sandbox), "-n", "iptables", "-w", op, *drop_rule(probability)]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        _, err = await proc.communicate()
        return None if proc.returncode == 0 else f"{' '.join(argv)}: {err.decode(errors='replace').strip()}"

    async def inject(self, family: str, process: str) -> str | None:
        if process == OPERATOR_PROCESS:
            pods = await self._operator_pods()
            for pod in pods:
                meta = pod["metadata"]
                await self.kube.delete("Pod", meta["namespace"], meta["name"], grace_period_s=0)
            return None if pods else "operator: no pod labelled " + OPERATOR_PODS + " to delete"
        if family == "pod-delete":
            if process in self.name_server_pods:
                return f"pod-delete {process}: not injected (the producer addresses name servers by pod IP)"
            await self.kube.delete("Pod", self.namespace, process, grace_period_s=0)
            return None
        jvm, sandbox, cgroup = await self._processes(process)
        if jvm is None or sandbox is None:
            return (
                f"{family} {process}: no RocketMQ JVM of the pod found on this host (the pod gone or its container "
                "restarting, or the pod on another machine)"
            )
        if family == "kill":
            with contextlib.suppress(ProcessLookupError):
                os.kill(jvm, signal.SIGKILL)
            return None
        if family == "suspend":
            state = freezer_file(cgroup)
            if state is None:
                return f"suspend {process}: no freezer for its cgroup"
            await asyncio.to_thread(state.write_text, "FROZEN" if state.name == "freezer.state" else "1")
            self.open.append((family, process, state))
            return None
        probability = LOSS_PROBABILITY if family == "loss" else 1.0
        if note := await self._iptables(sandbox, "-A", probability):
            return note
        self.open.append((family, process, sandbox))
        return None

    async def heal(self, family: str, process: str) -> str | None:
        held = next((o for o in self.open if o[0] == family and o[1] == process), None)
        if held is None:
            return None  # kill and pod-delete (and the operator): the kubelet and the workload bring it back
        self.open.remove(held)
        what = held[2]
        if family == "suspend":
            try:
                await asyncio.to_thread(what.write_text, "THAWED" if what.name == "freezer.state" else "0")
            except OSError:
                return None  # the container is gone (fenced): nothing to thaw
            return None
        if not Path(f"/proc/{what}").exists():
            return None  # the pod is gone, and its network namespace with it
        return await self._iptables(what, "-D", LOSS_PROBABILITY if family == "loss" else 1.0)

    async def heal_all(self) -> None:
        for family, process, _ in list(self.open):
            with contextlib.suppress(Exception):
                await self.heal(family, process)

    async def healthy(self) -> bool:
        if self.open:
            return False
        pods = [*(await self._pods(self.group)), *(await self._pods(self.controller_group))]
        if len(pods) < self.replicas + len(self.controllers) or not all(pod_ready(p) for p in pods):
            return False
        if self.faults_operator:
            operators = await self._operator_pods()
            if not operators or not all(pod_ready(p) for p in operators):
                return False  # its status below would be the one it left, not a new look
        obj = await self.kube.get("BrokerGroup", self.namespace, self.group)
        return obj is not None and group_healthy(obj.get("status") or {}, self.replicas)

    async def master(self) -> tuple[str | None, str | None]:
        obj = await self.kube.get("BrokerGroup", self.namespace, self.group)
        master = ((obj or {}).get("status") or {}).get("master") or {}
        return master.get("replica"), master.get("address")


async def run_chaos_kubernetes(namespace: str, group: str, campaign: Campaign) -> dict[str, Any]:
    """The campaign on BrokerGroup ``namespace/group`` (controller mode), running already."""
    if os.geteuid() != 0:
        raise ChaosTargetError("chaos --platform kubernetes acts on the nodes' processes: run it as root on the node")
    kube = await KubeClient.connect()
    try:
        obj = await kube.get("BrokerGroup", namespace, group)
        if obj is None:
            raise ChaosTargetError(
                f"--group {group}: no BrokerGroup {group} in namespace {namespace}; "
                f"fix: kubectl -n {namespace} get brokergroups"
            )
        spec = obj.get("spec") or {}
        controller_group = (spec.get("controllerRef") or {}).get("name")
        if not controller_group:
            raise ChaosTargetError(
                f"--group {group}: spec.controllerRef is not set (chaos needs controller mode); "
                "fix: a BrokerGroup with spec.controllerRef, e.g. examples/three-controllers.yaml"
            )
        platform = KubernetesChaos(kube, namespace, group, str(controller_group), int(spec.get("replicas") or 3))
        await platform.discover()
        client = RemotingClient(platform.name_servers, connect_timeout=1.0, request_timeout=2.0)
        try:
            doc = await run_campaign(platform, client, campaign, KUBERNETES_FAMILIES)
        finally:
            await client.close()
        return {"platform": "kubernetes", "namespace": namespace, **doc}
    finally:
        await kube.close()

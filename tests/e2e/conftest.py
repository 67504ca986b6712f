"""End-to-end tests on a real three-node cluster (k8s/cluster.py, docs/node.md "Three nodes"; the one-node cluster of
k8s/node.py with ROCKETMQ_OPERATOR_E2E_NODES=1): real kubelets, containerds, pods, NetworkPolicies enforced.

Part of ``make test`` (which builds the node's binaries and the images first). A missing part (root, Debian
packages, binaries, images) skips them locally and fails them under ``CI=true`` (tests/real_parts.py).
``ROCKETMQ_OPERATOR_E2E=0`` leaves them out of a local run; under ``CI=true`` it is refused.

The ``k8s_node`` fixture starts the node in a temporary state dir (one node per machine: it refuses when one is
already up), imports the images built by ``make images`` and stops everything when the last e2e test is done
(package scope), so that the node's JVMs never compete with the tests that follow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import k8s_scripts
from e2e.e2e_helpers import operator_version, pod_ready
from e2e.e2e_node import SHARED_NODE_ENV, Node, bring_up, install_operator, missing_part, tear_down
from real_parts import IN_CI, missing
from rocketmq_operator.core.lease import LEASE_AGENT_ANNOTATION
from rocketmq_operator.remoting import RemotingClient, RemotingException
from rocketmq_operator.tools.noloss import reports_no_loss_failure

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

if os.environ.get("ROCKETMQ_OPERATOR_E2E", "").strip().lower() in {"0", "false", "no"}:
    if IN_CI:
        raise pytest.UsageError("ROCKETMQ_OPERATOR_E2E=0 is refused under CI=true: CI runs the e2e suite")
    collect_ignore_glob = ["test_*.py"]


harness = k8s_scripts.load("harness")


@pytest.fixture(scope="package")
def k8s_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    shared = os.environ.get(SHARED_NODE_ENV, "").strip()
    if shared:  # brought up, and stopped, by the run (tests/e2e/shared_node.py)
        state = Path(shared)
        yield Node(state_dir=state, env=harness.cluster_env(state))
        return
    lacking = missing_part()
    if lacking:
        missing(lacking)
    state = tmp_path_factory.mktemp("k8s-node").resolve()

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # a CI timeout or `kill` sends SIGTERM: stop the node too

    signal.signal(signal.SIGTERM, interrupted)
    try:
        cluster = bring_up(state)
    except BaseException as exc:
        pytest.fail(f"starting the node failed: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        refused = tear_down(cluster, tmp_path_factory.getbasetemp() / "e2e-diagnostics")
        if refused:  # every e2e path ran as the chart's operator: a refusal is a missing grant (docs/auth.md)
            pytest.fail(f"the chart's RBAC refused the operator {len(refused)} request(s): {refused[0]}", pytrace=False)


ROCKETMQ_NS = "rocketmq"
TOPIC = "orders"  # declared by examples/quickstart.yaml (autoCreate is off)
CONSUMER_GROUP = "orders-readers"


@pytest.fixture(scope="package")
def operator(k8s_node: Node) -> Node:
    """The chart's operator, installed with the locally built image (never pulled)."""
    if not os.environ.get(SHARED_NODE_ENV, "").strip():  # else installed with the shared node
        install_operator(k8s_node)
    return k8s_node


@dataclass
class Group:
    """The quickstart's broker group on the node, and what a user does with it."""

    node: Node
    ns: str = ROCKETMQ_NS
    name: str = "broker-a"
    replicas: int = 3
    controller_group: str = "rocketmq-ctl"

    def status(self) -> dict[str, Any]:
        return dict(self.node.json("-n", self.ns, "get", "bg", self.name).get("status") or {})

    def master(self) -> str | None:
        master = self.status().get("master") or {}
        return master.get("replica")

    def master_offset(self) -> int:
        """The master's commit-log max offset as the operator last observed it (-1 when unknown)."""
        status = self.status()
        master = (status.get("master") or {}).get("replica")
        row = next((r for r in status.get("replicas") or [] if r.get("name") == master), {})
        return int(row.get("maxOffset") if row.get("maxOffset") is not None else -1)

    def wait_master_takes_writes(self, since: int, what: str) -> None:
        """Until the master's offset is past ``since``: the producer's sends reach it (an event, not a sleep)."""
        self.node.wait_for(what, lambda: self.master_offset() > since, timeout=300, interval=1)

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.node.json("-n", self.ns, "get", "pods", "-l", f"rocketmq-operator.dev/group={self.name}")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def healthy(self) -> bool:
        """Every replica Ready, a master, a full SyncStateSet and writable: the state every test starts from."""
        pods = self.pods()
        status = self.status()
        members = (status.get("syncStateSet") or {}).get("members") or []
        return (
            len(pods) == self.replicas
            and all(pod_ready(p) for p in pods.values())
            and bool(status.get("master"))
            and len(members) == self.replicas
            and status.get("writable") is True
            and all(r.get("alive") and r.get("inSync") for r in status.get("replicas") or [])
        )

    def wait_healthy(self, timeout: float = 600) -> float:
        what = f"{self.name}: {self.replicas} Ready replicas, a master, a full SyncStateSet, writable"
        return self.node.wait_for(what, self.healthy, timeout=timeout, interval=1)

    def name_servers(self) -> str:
        data = self.node.json("-n", self.ns, "get", "configmap", f"{self.controller_group}-connection")["data"]
        return str(data["nameServers"])

    def name_servers_route(self, topic: str = TOPIC) -> tuple[bool, str]:
        """Whether every name server pod of the group's ControllerGroup answers a route for ``topic`` that names this
        group's master (broker id 0), asked from the host at each pod's address as a client would after its
        lookup; and what each answered."""
        selector = f"rocketmq-operator.dev/group={self.controller_group}"
        pods = self.node.json("-n", self.ns, "get", "pods", "-l", selector)
        addresses = [f"{p['status']['podIP']}:9876" for p in pods["items"] if (p.get("status") or {}).get("podIP")]

        async def ask(address: str) -> str:
            client = RemotingClient()
            try:
                route = await client.get_route(topic, namesrv=address, timeout=3.0)
            except (RemotingException, OSError) as exc:
                return f"{address}: {exc}"
            finally:
                await client.close()
            masters = [b.broker_addrs.get(0) for b in route.broker_datas if b.broker_name == self.name]
            return f"{address}: master {masters[0]}" if masters and masters[0] else f"{address}: no master"

        answers = [asyncio.run(ask(a)) for a in addresses]
        return bool(answers) and all(": master " in a for a in answers), "; ".join(answers) or "no name server pod"

    def wait_route(self, topic: str = TOPIC) -> float:
        """Until every name server routes ``topic`` to this group's master: after a name server pod starts again it
        knows nothing until the brokers (or the operator) register again, and a producer started before that finds
        no route (the `produce --no-create-topic` of a test gives up after its timeout and retries)."""
        what = f"every name server of {self.controller_group} routing {topic} to {self.name}'s master"
        return self.node.wait_for(what, lambda: self.name_servers_route(topic)[0], timeout=300, interval=1)

    def _events(self) -> list[dict[str, Any]]:
        items = self.node.json("-n", self.ns, "get", "events")["items"]
        return [e for e in items if (e.get("involvedObject") or {}).get("name") == self.name]

    def events(self, reason: str, since: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
        """The group's Events of ``reason``, less those named in ``since`` (an `event_mark`)."""
        return [e for e in self._events() if e.get("reason") == reason and e["metadata"]["name"] not in since]

    def event_mark(self) -> frozenset[str]:
        """The names of the group's Events now: `events(reason, since=mark)` is what came after. By name, not by
        count: an Event that expires meanwhile (the API server's event TTL) would make a count undercount."""
        return frozenset(e["metadata"]["name"] for e in self._events())

    def condition(self, kind: str) -> dict[str, Any]:
        """The group's status condition of ``kind`` ({} when absent)."""
        return next((c for c in self.status().get("conditions") or [] if c.get("type") == kind), {})

    def stop_and_read_back(self, producer: str) -> tuple[dict[str, Any], dict[str, Any], int]:
        """Ctrl-C for ``producer`` (a `produce --report-keys` pod), then, once the group is healthy, every message
        of the topic read back: no body changed and every acknowledged key there (duplicates, failed sends that
        were stored anyway and the sends in flight at Ctrl-C allowed: tools/noloss.py). Returns the producer's
        report, the read-back's, and how many of this producer's own keys were read back."""
        self.interrupt(producer)
        during = self.tool_result(producer)
        self.wait_healthy()
        consumed = self.consume_all(f"consume-after-{producer}", report_keys=True)
        assert consumed["body_mismatches"] == 0, consumed
        loss = reports_no_loss_failure([during], consumed)
        assert loss is None, loss
        read_back = len({k for k in consumed["keys"] if str(k).startswith(f"{producer}-")})
        print(f"{producer}: sent {during['sent']}, acknowledged {during['acknowledged']}; read back {read_back}")
        return during, consumed, read_back

    def master_endpoints(self) -> list[str]:
        slices = self.node.json(
            "-n", self.ns, "get", "endpointslices", "-l", f"kubernetes.io/service-name={self.name}-master"
        )  # fmt: skip
        return sorted(
            a for s in slices["items"] for e in s.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready", True) for a in e["addresses"]
        )  # fmt: skip

    def roles(self) -> dict[str, str | None]:
        return {n: p["metadata"]["labels"].get("rocketmq-operator.dev/role") for n, p in self.pods().items()}

    def tool(
        self,
        pod: str,
        *args: str,
        wait: bool = True,
        timeout: float = 900,
        env: dict[str, str] | None = None,
        secret_mounts: dict[str, str] | None = None,
        node_name: str | None = None,
    ) -> dict[str, Any] | None:
        """Run ``rocketmq-operator ARGS --json`` in a pod of the operator image, inside the cluster (as a user's
        job would: DNS names, the name server's Service). Returns its JSON report when ``wait``."""
        image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{operator_version()}"
        # stderr after the report: `kubectl logs` interleaves the two streams of a container
        script = 'rocketmq-operator "$@" --json 2>/tmp/stderr; rc=$?; cat /tmp/stderr; exit $rc'
        self.node.start_pod(
            self.ns, pod, image, "sh", "-c", script, "sh", *args,
            env=env, secret_mounts=secret_mounts, node_name=node_name,
        )  # fmt: skip
        if not wait:
            return None
        return self.tool_result(pod, timeout=timeout)

    def tool_output(self, pod: str, *args: str, timeout: float = 300) -> str:
        """Run ``rocketmq-operator ARGS`` in a pod of the operator image and return what it printed (for a run
        that is expected to fail with a one-line error)."""
        image = f"ghcr.io/rocketmq-operator/rocketmq-operator:{operator_version()}"
        self.node.start_pod(self.ns, pod, image, "rocketmq-operator", *args)
        return self.node.pod_output(self.ns, pod, timeout=timeout)

    def interrupt(self, pod: str) -> None:
        """Ctrl-C for the tool in a pod: SIGINT to every process but the pod's shell (PID 1) and the exec'd one.
        The tool prints its partial report and exits; a tool that already finished is left alone."""
        self.node.kubectl("-n", self.ns, "exec", pod, "--", "sh", "-c", "kill -INT -1", check=False)

    @contextlib.contextmanager
    def interrupted_on_failure(self, pod: str) -> Iterator[None]:
        """A producer started with ``wait=False`` is stopped when the test fails before it would: left running, it
        keeps adding to the topic the next test of the group counts."""
        try:
            yield
        except BaseException:
            self.interrupt(pod)
            raise

    def tool_result(self, pod: str, timeout: float = 900) -> dict[str, Any]:
        out = self.node.pod_output(self.ns, pod, timeout=timeout)
        start = out.find("{")
        assert start >= 0, f"{pod} printed no JSON report:\n{out}"
        report, _ = json.JSONDecoder().raw_decode(out[start:])  # an error line may follow the report
        return dict(report)

    def produce(
        self,
        pod: str,
        count: int,
        *extra: str,
        wait: bool = True,
        env: dict[str, str] | None = None,
        secret_mounts: dict[str, str] | None = None,
        node_name: str | None = None,
    ) -> dict[str, Any] | None:
        """``rocketmq-operator produce`` COUNT keyed messages to the quickstart's declared topic, from a pod;
        ``env``: e.g. the ACL 2.0 user to sign as (ROCKETMQ_ACCESS_KEY, ROCKETMQ_SECRET_KEY); ``node_name``: the
        node the producer runs on."""
        return self.tool(
            pod, "produce", "--namesrv", self.name_servers(), "--topic", TOPIC, "--count", str(count),
            "--no-create-topic", "--key-prefix", f"{pod}-", *extra,
            wait=wait, env=env, secret_mounts=secret_mounts, node_name=node_name,
        )  # fmt: skip

    def consume_all(
        self, pod: str, env: dict[str, str] | None = None, report_keys: bool = False, topic: str = TOPIC
    ) -> dict[str, Any]:
        """Read every message of the topic from the masters (offsets are not committed), from a pod. The idle
        timeout is also how long a queue may keep failing before the read gives up on it: at load average 60 a
        5 s window ended a read-back short of what was stored. ``report_keys``: the report lists every key read
        (``keys``), for a no-loss check by key (tools/noloss.py)."""
        report = self.tool(
            pod, "consume", "--namesrv", self.name_servers(), "--topic", topic, "--group", CONSUMER_GROUP,
            "--from", "earliest", "--read-from", "master", "--idle-timeout", "15", "--to-end",
            *(["--report-keys"] if report_keys else []), env=env,
        )  # fmt: skip
        assert report is not None
        return report

    def jvm_pid(self, pod: str) -> tuple[int, str]:
        """The host PID of the RocketMQ JVM of ``pod`` and its cgroup file, found from the node (the pod's uid is
        in its cgroup paths)."""
        uid = self.node.json("-n", self.ns, "get", "pod", pod)["metadata"]["uid"]
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cgroup = (proc / "cgroup").read_text()
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if uid in cgroup and any(main in cmdline for main in ROCKETMQ_MAIN_CLASSES):
                return int(proc.name), cgroup
        raise AssertionError(f"no RocketMQ JVM found in the cgroups of pod {pod} (uid {uid})")

    def kill_jvm(self, pod: str) -> int:
        """SIGKILL the RocketMQ JVM of ``pod`` from the node (the container's PID 1 ignores signals sent from
        inside its own PID namespace). Returns the host PID killed."""
        pid, _ = self.jvm_pid(pod)
        os.kill(pid, signal.SIGKILL)
        return pid

    def freeze_container(self, pod: str) -> Path:
        """Freeze the container of ``pod``'s JVM with the cgroup freezer (every process of the container stops
        where it stands, sockets open, as a hung machine or a stuck disk leaves it; nothing in the pod can tell).
        Returns the freezer's state file, for :meth:`thaw`."""
        _, cgroup = self.jvm_pid(pod)
        line = next((x for x in cgroup.splitlines() if x.split(":")[1] == "freezer"), None)
        assert line is not None, f"no freezer cgroup (cgroup v1) for {pod}:\n{cgroup}"
        state = Path("/sys/fs/cgroup/freezer") / line.split(":", 2)[2].lstrip("/") / "freezer.state"
        state.write_text("FROZEN")
        return state

    @staticmethod
    def thaw(state: Path) -> bool:
        """Thaw a container frozen by :meth:`freeze_container`; False when its cgroup is gone (the container was
        removed meanwhile)."""
        try:
            state.write_text("THAWED")
        except OSError:
            return False
        return True


@pytest.fixture
def group_in(operator: Node) -> Callable[..., Group]:
    """A group in another namespace (an example applied beside the quickstart): group_in(ns, **Group fields)."""
    return lambda ns, **fields: Group(operator, ns=ns, **fields)


@pytest.fixture(scope="package")
def quickstart(operator: Node) -> Group:
    """examples/proxy.yaml applied as a user would, healthy: the quickstart (the same ControllerGroup, BrokerGroup,
    Topic and ConsumerGroup) with two Proxies in front of it, which start beside the brokers (tests/e2e/test_proxy.py
    reaches them; the other tests only use the group).

    Set up again, it finds the group there and waits for it to be healthy: a pytest-xdist worker that has not yet
    received its next test tears every fixture down after the current one (it cannot know the next is in the same
    package), so on two workers this runs more than once per run."""
    return applied_healthy(operator, ROCKETMQ_NS, "proxy.yaml")


TIMER_FLUSH_MS = 10_000
"""The e2e groups' timer wheel is written to disk every 10 s instead of RocketMQ's 1 s (`brokerConfig`
timerFlushIntervalMs, as a user may set it): each flush compares the whole ~37 MiB wheel byte by byte, and that
thread took 0.09 of a core in every idle broker pod, about 0.8 of the two cores with the e2e line's nine brokers
(per-thread CPU ticks, 2026-12-02; docs/testing.md). What it changes is how much of the wheel a crashed broker
rebuilds from its timer log, which no e2e test measures."""


def e2e_manifest(text: str) -> str:
    """A manifest (YAML, one or more documents) as the e2e tests apply it: every BrokerGroup with TIMER_FLUSH_MS,
    unless it sets timerFlushIntervalMs itself; the rest as written."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    for doc in docs:
        if doc.get("kind") == "BrokerGroup":
            config = doc.setdefault("spec", {}).setdefault("brokerConfig", {})
            config.setdefault("timerFlushIntervalMs", TIMER_FLUSH_MS)
    return "\n---\n".join(json.dumps(d) for d in docs)


def apply_example(operator: Node, ns: str, path: Path) -> None:
    """examples/... applied in ``ns`` as a user would, through `e2e_manifest`."""
    operator.kubectl("-n", ns, "apply", "-f", "-", input=e2e_manifest(path.read_text(encoding="utf-8")))


def applied_healthy(operator: Node, ns: str, example: str, manifest: str | None = None) -> Group:
    """examples/EXAMPLE (or ``manifest``, a text made from it) applied in namespace ``ns`` (created if absent) as a
    user would (through `e2e_manifest`), once its group is healthy (an example already there is found and waited
    for)."""
    operator.ensure_namespaces(ns)
    if manifest is None:
        apply_example(operator, ns, ROOT / "examples" / example)
    else:
        operator.kubectl("-n", ns, "apply", "-f", "-", input=e2e_manifest(manifest))
    group = Group(operator, ns=ns)
    seconds = group.wait_healthy(timeout=900)
    print(f"{example} in {ns}: apply -> healthy in {seconds:.0f}s")
    return group


def lease_agent_quickstart() -> str:
    """examples/quickstart.yaml with its BrokerGroup opted in to the lease agent (`core.lease.LEASE_AGENT_ANNOTATION`),
    as a user opts in: an annotation on the resource."""
    text = (ROOT / "examples" / "quickstart.yaml").read_text()
    opted = text.replace(
        "kind: BrokerGroup\nmetadata:\n",
        f"kind: BrokerGroup\nmetadata:\n  annotations:\n    {LEASE_AGENT_ANNOTATION}: enabled\n",
    )
    assert opted != text, "the quickstart's BrokerGroup has no metadata block to annotate"
    return opted


SECOND_QUICKSTART_NS = "rocketmq-b"
ROCKETMQ_MAIN_CLASSES = ("BrokerStartup", "ControllerStartup", "NamesrvStartup", "ProxyStartup")


@pytest.fixture(scope="package")
def second_quickstart(operator: Node) -> Group:
    """The quickstart with the lease agent opted in (`lease_agent_quickstart`), in a namespace of its own, healthy.

    One group serves two lines of `make test` (docs/testing.md, "Stage 2"), one after the other: first the node
    faults (marker node_fault: the lease agent's cut-off master, the master's node powered off, a drain), which run
    alone, then, on the second worker, the Spark tests and the image roll, while the first worker's tests fail over,
    fence and change the first quickstart. A quickstart made once instead of twice (its JVMs' start is most of a
    setup's CPU on two cores), and the lease agent on beside every test that uses it: a false fence under the
    suite's load fails them. None of these tests needs the example's placement (the node faults leave two pods on
    one node). Set up again, it finds the group there and waits for it to be healthy (as `quickstart` does)."""
    return applied_healthy(operator, SECOND_QUICKSTART_NS, "quickstart.yaml", lease_agent_quickstart())


def retire_when_done(operator: Node, ns: str, session: pytest.Session) -> None:
    """Namespace ``ns`` retired (`Node.retire_namespace`) once the tests that use it are done, so that its JVMs do
    not idle beside the rest of the run (two quickstarts' brokers were a third of the e2e line's broker CPU while
    the TLS and auth tests ran after them, 2026-11-29). Kept when a test has failed in this process: its pods and
    their logs are the run's diagnostics (`shared_node.py down`). Deleting too early costs time, not truth: a test
    that needs the group again applies it again (`applied_healthy`)."""
    if session.testsfailed:
        print(f"\nnamespace {ns} kept for the diagnostics: {session.testsfailed} test(s) failed in this process")
        return
    operator.retire_namespace(ns)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test here is marked e2e; the node faults (marker node_fault) run first, so that in one process, too,
    no other test's pods are on a node while it is powered off, drained or without its kubelet."""
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)
    items.sort(key=lambda item: HERE in Path(item.path).resolve().parents and not item.get_closest_marker("node_fault"))

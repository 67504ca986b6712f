"""The real one-node cluster the e2e tests run on (k8s/node.py): what a test does with it (`Node`), and bringing it
up with the images and the chart's operator, whether by the package fixture (one pytest process) or once for a
whole run by `tests/e2e/shared_node.py` (scripts/run-tests.sh: the node comes up while the steps beside the
e2e tests start, and any number of pytest workers can share it).

A module of its own, not conftest: the run's script imports it too.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import k8s_scripts
from e2e import timeline
from jvm_flags import TEST_JVM_FLAGS
from rocketmq_operator.api.models import API_GROUP_VERSION

ROOT = Path(__file__).resolve().parents[2]
SHARED_NODE_ENV = "ROCKETMQ_OPERATOR_E2E_NODE"
"""Set by scripts/run-tests.sh to the state directory of a node it brought up (with the operator installed) for
the whole e2e run: the fixtures then use that node and neither start nor stop it."""
NODES_ENV = "ROCKETMQ_OPERATOR_E2E_NODES"
"""How many nodes: 3 by default, k8s/cluster.py's cluster, each node a network namespace, NetworkPolicies enforced
by kube-router (issue 29); 1 is k8s/node.py's one-node cluster."""
DEFAULT_NODES = 3

harness = k8s_scripts.load("harness")
node = k8s_scripts.load("node")
images = k8s_scripts.load("images")
cluster_script = k8s_scripts.load("cluster")


def node_count() -> int:
    return int(os.environ.get(NODES_ENV) or DEFAULT_NODES)


def cluster_nodes() -> list[Any]:
    """The multi-node cluster's node plans, from the machine's record ([] for the one-node cluster)."""
    return list(cluster_script._record_nodes(node._read_record()))


CONTAINER_ENV = shlex.join([f"JAVA_TOOL_OPTIONS={TEST_JVM_FLAGS}"])
"""What every container on the test nodes starts with (k8s/node.py `CONTAINER_ENV`, through containerd's base
runtime spec; an empty `$ROCKETMQ_OPERATOR_NODE_CONTAINER_ENV` turns it off): the RocketMQ and Spark JVMs in the
pods run with the suite's JIT flags, as the local tests' JVMs do (tests/jvm_flags.py: C2 only for the hottest code;
with C1 only, every broker's timer wheel flush took 22% of a core). RocketMQ's behaviour is the same."""

WATCHED_NAMESPACES = ("rocketmq", "rocketmq-b", "rocketmq-auth", "rocketmq-tls", "chaos", "soak")
"""The namespaces the e2e tests (and `make chaos-k8s`, `make soak-k8s`) put groups in; the chart's operator is
installed watching these (`install_operator`)."""
OPERATOR_KINDS = "brokergroups,controllergroups,topics,consumergroups,proxies"
"""The operator's custom resources, as kubectl names them."""

ROLES = ("broker", "controller", "operator", "spark")
LATE_IMAGES = ("spark",)  # imported in the background; the tests that use one wait for it


def wait_for_image(state: Path, role: str) -> None:
    """Return once the node has the image of ``role`` (imported in the background by `bring_up`)."""
    if not cluster_nodes():  # the multi-node cluster has every image from its seed
        node.wait_for_images(state, [images.archive(role)])


# Each file of RocketMQ's log directory in a pod (HOME is the data volume: /data/logs/rocketmqlogs), its last lines.
ROCKETMQ_LOG_TAILS = (
    'cd "$HOME/logs/rocketmqlogs" 2>/dev/null && for f in *.log; do echo "==> $f"; tail -n 1500 "$f"; done'
)


_CRDS = f"apis/{API_GROUP_VERSION}"
# The kinds the tests read, by kubectl's names for them: API path prefix, resource, namespaced.
_READ_KINDS = [
    ("pod pods", "api/v1", "pods", True),
    ("node nodes", "api/v1", "nodes", False),
    ("pv persistentvolume persistentvolumes", "api/v1", "persistentvolumes", False),
    ("pvc persistentvolumeclaim persistentvolumeclaims", "api/v1", "persistentvolumeclaims", True),
    ("cm configmap configmaps", "api/v1", "configmaps", True),
    ("secret secrets", "api/v1", "secrets", True),
    ("svc service services", "api/v1", "services", True),
    ("event events", "api/v1", "events", True),
    ("pdb poddisruptionbudget poddisruptionbudgets", "apis/policy/v1", "poddisruptionbudgets", True),
    ("job jobs", "apis/batch/v1", "jobs", True),
    ("sts statefulset statefulsets", "apis/apps/v1", "statefulsets", True),
    ("netpol networkpolicy networkpolicies", "apis/networking.k8s.io/v1", "networkpolicies", True),
    ("endpointslice endpointslices", "apis/discovery.k8s.io/v1", "endpointslices", True),
    ("bg brokergroup brokergroups", _CRDS, "brokergroups", True),
    ("cg controllergroup controllergroups", _CRDS, "controllergroups", True),
    ("proxy proxies", _CRDS, "proxies", True),
    ("topic topics", _CRDS, "topics", True),
]
READ_KINDS: dict[str, tuple[str, str, bool]] = {
    name: (prefix, resource, namespaced)
    for names, prefix, resource, namespaced in _READ_KINDS
    for name in names.split()
}


def api_read(args: Sequence[str]) -> tuple[str, list[tuple[str, str]]] | None:
    """The API path and query of a plain `kubectl [-n NS | -A] get KIND [NAME] [-l SEL] [--field-selector FS]`,
    or None for anything else (then kubectl runs it)."""
    namespace, everywhere, query, positional = "default", False, [], []
    words = list(args)
    while words:
        word = words.pop(0)
        if word in {"-n", "--namespace"} and words:
            namespace = words.pop(0)
        elif word in {"-A", "--all-namespaces"}:
            everywhere = True
        elif word in {"-l", "--selector"} and words:
            query.append(("labelSelector", words.pop(0)))
        elif word == "--field-selector" and words:
            query.append(("fieldSelector", words.pop(0)))
        elif word.startswith("-"):
            return None
        else:
            positional.append(word)
    if len(positional) not in {2, 3} or positional[0] != "get" or positional[1] not in READ_KINDS:
        return None
    prefix, resource, namespaced = READ_KINDS[positional[1]]
    name = positional[2] if len(positional) == 3 else None
    if name is not None and (everywhere or query):
        return None
    scope = f"/namespaces/{namespace}" if namespaced and not everywhere else ""
    return f"/{prefix}{scope}/{resource}" + (f"/{name}" if name else ""), query


TOOL_POD_CPU = "100m"
"""The CPU request of the tests' one-shot client pods (`Node.start_pod`)."""


@dataclass
class Node:
    state_dir: Path
    env: dict[str, str]
    _api: Any = field(default=None, init=False, repr=False, compare=False)

    def kubectl(self, *args: object, input: str | None = None, check: bool = True, timeout: float = 120) -> str:
        argv = [str(self.state_dir / "bin" / "kubectl"), *map(str, args)]
        res = subprocess.run(argv, input=input, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(map(str, args))} failed: {res.stderr.strip()}")
        return res.stdout

    def json(self, *args: object) -> Any:
        """What `kubectl ARGS -o json` prints. A plain get (`api_read`) is asked of the API server from this
        process: the tests poll every second, and a kubectl process costs about 0.1 CPU-s (measured: 20 calls 2.3
        CPU-s), which two polling e2e workers made a quarter of the machine's CPU."""
        words = [str(a) for a in args]
        read = api_read(words)
        if read is None:
            return json.loads(self.kubectl(*words, "-o", "json"))
        return json.loads(self._api_get(*read, what=f"kubectl {' '.join(words)}"))

    def pod_log(self, ns: str, pod: str) -> str:
        """`kubectl -n NS logs POD` (its one container), read in-process; '' while the pod has no log yet."""
        try:
            return self._api_get(f"/api/v1/namespaces/{ns}/pods/{pod}/log", [], what=f"logs of {ns}/{pod}").decode(
                errors="replace"
            )
        except AssertionError:
            return ""

    def _api_get(self, path: str, query: list[tuple[str, str]], *, what: str) -> bytes:
        from kubernetes import config as kube_config  # the e2e tests' dependency only
        from kubernetes.client.exceptions import ApiException

        if self._api is None:
            self._api = kube_config.new_client_from_config(config_file=self.env["KUBECONFIG"])
        method, url, headers, _, _ = self._api.param_serialize(
            "GET", path, query_params=query, auth_settings=["BearerToken"]
        )
        try:
            response = self._api.call_api(method, url, header_params=headers, _request_timeout=120)
            response.read()
        except ApiException as exc:
            raise AssertionError(f"{what} failed: {exc.status} {exc.reason}: {exc.body}") from None
        if not 200 <= response.status < 300:
            raise AssertionError(f"{what} failed: {response.status}: {response.data!r}")
        return bytes(response.data)

    def ensure_namespaces(self, *names: str) -> None:
        """Each namespace made unless it is there (one apply)."""
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in names]
        self.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(d) for d in docs))

    def delete_namespace(self, ns: str) -> None:
        """A test's namespace emptied (`retire_namespace`), then waited for: gone, or, for a namespace the operator
        watches, without pods."""
        self.retire_namespace(ns)
        if ns in WATCHED_NAMESPACES:
            self.kubectl("-n", ns, "wait", "--for=delete", "pods", "--all", "--timeout=600s", check=False, timeout=660)
        else:
            self.kubectl("wait", "--for=delete", f"namespace/{ns}", "--timeout=600s", check=False, timeout=660)

    def retire_namespace(self, ns: str) -> None:
        """What a test made in ``ns`` gone, without its brokers' graceful stop (7-12 s each, up to the pods' 60 s
        grace period): the test is over and its data thrown away. Its pods' processes are killed at once (their
        JVMs would otherwise idle beside the tests that follow); the rest is the API server's.

        A namespace the operator watches is emptied, not deleted: the chart's Role that lets the operator in lives
        there (namespace scope), and a namespace deleted under it takes the Role while the operator's finalizers
        still hold the groups (docs/auth.md, "Deleting a watched namespace"). So: the custom resources deleted and
        their finalizers dropped (nothing is left for the operator to drain or delete on brokers being thrown
        away), the workloads deleted so that nothing makes a pod again, the pods killed, and the claims, Services,
        ConfigMaps and Secrets deleted, as the namespace's deletion did. Any other namespace is deleted: terminating
        first, so that no controller makes a pod again; then the pods at once."""
        if ns not in WATCHED_NAMESPACES:
            self.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false", check=False)
            self.kubectl("-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force", check=False, timeout=120)
            return
        self.kubectl("-n", ns, "delete", OPERATOR_KINDS, "--all", "--wait=false", check=False)
        for name in self.kubectl("-n", ns, "get", OPERATOR_KINDS, "-o", "name", check=False).split():
            self.kubectl(
                "-n", ns, "patch", name, "--type=merge", "-p", '{"metadata":{"finalizers":null}}', check=False
            )  # fmt: skip
        self.kubectl("-n", ns, "delete", "statefulsets,deployments,jobs", "--all", "--wait=false", check=False)
        self.kubectl("-n", ns, "delete", "pods", "--all", "--grace-period=0", "--force", check=False, timeout=120)
        self.kubectl(
            "-n", ns, "delete", "pvc,services,configmaps,secrets,poddisruptionbudgets,networkpolicies", "--all",
            "--wait=false", check=False,
        )  # fmt: skip

    def helm(self, *args: object, timeout: float = 300) -> str:
        argv = [str(self.state_dir / "bin" / "helm"), *map(str, args)]
        res = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            raise AssertionError(f"helm {' '.join(map(str, args))} failed: {res.stderr.strip()}")
        return res.stdout

    def tag_image(self, source: str, target: str) -> None:
        """A second name for an image in every node's containerd (what a push of a new tag would give)."""
        nodes = cluster_nodes()
        if not nodes:
            node.ctr(self.state_dir, "images", "tag", "--force", source, target)
        for n in nodes:
            cluster_script.ctr(self.state_dir, n, "images", "tag", "--force", source, target)

    def node_address(self) -> str:
        """An address where kube-proxy serves node ports, reachable from this machine."""
        nodes = cluster_nodes()
        return str(nodes[0].ip) if nodes else str(node.NODE_IP)

    def start_pod(
        self,
        ns: str,
        pod: str,
        image: str,
        *command: str,
        env: dict[str, str] | None = None,
        secret_mounts: dict[str, str] | None = None,
        node_name: str | None = None,
    ) -> None:
        """Start a one-shot pod running ``command`` in a locally built image (never pulled); ``secret_mounts``:
        Secret name -> the directory it is mounted at (read-only); ``node_name``: the node it runs on (unset: the
        scheduler's choice). It requests CPU (`TOOL_POD_CPU`), as a client application would: the groups do (the
        examples), and a client without a request is starved by them on a loaded node, its own sends timing out."""
        mounts = sorted((secret_mounts or {}).items())
        overrides: dict[str, Any] = {
            "spec": {
                "volumes": [{"name": f"secret-{i}", "secret": {"secretName": s}} for i, (s, _) in enumerate(mounts)],
                "containers": [
                    {
                        "name": pod,
                        "resources": {"requests": {"cpu": TOOL_POD_CPU}},
                        "volumeMounts": [
                            {"name": f"secret-{i}", "mountPath": d, "readOnly": True} for i, (_, d) in enumerate(mounts)
                        ],
                    }
                ],
            }
        }
        if node_name:
            overrides["spec"]["nodeName"] = node_name
        self.kubectl(
            "-n", ns, "run", pod, "--restart=Never", f"--image={image}", "--image-pull-policy=Never",
            *(f"--env={k}={v}" for k, v in (env or {}).items()),
            "--override-type=strategic", f"--overrides={json.dumps(overrides)}",
            "--command", "--", *command,
        )  # fmt: skip

    def pod_output(self, ns: str, pod: str, timeout: float = 900) -> str:
        """Wait for a one-shot pod to finish, delete it and return its log (``kubectl run -i`` can miss the
        output of a pod that finishes before it attaches)."""

        def done() -> bool:
            phase = (self.json("-n", ns, "get", "pod", pod).get("status") or {}).get("phase")
            return phase in {"Succeeded", "Failed"}

        self.wait_for(f"pod {pod} to finish", done, timeout=timeout, interval=1)
        out = self.kubectl("-n", ns, "logs", pod)
        self.kubectl("-n", ns, "delete", "pod", pod, "--wait=false")
        return out

    def wait_for(
        self,
        what: str,
        predicate: Callable[[], bool],
        timeout: float = 300,
        interval: float = 1,
        detail: Callable[[], str] | None = None,
    ) -> float:
        """Seconds until ``predicate`` held; else an AssertionError with the cluster's state and ``detail()`` (what the
        test's own clients saw)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                waited = time.monotonic() - started
                timeline.record("wait", what, waited)
                return waited
            time.sleep(interval)
        timeline.record("wait timed out", what, time.monotonic() - started)
        pods = self.kubectl("get", "pods", "-A", "-o", "wide", check=False)
        groups = self.kubectl("get", "cg,bg", "-A", "-o", "yaml", check=False)
        log = self.kubectl("-n", "rocketmq-operator", "logs", "deploy/rocketmq-operator", "--tail=60", check=False)
        seen = f"\n{detail()}" if detail is not None else ""
        raise AssertionError(
            f"timed out after {timeout:.0f}s waiting for {what}{seen}\n{pods}\n{groups[-5000:]}\noperator log:\n{log}"
        )

    def save_diagnostics(self, out: Path) -> None:
        """What a bug report needs, kept after the node is gone: resources, events, every container's log."""
        out.mkdir(parents=True, exist_ok=True)
        kinds = "cg,bg,proxies,topics,consumergroups,sts,deployments,pods,pdb,endpointslices"
        (out / "resources.yaml").write_text(self.kubectl("get", kinds, "-A", "-o", "yaml", check=False))
        (out / "events.txt").write_text(self.kubectl("get", "events", "-A", "--sort-by=.lastTimestamp", check=False))
        for pod in self.json("get", "pods", "-A").get("items", []):
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            statuses = {st["name"]: st for st in (pod.get("status") or {}).get("containerStatuses") or []}
            for c in pod["spec"]["containers"]:
                log = self.kubectl("-n", ns, "logs", name, "-c", c["name"], "--tail=2000", check=False)
                (out / f"{ns}.{name}.{c['name']}.log").write_text(log)
                status = statuses.get(c["name"]) or {}
                if status.get("restartCount"):
                    # Why the last instance ended (exit code, reason: a probe's kill is 137/143, a crash its own)
                    # and its output: a restarted container's current log says nothing of it.
                    ended = json.dumps((status.get("lastState") or {}).get("terminated") or {}, sort_keys=True)
                    previous = self.kubectl(
                        "-n", ns, "logs", name, "-c", c["name"], "--previous", "--tail=2000", check=False
                    )
                    (out / f"{ns}.{name}.{c['name']}.previous.log").write_text(
                        f"restarts: {status['restartCount']}; last instance ended: {ended}\n{previous}"
                    )
                if any(role in c.get("image", "") for role in ("rocketmq-broker", "rocketmq-controller")):
                    # RocketMQ logs to files, not to stdout (role changes, HA, elections): their tails.
                    own = self.kubectl(
                        "-n", ns, "exec", name, "-c", c["name"], "--", "sh", "-c", ROCKETMQ_LOG_TAILS,
                        check=False, timeout=60,
                    )  # fmt: skip
                    (out / f"{ns}.{name}.{c['name']}.rocketmqlogs.txt").write_text(own)


def missing_part() -> str | None:
    """What this machine lacks for the node (root, Debian packages, binaries, images, a free machine), or None."""
    if os.geteuid() != 0:
        return "the e2e node needs root (containerd, kubelet, network)"
    need = node.missing_deps()
    if need:
        return f"Debian packages missing for the node: {' '.join(need)} (make k8s-node-deps)"
    bin_dir = node.build_tools.bin_dir()
    absent = [b for b in node.build_tools.NODE_BINARIES if not (bin_dir / b).is_file()]
    if absent:
        return f"binaries not built: {', '.join(absent)} (make k8s-node-tools)"
    for role in ROLES:
        try:
            images.archive(role)
        except (OSError, ValueError, images.ImageError) as exc:
            return f"image {role} not built ({exc}); run `make images`"
    running = node.running_node()  # a stale record (its processes gone) is cleared by node.up
    if running:
        return f"a node is already up on this machine ({running['state_dir']}); stop it first"
    return None


def prepare_seed() -> None:
    """The image seed the nodes of `bring_up` start from, made now (k8s/cluster.py `ensure_seed`; a no-op when it is
    there): scripts/run-tests.sh makes it beside the tests that need no cluster, once the images are built, so that
    bringing the nodes up after them does not wait for the import (32-55 s when an image changed). The one-node
    cluster imports its images while it starts: nothing to make."""
    if node_count() > 1:
        archives = [images.archive(role) for role in ROLES]
        cluster_script.ensure_seed([*node.node_images(node.build_tools.bin_dir()).values(), *archives])


def bring_up(state: Path) -> Node:
    """The node up in ``state`` with the images imported; stopped again if that fails (and the error raised)."""
    os.environ.setdefault(node.CONTAINER_ENV, CONTAINER_ENV)
    try:
        if node_count() > 1:  # every image in the seed the nodes start from
            cluster_script.up(state, node_count(), build=False, images=[images.archive(role) for role in ROLES])
        else:
            # Every image imported while the node starts; the tests need all but the Spark image at once, so it
            # is imported after them (its test, the last, waits for it: `wait_for_image`).
            first = [images.archive(role) for role in ROLES if role not in LATE_IMAGES]
            later = [images.archive(role) for role in ROLES if role in LATE_IMAGES]
            node.up(state, build=False, background_images=first, late_images=later)
            node.wait_for_images(state, first)
    except BaseException:
        cluster_script.down(state, quiet=True)  # either kind: it goes by the machine's record
        raise
    return Node(state_dir=state, env=harness.cluster_env(state))


def install_operator(cluster: Node) -> None:
    """The chart's operator, installed with the locally built image (never pulled), with the chart's default RBAC
    (namespace scope: a Role in each watched namespace and nothing namespaced granted cluster-wide) and the
    namespaces the e2e tests use listed as a user lists theirs, so that every e2e path runs under the least
    privilege the chart gives by default; each namespace made first (a Role needs its namespace)."""
    cluster.kubectl("apply", "--server-side", "-f", ROOT / "crds")
    cluster.ensure_namespaces("rocketmq-operator", *WATCHED_NAMESPACES)
    cluster.helm(
        "install", "rocketmq-operator", ROOT / "charts" / "rocketmq-operator",
        "--namespace", "rocketmq-operator", "--set", "image.pullPolicy=Never",
        "--set", "watchNamespaces={" + ",".join(WATCHED_NAMESPACES) + "}", "--wait", "--timeout", "5m",
    )  # fmt: skip


OPERATOR_ACCOUNT_PREFIX = "system:serviceaccount:rocketmq-operator:"
"""The user the API server knows the chart's operator by (`install_operator`: release namespace rocketmq-operator)."""


def rbac_refusals(state: Path) -> list[str]:
    """Every request of the operator's ServiceAccount that the API server refused (HTTP 403) since the cluster came
    up, one line each (verb, resource, namespace/name, reason), from its audit log (k8s/node.py `AUDIT_POLICY`,
    rotated files included). Read from the API server, not the operator's log: the e2e tests delete and kill the
    operator's pod, and a deleted pod's log is gone with it."""
    refused: list[str] = []
    audit = node.audit_log_path(state)
    for path in sorted(state.glob(f"{audit.stem}*{audit.suffix}")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut by a rotation or a stop
            user = str((event.get("user") or {}).get("username", ""))
            status = event.get("responseStatus") or {}
            if not user.startswith(OPERATOR_ACCOUNT_PREFIX) or status.get("code") != 403:
                continue
            ref = event.get("objectRef") or {}
            resource = "/".join(str(p) for p in (ref.get("resource"), ref.get("subresource")) if p)
            where = "/".join(str(p) for p in (ref.get("namespace"), ref.get("name")) if p) or "(cluster)"
            refused.append(f"{event.get('verb')} {resource} {where}: {status.get('reason') or status.get('message')}")
    return refused


def tear_down(cluster: Node, diagnostics: Path) -> list[str]:
    """Diagnostics saved (never hiding the outcome or keeping the node up), then the node stopped. Returns
    `rbac_refusals`: what the chart's RBAC refused the operator while the tests ran (the caller fails on any)."""
    try:
        cluster.save_diagnostics(diagnostics)
        print(f"\ne2e diagnostics (resources, events, container logs): {diagnostics}")
    except Exception as exc:
        print(f"\nsaving e2e diagnostics failed: {exc}")
    refused = rbac_refusals(cluster.state_dir)
    if refused:
        text = "\n".join(refused)
        diagnostics.mkdir(parents=True, exist_ok=True)
        (diagnostics / "rbac-refusals.txt").write_text(text + "\n", encoding="utf-8")
        print(f"\nthe chart's RBAC refused the operator {len(refused)} request(s), the first ones:\n" + text[:2000])
    cluster_script.down(cluster.state_dir, quiet=True)  # either kind: it goes by the machine's record
    return refused

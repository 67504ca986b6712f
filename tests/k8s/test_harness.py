"""The local control plane is a real Kubernetes: readiness, CEL validation, garbage collection, SSA."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # tests/k8s is not a package; the fixture object comes from its conftest.py
    from tests.k8s.conftest import K8sCluster


@pytest.fixture
def namespace(k8s_cluster: K8sCluster) -> Iterator[str]:
    name = f"harness-{uuid.uuid4().hex[:8]}"
    k8s_cluster.kubectl("create", "namespace", name)
    yield name
    k8s_cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)


def _get(cluster: K8sCluster, *args: str) -> dict[str, Any] | None:
    res = cluster.kubectl("get", *args, "-o", "json", check=False)
    if res.returncode != 0:
        assert "NotFound" in res.stderr, f"kubectl get {' '.join(args)} failed: {res.stderr}"
        return None
    obj: dict[str, Any] = json.loads(res.stdout)
    return obj


def test_readyz_and_versions(k8s_cluster: K8sCluster) -> None:
    assert k8s_cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    versions = json.loads(k8s_cluster.kubectl("version", "-o", "json").stdout)
    # The ldflags stamping makes both sides report the pinned release, not v0.0.0-master.
    assert versions["serverVersion"]["gitVersion"] == k8s_cluster.version
    assert versions["clientVersion"]["gitVersion"] == k8s_cluster.version
    assert k8s_cluster.kubeconfig.is_file()
    assert k8s_cluster.env["KUBECONFIG"] == str(k8s_cluster.kubeconfig)


def test_helm_talks_to_the_cluster(k8s_cluster: K8sCluster) -> None:
    assert k8s_cluster.helm("version", "--short").stdout.startswith("v4.")
    assert k8s_cluster.helm("list", "--all-namespaces", "-o", "json").stdout.strip() == "[]"


CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: celprobes.harness.rocketmq-operator.dev
spec:
  group: harness.rocketmq-operator.dev
  scope: Namespaced
  names: {plural: celprobes, singular: celprobe, kind: CelProbe}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - rule: "self.minInSync <= self.replicas"
                  message: "minInSync must not exceed replicas"
              properties:
                replicas: {type: integer}
                minInSync: {type: integer}
"""


def test_cel_validation_rule_is_enforced(k8s_cluster: K8sCluster, namespace: str) -> None:
    k8s_cluster.kubectl("apply", "-f", "-", input=CRD)
    k8s_cluster.kubectl(
        "wait", "--for=condition=Established", "crd/celprobes.harness.rocketmq-operator.dev", "--timeout=60s"
    )

    def probe(name: str, replicas: int, min_in_sync: int) -> str:
        return (
            "apiVersion: harness.rocketmq-operator.dev/v1\nkind: CelProbe\n"
            f"metadata: {{name: {name}, namespace: {namespace}}}\n"
            f"spec: {{replicas: {replicas}, minInSync: {min_in_sync}}}\n"
        )

    # The resource endpoint can lag the Established condition for a moment.
    k8s_cluster.wait_for(
        "the CelProbe endpoint",
        lambda: k8s_cluster.kubectl("apply", "-f", "-", input=probe("good", 3, 2), check=False).returncode == 0,
    )
    bad = k8s_cluster.kubectl("apply", "-f", "-", input=probe("bad", 1, 2), check=False)
    assert bad.returncode != 0
    assert "minInSync must not exceed replicas" in bad.stderr
    assert _get(k8s_cluster, "celprobe", "bad", "-n", namespace) is None


def test_garbage_collector_deletes_dependents(k8s_cluster: K8sCluster, namespace: str) -> None:
    k8s_cluster.kubectl("create", "configmap", "owner", "-n", namespace, "--from-literal=a=1")
    owner = _get(k8s_cluster, "configmap", "owner", "-n", namespace)
    assert owner is not None
    dependent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "dependent",
            "namespace": namespace,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
            ],
        },
        "data": {"b": "2"},
    }
    k8s_cluster.kubectl("create", "-f", "-", input=json.dumps(dependent))
    k8s_cluster.kubectl("delete", "configmap", "owner", "-n", namespace)
    k8s_cluster.wait_for(
        "the garbage collector to delete the dependent ConfigMap",
        lambda: _get(k8s_cluster, "configmap", "dependent", "-n", namespace) is None,
        timeout=90,
    )


STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: web, namespace: {ns}}}
spec:
  serviceName: web
  replicas: 1
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: c, image: registry.invalid/none:1}}]
"""


def test_statefulset_controller_and_cascading_delete(k8s_cluster: K8sCluster, namespace: str) -> None:
    k8s_cluster.kubectl("apply", "-f", "-", input=STATEFULSET.format(ns=namespace))
    # No kubelet: the pod is created by the StatefulSet controller and stays Pending.
    k8s_cluster.wait_for(
        "the StatefulSet controller to create web-0",
        lambda: _get(k8s_cluster, "pod", "web-0", "-n", namespace) is not None,
        timeout=90,
    )
    pod = _get(k8s_cluster, "pod", "web-0", "-n", namespace)
    assert pod is not None
    assert pod["status"]["phase"] == "Pending"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    k8s_cluster.kubectl("delete", "statefulset", "web", "-n", namespace, "--cascade=background")
    k8s_cluster.wait_for(
        "the garbage collector to delete web-0",
        lambda: _get(k8s_cluster, "pod", "web-0", "-n", namespace) is None,
        timeout=90,
    )


def test_server_side_apply(k8s_cluster: K8sCluster, namespace: str) -> None:
    def cm(value: str) -> str:
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ssa", "namespace": namespace},
                "data": {"key": value},
            }
        )

    k8s_cluster.kubectl("apply", "--server-side", "--field-manager=harness-a", "-f", "-", input=cm("one"))
    obj = _get(k8s_cluster, "configmap", "ssa", "-n", namespace, "--show-managed-fields")
    assert obj is not None
    assert obj["data"] == {"key": "one"}
    managers = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
    assert ("harness-a", "Apply") in managers

    conflict = k8s_cluster.kubectl(
        "apply", "--server-side", "--field-manager=harness-b", "-f", "-", input=cm("two"), check=False
    )
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr.lower()

    k8s_cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=harness-b", "-f", "-", input=cm("two")
    )
    obj = _get(k8s_cluster, "configmap", "ssa", "-n", namespace)
    assert obj is not None and obj["data"] == {"key": "two"}

"""The e2e tests' in-process reads (tests/e2e/e2e_node.api_read): which kubectl gets become API paths, and which
are left to kubectl."""

from __future__ import annotations

import pytest

from e2e.e2e_node import api_read

CRDS = "/apis/rocketmq-operator.dev/v1alpha1"
CASES = [
    (["-n", "rocketmq", "get", "pods", "-l", "a=b"], ("/api/v1/namespaces/rocketmq/pods", [("labelSelector", "a=b")])),
    (["-n", "rocketmq", "get", "bg", "broker-a"], (f"{CRDS}/namespaces/rocketmq/brokergroups/broker-a", [])),
    (["get", "nodes"], ("/api/v1/nodes", [])),
    (["get", "pv", "pv-1"], ("/api/v1/persistentvolumes/pv-1", [])),
    (
        ["get", "pods", "-A", "--field-selector", "spec.nodeName=n1"],
        ("/api/v1/pods", [("fieldSelector", "spec.nodeName=n1")]),
    ),
    (["get", "pods"], ("/api/v1/namespaces/default/pods", [])),
    (
        ["-n", "x", "get", "pdb", "broker-a-master"],
        ("/apis/policy/v1/namespaces/x/poddisruptionbudgets/broker-a-master", []),
    ),
    (
        ["-n", "x", "get", "endpointslices", "-l", "k=v"],
        ("/apis/discovery.k8s.io/v1/namespaces/x/endpointslices", [("labelSelector", "k=v")]),
    ),
    # Left to kubectl: other verbs, unknown kinds, several kinds, flags it does not know, a name with a selector.
    (["-n", "x", "logs", "pod"], None),
    (["-n", "x", "get", "widgets"], None),
    (["get", "cg,bg", "-A"], None),
    (["-n", "x", "get", "pods", "--sort-by=.metadata.name"], None),
    (["-n", "x", "get", "pod", "p", "-l", "a=b"], None),
    (["-n", "x", "get"], None),
]


@pytest.mark.parametrize(("args", "expected"), CASES)
def test_api_read(args: list[str], expected: object) -> None:
    assert api_read(args) == expected

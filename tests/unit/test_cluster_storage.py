"""The test cluster's storage as plain data (`k8s/cluster.py` volumes, `k8s/resizer.py` decisions): what a claim
of the expandable class needs from the back end, refusals included. The real growth is the e2e test
`tests/e2e/test_storage.py`."""

from __future__ import annotations

import json
from typing import Any

import pytest

import k8s_scripts

cluster = k8s_scripts.load("cluster")
resizer = k8s_scripts.load("resizer")

GI = 2**30


def claim(request: str, *, capacity: str = "10Gi", allocated: str | None = None, pending: bool = False,
          cls: str = "rmq-expandable", phase: str = "Bound") -> dict[str, Any]:  # fmt: skip
    status: dict[str, Any] = {"phase": phase, "capacity": {"storage": capacity}}
    if allocated:
        status["allocatedResources"] = {"storage": allocated}
    if pending:
        status["allocatedResourceStatuses"] = {"storage": "NodeResizePending"}
    return {
        "metadata": {"namespace": "rocketmq", "name": "data-broker-a-0"},
        "spec": {"storageClassName": cls, "volumeName": "rmq-pv0", "resources": {"requests": {"storage": request}}},
        "status": status,
    }


def volume(capacity: str) -> dict[str, Any]:
    return {"spec": {"capacity": {"storage": capacity}, "local": {"path": "/dev/loop3"}}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10Gi", 10 * GI), ("11811160064", 11 * GI), ("1.5Gi", 3 * GI // 2), ("512Mi", 2**29), ("1G", 10**9),
     ("", None), (None, None), ("10Xi", None), ("-1Gi", None), ("ten", None)],
)  # fmt: skip
def test_quantities_in_bytes(text: str | None, expected: int | None) -> None:
    assert resizer.parse_bytes(text) == expected


@pytest.mark.parametrize(
    ("the_claim", "the_volume", "expected"),
    [
        # a larger request: grow the volume and mark the claim for the kubelet
        (claim("11Gi"), volume("10Gi"), (True, True)),
        # the volume grew, the mark was lost (a failed status patch): mark again, do not grow again
        (claim("11Gi"), volume("11Gi"), (False, True)),
        # marked and waiting for the kubelet: nothing more
        (claim("11Gi", allocated="11Gi", pending=True), volume("11Gi"), None),
        # the kubelet grew the file system (capacity reached): done
        (claim("11Gi", capacity="11Gi", allocated="11Gi"), volume("11Gi"), None),
        # nothing asked
        (claim("10Gi"), volume("10Gi"), None),
        # a smaller request never shrinks a volume (the API refuses it anyway)
        (claim("5Gi"), volume("10Gi"), None),
        # not ours: another class, an unbound claim, no volume
        (claim("11Gi", cls="standard"), volume("10Gi"), None),
        (claim("11Gi", phase="Pending"), volume("10Gi"), None),
        (claim("11Gi"), None, None),
        # an unreadable size is left alone, never guessed
        (claim("lots"), volume("10Gi"), None),
    ],
)
def test_what_a_claim_needs_from_the_back_end(
    the_claim: dict[str, Any], the_volume: dict[str, Any] | None, expected: tuple[bool, bool] | None
) -> None:
    step = resizer.plan(the_claim, the_volume)
    if expected is None:
        assert step is None
    else:
        assert step is not None and (step.grow_volume, step.mark_claim) == expected
        assert (step.size, step.size_bytes) == ("11Gi", 11 * GI)


def test_a_device_outside_the_state_dir_is_never_grown(tmp_path: Any) -> None:
    with pytest.raises(RuntimeError, match="not touched"):
        resizer.grow(tmp_path, "/dev/sda", 11 * GI)  # not a loop device


def test_the_default_class_allows_expansion_and_every_node_may_mount_every_volume() -> None:
    nodes = cluster.plan(3)
    items = json.loads(cluster.local_volumes(["/dev/loop7", "/dev/loop8"], nodes))["items"]
    storage_class, *volumes = items
    assert storage_class["kind"] == "StorageClass" and storage_class["allowVolumeExpansion"] is True
    assert storage_class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert storage_class["volumeBindingMode"] == "WaitForFirstConsumer"
    assert [v["spec"]["local"] for v in volumes] == [
        {"path": "/dev/loop7", "fsType": "xfs"},
        {"path": "/dev/loop8", "fsType": "xfs"},
    ]
    for v in volumes:
        assert v["spec"]["storageClassName"] == resizer.EXPANDABLE_CLASS == cluster.EXPANDABLE_CLASS
        assert v["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        assert v["spec"]["accessModes"] == ["ReadWriteOnce", "ReadWriteMany"]  # Spark's shared checkpoint too
        (term,) = v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"][0]["values"] == ["rmq-n1", "rmq-n2", "rmq-n3"]
        assert resizer.parse_bytes(v["spec"]["capacity"]["storage"]) == cluster.VOLUME_BYTES

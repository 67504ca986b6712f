"""The storage expansion decision, table-driven, every refusal included (core.storage)."""

from __future__ import annotations

import pytest

from rocketmq_operator.core.storage import (
    ClaimFacts,
    ClaimPatch,
    ClassFacts,
    StorageFacts,
    plan_storage,
    refused_patch,
)

FAST = ClassFacts("fast", allows_expansion=True)
FIXED = ClassFacts("fixed", allows_expansion=False)
SECRET = ClassFacts("secret", allows_expansion=None, error="HTTP 403: forbidden")
CLASSES = {c.name: c for c in (FAST, FIXED, SECRET)}


def claim(
    i: int, requested: str = "10Gi", capacity: str | None = None, cls: str | None = "fast", **kw: object
) -> ClaimFacts:
    return ClaimFacts(
        name=f"data-broker-a-{i}",
        requested=requested,
        capacity=capacity if capacity is not None else requested,
        storage_class=cls,
        **kw,  # type: ignore[arg-type]
    )


def facts(*claims: ClaimFacts, desired: str = "20Gi", reported: bool = False) -> StorageFacts:
    return StorageFacts(
        desired=desired, claims=claims or (claim(0), claim(1), claim(2)), classes=CLASSES, reported=reported
    )


CASES = [
    # name, facts, patched claims, status, reason, words the message must have
    ("grow-expandable", facts(), [0, 1, 2], "False", "Resizing", ["0/3 PVCs have 20Gi", "patched from 10Gi"]),
    (
        "static-volume-no-class",
        facts(claim(0, cls=None), claim(1, cls=""), claim(2, cls=None)),
        [],
        "False",
        "ExpansionNotSupported",
        ["spec.storage.size 20Gi", "data-broker-a-0, data-broker-a-1", "no StorageClass", "rule:", "fix:", "10Gi"],
    ),
    (
        "class-not-expandable",
        facts(claim(0, cls="fixed"), claim(1, cls="fixed"), claim(2, cls="fixed")),
        [],
        "False",
        "ExpansionNotSupported",
        ["StorageClass fixed", "allowVolumeExpansion: true", "fix: set allowVolumeExpansion"],
    ),
    (
        "class-missing",
        facts(claim(0, cls="gone"), claim(1, cls="gone"), claim(2, cls="gone")),
        [],
        "False",
        "ExpansionNotSupported",
        ["StorageClass gone", "does not exist"],
    ),
    (
        "class-unreadable",
        facts(claim(0, cls="secret"), claim(1, cls="secret"), claim(2, cls="secret")),
        [],
        "False",
        "StorageClassUnreadable",
        ["HTTP 403", "rbac.clusterRead"],
    ),
    (
        "mixed-classes-grow-what-can",
        facts(claim(0), claim(1, cls="fixed"), claim(2)),
        [0, 2],
        "False",
        "ExpansionNotSupported",
        ["StorageClass fixed of PVC data-broker-a-1"],
    ),
    (
        "shrink-refused",
        facts(desired="5Gi"),
        [],
        "False",
        "ShrinkRefused",
        ["spec.storage.size 5Gi", "never shrinks", "fix: set spec.storage.size back to 10Gi"],
    ),
    (
        "shrink-refused-even-where-others-grow",
        facts(claim(0, "30Gi"), claim(1), claim(2)),
        [],
        "False",
        "ShrinkRefused",
        ["data-broker-a-0 (30Gi)"],
    ),
    (
        "unbound-claim-waits",
        facts(claim(0, bound=False, capacity=""), claim(1, "20Gi"), claim(2, "20Gi")),
        [],
        "False",
        "Resizing",
        ["2/3 PVCs", "not bound yet"],
    ),
    (
        "file-system-resize-pending",
        facts(claim(0, "20Gi", "10Gi", resize_pending=True), claim(1, "20Gi"), claim(2, "20Gi")),
        [],
        "False",
        "Resizing",
        ["2/3 PVCs have 20Gi", "FileSystemResizePending", "restart pod broker-a-0"],
    ),
    (
        "volume-being-resized",
        facts(claim(0, "20Gi", "10Gi", resizing=True), claim(1, "20Gi"), claim(2, "20Gi")),
        [],
        "False",
        "Resizing",
        ["being resized"],
    ),
    (
        "resize-failed",
        facts(claim(0, "20Gi", "10Gi", resize_failed="ControllerResizeInfeasible"), claim(1, "20Gi"), claim(2, "20Gi")),
        [],
        "False",
        "ResizeFailed",
        ["ControllerResizeInfeasible", "kubectl describe pvc data-broker-a-0"],
    ),
    (
        "resized",
        facts(claim(0, "20Gi"), claim(1, "20Gi"), claim(2, "20Gi"), reported=True),
        [],
        "True",
        "Resized",
        ["every PVC (3) has 20Gi"],
    ),
    (
        "a-larger-volume-than-asked-is-done",
        facts(claim(0, "20Gi", "50Gi"), claim(1, "20Gi", "21Gi"), claim(2, "20Gi"), reported=True),
        [],
        "True",
        "Resized",
        [],
    ),
    ("never-resized-says-nothing", facts(claim(0, "20Gi"), claim(1, "20Gi"), claim(2, "20Gi")), [], None, "", []),
    (
        "a-new-claim-not-bound-yet-says-nothing",
        facts(claim(0, "20Gi"), claim(1, "20Gi"), claim(2, "20Gi", capacity="", bound=False)),
        [],
        None,
        "",
        [],
    ),
    (
        "a-scaled-out-claim-from-the-old-template-grows",
        facts(claim(0, "20Gi"), claim(1, "20Gi"), claim(2, "10Gi"), claim(3, "10Gi"), reported=True),
        [2, 3],
        "False",
        "Resizing",
        ["2/4 PVCs have 20Gi"],
    ),
]


@pytest.mark.parametrize(("name", "given", "patched", "status", "reason", "words"), CASES, ids=[c[0] for c in CASES])
def test_plan_storage(
    name: str, given: StorageFacts, patched: list[int], status: str | None, reason: str, words: list[str]
) -> None:
    plan = plan_storage(given)
    assert [p.claim for p in plan.patches] == [f"data-broker-a-{i}" for i in patched]
    assert all(p.size == given.desired for p in plan.patches)
    assert (plan.status, plan.reason) == (status, reason), plan.message
    for word in words:
        assert word in plan.message, (word, plan.message)
    if status == "False" and reason != "Resizing":
        assert "rule:" in plan.message and "fix:" in plan.message, plan.message


def test_no_claims_or_an_unreadable_size_decide_nothing() -> None:
    assert plan_storage(StorageFacts("20Gi", ())) == plan_storage(StorageFacts("lots", (claim(0),)))
    assert plan_storage(StorageFacts("20Gi", ())).status is None


def test_a_refused_patch_names_the_claim_the_error_and_the_fix() -> None:
    plan = refused_patch(ClaimPatch("data-broker-a-0", "20Gi", "10Gi"), "HTTP 422: only dynamically provisioned pvc")
    assert (plan.status, plan.reason, plan.patches) == ("False", "ResizeRefused", ())
    for word in ("data-broker-a-0", "HTTP 422", "rule:", "fix:", "back to 10Gi"):
        assert word in plan.message

"""Storage expansion of a group's PersistentVolumeClaims: which claims to grow, and what status says. Pure.

Contract: `plan_storage(facts)` takes the desired `spec.storage.size`, each replica's PVC as read (its request,
capacity, class, phase and resize state) and what each StorageClass allows, and returns a `StoragePlan`: the
claims to patch (`spec.resources.requests.storage` = the desired size) and the `StorageResized` condition, or
no condition when nothing was ever resized and nothing needs to be. Rules (as Strimzi and CloudNativePG do):

* A StatefulSet's volumeClaimTemplates are immutable, so existing claims are grown in place, one patch each; the
  template keeps its size (`platforms.kubernetes.reconcile.keep_claim_sizes`).
* Only a bound claim whose StorageClass sets `allowVolumeExpansion: true` is patched. A claim without a class (a
  statically provisioned volume, such as the hostPath PVs of the test node), whose class does not exist or does
  not allow expansion is left alone, and the condition says so (`ExpansionNotSupported`) with the fix. A class
  that cannot be read is `StorageClassUnreadable`: nothing is patched on a guess.
* A claim never shrinks: a size below a claim's request is refused (`ShrinkRefused`) and nothing is patched.
* Progress is read from the claim: its capacity reaches the request once the volume and its file system have
  grown. `FileSystemResizePending` means the volume grew and the kubelet grows the file system when it next
  mounts it (drivers that expand offline only need the pod restarted); an `...Infeasible` allocated-resource
  status or a `...ResizeError` condition is a failed resize (`ResizeFailed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocketmq_operator.api.quantity import QuantityError, parse_bytes
from rocketmq_operator.core.conditions import ConditionStatus

CONDITION = "StorageResized"
CLUSTER_READ_FIX = "let the operator read StorageClasses and Nodes (chart value rbac.clusterRead: true)"


@dataclass(frozen=True)
class ClaimFacts:
    name: str  # the PVC, e.g. data-broker-a-0
    requested: str | None  # spec.resources.requests.storage
    capacity: str | None = None  # status.capacity.storage
    storage_class: str | None = None  # spec.storageClassName (None or "": no class)
    bound: bool = True  # status.phase Bound: an unbound claim cannot be resized
    resize_pending: bool = False  # condition FileSystemResizePending
    resizing: bool = False  # condition Resizing, or allocatedResourceStatuses ...ResizeInProgress
    resize_failed: str | None = None  # why the last resize failed (...Infeasible, ...ResizeError)


@dataclass(frozen=True)
class ClassFacts:
    name: str
    allows_expansion: bool | None  # allowVolumeExpansion; None: unknown (see `error`, or not found)
    error: str = ""  # why it could not be read (an API error); "" with None: the class does not exist


@dataclass(frozen=True)
class StorageFacts:
    desired: str  # spec.storage.size
    claims: tuple[ClaimFacts, ...]
    classes: Mapping[str, ClassFacts] = field(default_factory=dict)
    reported: bool = False  # a StorageResized condition is in status already


@dataclass(frozen=True)
class ClaimPatch:
    claim: str
    size: str
    from_size: str | None


@dataclass(frozen=True)
class StoragePlan:
    patches: tuple[ClaimPatch, ...] = ()
    status: ConditionStatus | None = None  # None: nothing to report (the condition is left as it is)
    reason: str = ""
    message: str = ""


def _bytes(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return parse_bytes(text)
    except QuantityError:
        return None  # a form the operator never writes (e.g. a provisioner's exponent): unknown


def _names(claims: Sequence[ClaimFacts]) -> str:
    return ", ".join(c.name for c in claims)


def _progress(claim: ClaimFacts, desired: str) -> str:
    pod = claim.name.removeprefix("data-")
    if not claim.bound:
        return f"{claim.name}: not bound yet (resized once bound)"
    if claim.resize_pending:
        return (
            f"{claim.name}: volume grown, file system resize pending (FileSystemResizePending: the kubelet grows it "
            f"when it mounts the volume again; restart pod {pod} if its driver expands offline only)"
        )
    if claim.resizing:
        return f"{claim.name}: volume being resized to {desired}"
    return f"{claim.name}: capacity {claim.capacity or 'unknown'}, waiting for the resize controller"


def classes_needed(desired: str, claims: Sequence[ClaimFacts]) -> set[str]:
    """The StorageClasses `plan_storage` must know: those of the claims below the desired size (the others'
    classes do not matter, so a settled group reads none)."""
    want = _bytes(desired)
    if want is None:
        return set()
    return {c.storage_class for c in claims if c.storage_class and (_bytes(c.requested) or want) < want}


@dataclass
class _Claims:
    """The group's claims sorted by what a resize to the desired size meets."""

    shrink: list[ClaimFacts] = field(default_factory=list)
    no_class: list[ClaimFacts] = field(default_factory=list)
    missing: dict[str, list[ClaimFacts]] = field(default_factory=dict)
    refused: dict[str, list[ClaimFacts]] = field(default_factory=dict)
    unreadable: dict[str, list[ClaimFacts]] = field(default_factory=dict)
    failed: list[ClaimFacts] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    patches: list[ClaimPatch] = field(default_factory=list)
    done: int = 0
    total: int = 0


def _sort_claims(facts: StorageFacts, desired: int) -> _Claims:
    out = _Claims()
    for claim in facts.claims:
        requested = _bytes(claim.requested)
        if requested is None or (requested == desired and not claim.bound):
            continue  # a new claim of the desired size, not bound yet, has nothing to grow
        out.total += 1
        if requested > desired:
            out.shrink.append(claim)
        elif requested < desired:
            cls = facts.classes.get(claim.storage_class or "")
            if not claim.storage_class:
                out.no_class.append(claim)
            elif cls is None or (cls.allows_expansion is None and not cls.error):
                out.missing.setdefault(claim.storage_class, []).append(claim)
            elif cls.allows_expansion is None:
                out.unreadable.setdefault(f"{claim.storage_class} ({cls.error})", []).append(claim)
            elif not cls.allows_expansion:
                out.refused.setdefault(claim.storage_class, []).append(claim)
            elif not claim.bound:
                out.waiting.append(_progress(claim, facts.desired))
            else:
                out.patches.append(ClaimPatch(claim.name, facts.desired, claim.requested))
                out.waiting.append(f"{claim.name}: patched from {claim.requested} to {facts.desired}")
        elif claim.resize_failed:
            out.failed.append(claim)
        elif (_bytes(claim.capacity) or 0) < desired or claim.resize_pending:
            out.waiting.append(_progress(claim, facts.desired))
        else:
            out.done += 1
    return out


def plan_storage(facts: StorageFacts) -> StoragePlan:
    """The patches and the `StorageResized` condition for one observation; see the module docstring."""
    desired = _bytes(facts.desired)
    if desired is None or not facts.claims:
        return StoragePlan()
    claims = _sort_claims(facts, desired)
    shrink, no_class, missing, refused = claims.shrink, claims.no_class, claims.missing, claims.refused
    unreadable, failed, waiting, patches = claims.unreadable, claims.failed, claims.waiting, claims.patches
    done, total = claims.done, claims.total
    have = f"{done}/{total} PVCs have {facts.desired}"
    size = f"spec.storage.size {facts.desired}"
    if shrink:
        largest = max(shrink, key=lambda c: _bytes(c.requested) or 0).requested
        return StoragePlan(
            (),
            "False",
            "ShrinkRefused",
            f"{size} is smaller than PVC {_names(shrink)} ({largest}): nothing is patched; rule: a "
            f"PersistentVolumeClaim never shrinks (Kubernetes refuses it, and the stored messages may not fit); "
            f"fix: set spec.storage.size back to {largest} or more",
        )
    not_supported = (
        [f"PVC {_names(no_class)} has no StorageClass (a statically provisioned volume)"] if no_class else []
    )
    not_supported += [f"StorageClass {name} of PVC {_names(cs)} does not exist" for name, cs in sorted(missing.items())]
    not_supported += [
        f"StorageClass {name} of PVC {_names(cs)} does not set allowVolumeExpansion: true"
        for name, cs in sorted(refused.items())
    ]
    current = next(
        (c.requested for group in (no_class, *missing.values(), *refused.values()) for c in group), facts.desired
    )
    if not_supported:
        return StoragePlan(
            tuple(patches),
            "False",
            "ExpansionNotSupported",
            f"{size}: {'; '.join(not_supported)}: not resized ({have}); rule: a PVC is grown in place only when its "
            "StorageClass sets allowVolumeExpansion: true (a StatefulSet's claim templates are immutable); fix: set "
            "allowVolumeExpansion: true on the class if its provisioner can expand volumes, or grow a static "
            f"PersistentVolume and its PVC by hand, or set spec.storage.size back to {current}",
        )
    if unreadable:
        parts = "; ".join(f"StorageClass {name} of PVC {_names(cs)}" for name, cs in sorted(unreadable.items()))
        return StoragePlan(
            tuple(patches),
            "False",
            "StorageClassUnreadable",
            f"{size}: cannot read {parts}: not resized ({have}); rule: a PVC is patched only when its StorageClass "
            f"is known to allow expansion; fix: {CLUSTER_READ_FIX}",
        )
    if failed:
        return StoragePlan(
            tuple(patches),
            "False",
            "ResizeFailed",
            f"{size}: the resize of PVC {_names(failed)} failed ({failed[0].resize_failed}) ({have}); rule: the "
            f"volume's driver grows it, the operator only asks; fix: see `kubectl describe pvc {failed[0].name}` "
            "(its events name the cause), or set spec.storage.size back to the PVC's capacity",
        )
    if waiting:
        return StoragePlan(tuple(patches), "False", "Resizing", f"{have}; " + "; ".join(waiting))
    if not facts.reported:
        return StoragePlan()  # nothing was ever resized: no condition
    return StoragePlan((), "True", "Resized", f"every PVC ({total}) has {facts.desired} ({size})")


def refused_patch(patch: ClaimPatch, error: str) -> StoragePlan:
    """The condition when the API server refuses a planned patch (422: the class or the volume cannot grow after
    all; 403: the operator may not patch PVCs)."""
    return StoragePlan(
        (),
        "False",
        "ResizeRefused",
        f"spec.storage.size {patch.size}: the API server refused growing PVC {patch.claim} from {patch.from_size} "
        f"({error}); rule: a PVC is grown in place only where its StorageClass and driver allow expansion and the "
        f"operator may patch PVCs; fix: see `kubectl describe pvc {patch.claim}`, grant the operator patch on "
        f"persistentvolumeclaims if the error is 403, or set spec.storage.size back to {patch.from_size}",
    )

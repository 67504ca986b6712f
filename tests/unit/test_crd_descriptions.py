"""`kubectl explain` has something to say about every field: each property of every generated CRD schema (spec
and status, nested objects, array items and map values) carries a description."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketmq_operator.api.crd import all_crds, crd_file_name

ROOT = Path(__file__).resolve().parents[2]


def undescribed(node: dict[str, Any], path: str, *, root: bool = False) -> list[str]:
    """Paths of the properties under ``node`` (an OpenAPI v3 schema) with no or an empty description. A root's
    `metadata` is left out: the API server refuses a CRD whose metadata schema says more than its type (it
    describes ObjectMeta itself)."""
    missing: list[str] = []
    for name, prop in (node.get("properties") or {}).items():
        if root and name == "metadata":
            continue
        where = f"{path}.{name}"
        if not str(prop.get("description") or "").strip():
            missing.append(where)
        missing.extend(undescribed(prop, where))
    if isinstance(node.get("items"), dict):
        missing.extend(undescribed(node["items"], f"{path}[]"))
    if isinstance(node.get("additionalProperties"), dict):
        missing.extend(undescribed(node["additionalProperties"], f"{path}{{}}"))
    return missing


def test_the_walk_finds_a_missing_description() -> None:
    schema = {"properties": {"a": {"description": "x", "properties": {"b": {"type": "string"}}},
                             "c": {"type": "array", "description": "y",
                                   "items": {"properties": {"d": {"description": " "}}}}}}  # fmt: skip
    assert undescribed(schema, "spec") == ["spec.a.b", "spec.c[].d"]


@pytest.mark.parametrize("crd", all_crds(), ids=lambda c: str(c["spec"]["names"]["kind"]))
def test_every_crd_property_has_a_description(crd: dict[str, Any]) -> None:
    for version in crd["spec"]["versions"]:
        root = version["schema"]["openAPIV3Schema"]
        missing = undescribed(root, crd["spec"]["names"]["kind"], root=True)
        assert root["properties"]["metadata"] == {"type": "object"}  # anything more is refused by the API server
        assert not missing, (
            f"{len(missing)} propert(ies) without a description (`kubectl explain` shows nothing): "
            f"{', '.join(missing)}; fix: Field(description=...) in api/models.py, then "
            "`rocketmq-operator crds --write crds && cp crds/*.yaml charts/rocketmq-operator/crds/`"
        )


@pytest.mark.parametrize("directory", ["crds", "charts/rocketmq-operator/crds"])
def test_the_shipped_crd_files_have_every_description(directory: str) -> None:
    for crd in all_crds():
        shipped = yaml.safe_load((ROOT / directory / crd_file_name(crd)).read_text(encoding="utf-8"))
        for version in shipped["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]
            assert undescribed(root, shipped["spec"]["names"]["kind"], root=True) == []
            assert root["properties"]["metadata"] == {"type": "object"}

"""The cluster scripts under ``k8s/`` (not a package: run as scripts too), loaded once per test process.

Each is loaded under the module name the scripts themselves look up (``node.py`` reuses the harness it finds
in ``sys.modules``), so the harness's record of the processes it started is one, whoever loaded it first.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODULE_NAMES = {
    "harness": "rocketmq_operator_k8s_harness",
    "node": "node",
    "images": "rocketmq_operator_k8s_images",
    "cluster": "rocketmq_operator_k8s_cluster",
    "resizer": "rocketmq_operator_k8s_resizer",
}


def load(script: str) -> Any:
    """``k8s/<script>.py`` as a module, loaded on first use."""
    name = MODULE_NAMES[script]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "k8s" / f"{script}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

"""A pyspark session in local mode for the integration tests, with the rocketmq source registered.

`require_pyspark()` skips (fails under CI=true) without the spark extra; `local_spark(app, cores)` yields a
session bound to 127.0.0.1 without the UI and stops it afterwards."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from real_parts import missing


def require_pyspark() -> None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        missing(f"pyspark/pyarrow missing ({exc}); install the spark extra: pip install -e '.[spark]'")


@contextmanager
def local_spark(app: str, cores: int = 2) -> Iterator[Any]:
    require_pyspark()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from rocketmq_operator.spark import register

    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    try:
        yield session
    finally:
        session.stop()

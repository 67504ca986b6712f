"""Spark data source ``rocketmq`` for RocketMQ 5 broker groups (the ``rocketmq-operator[spark]`` extra).

Usage::

    from rocketmq_operator.spark import register
    register(spark)                       # spark.dataSource.register(RocketMQDataSource)
    df = (spark.readStream.format("rocketmq")
          .option("nameServers", "ns-0:9876;ns-1:9876").option("topic", "orders").load())

Contract:

* Importing this package imports neither pyspark nor pyarrow (the CLI imports :mod:`.cli` from here);
  :func:`register` and the ``RocketMQDataSource`` attribute import :mod:`.source`, which needs
  pyspark >= 4.2 and pyarrow.
* Executors import only this package, :mod:`rocketmq_operator.remoting` (stdlib only), pyarrow and pyspark:
  never kopf, kubernetes or the platforms (checked by import-linter).
* Modules: :mod:`.options` (option parsing), :mod:`.offsets` (offset JSON), :mod:`.planning` (partitions,
  admission control), :mod:`.metadata` (driver lookups), :mod:`.executor` (pulls -> Arrow), :mod:`.schema`,
  :mod:`.source` (the pyspark classes), :mod:`.bench` and :mod:`.cli` (``rocketmq-operator bench spark``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["RocketMQDataSource", "register"]


def register(spark: Any) -> None:
    """Register the ``rocketmq`` format with a SparkSession (``spark.dataSource.register``)."""
    from .source import RocketMQDataSource

    spark.dataSource.register(RocketMQDataSource)


def __getattr__(name: str) -> Any:
    if name == "RocketMQDataSource":
        from .source import RocketMQDataSource

        return RocketMQDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

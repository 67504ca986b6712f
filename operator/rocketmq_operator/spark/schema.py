"""The fixed output schema of the ``rocketmq`` Spark source, as a Spark ``StructType`` and an Arrow schema.

Contract: one column table (:data:`COLUMNS`) defines both forms; :func:`arrow_schema` equals what pyspark's
``to_arrow_schema(spark_schema(), timezone="UTC")`` gives (the Python data source refuses record batches
whose schema differs), and :func:`ddl` is the same schema as a DDL string.

=================== ====================== ========= =================================================
column              Spark type             nullable  content
=================== ====================== ========= =================================================
``topic``           string                 no        topic of the message
``brokerName``      string                 no        broker group (replica group) holding the queue
``queueId``         int                    no        queue id within the broker group
``queueOffset``     long                   no        consume-queue offset (the position in the queue)
``msgId``           string                 no        client message id (``UNIQ_KEY``), else offset id
``keys``            string                 yes       ``KEYS`` property (several keys space-separated)
``tags``            string                 yes       ``TAGS`` property
``body``            binary                 no        body, decompressed
``bornTimestamp``   timestamp              no        producer's send time
``storeTimestamp``  timestamp              no        time the master stored it
``properties``      map<string,string>     yes       all properties (null with includeProperties=false)
``servedByBrokerId`` long                  no        broker id that served the pull: 0 = master, else the
                                                     slave's id in the route (controller-assigned)
=================== ====================== ========= =================================================

pyspark and pyarrow are imported inside the functions, so importing this module needs neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("topic", "string", False),
    ("brokerName", "string", False),
    ("queueId", "int", False),
    ("queueOffset", "long", False),
    ("msgId", "string", False),
    ("keys", "string", True),
    ("tags", "string", True),
    ("body", "binary", False),
    ("bornTimestamp", "timestamp", False),
    ("storeTimestamp", "timestamp", False),
    ("properties", "map<string,string>", True),
    ("servedByBrokerId", "long", False),
)
COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in COLUMNS)


def ddl() -> str:
    """The schema as a DDL string (``NOT NULL`` where the column is never null)."""
    return ", ".join(f"{name} {kind}{'' if nullable else ' NOT NULL'}" for name, kind, nullable in COLUMNS)


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    types: dict[str, pa.DataType] = {
        "string": pa.string(),
        "int": pa.int32(),
        "long": pa.int64(),
        "binary": pa.binary(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "map<string,string>": pa.map_(pa.string(), pa.string()),
    }
    return types[kind]


def arrow_schema() -> pa.Schema:
    """The Arrow schema of the record batches the executors yield."""
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(kind), nullable) for name, kind, nullable in COLUMNS])


def spark_schema() -> Any:
    """The ``pyspark.sql.types.StructType`` (built without a SparkSession)."""
    from pyspark.sql import types as T

    spark_types: dict[str, Any] = {
        "string": T.StringType(),
        "int": T.IntegerType(),
        "long": T.LongType(),
        "binary": T.BinaryType(),
        "timestamp": T.TimestampType(),
        "map<string,string>": T.MapType(T.StringType(), T.StringType(), True),
    }
    return T.StructType([T.StructField(name, spark_types[kind], nullable) for name, kind, nullable in COLUMNS])

"""Structured Streaming consumer of a RocketMQ topic with the ``rocketmq`` source, exactly once into files.

The name servers come from the environment variable ``ROCKETMQ_NAME_SERVERS`` (in Kubernetes: the ``nameServers``
key of the ``<controllerGroup>-connection`` ConfigMap the operator publishes, through ``valueFrom.configMapKeyRef``;
see README.md) or from ``--name-servers``.

A group with ``spec.auth`` or ``spec.tls`` needs what the ``produce``/``consume`` tools take, from the same
environment variables: ``ROCKETMQ_ACCESS_KEY`` and ``ROCKETMQ_SECRET_KEY`` (an ACL 2.0 user, from its Secret through
``valueFrom.secretKeyRef``; the password is never on the command line) and ``ROCKETMQ_TLS_CA`` (the path of the
group's ``ca.crt``, a mounted Secret). Inside the cluster pass ``--tls-chain-only``: brokers register pod IPs, which
no certificate names, so the chain is verified and the host name is not (as RocketMQ's Java clients do).

Offsets live only in the checkpoint (``--checkpoint``): a restarted job resumes where the last committed
micro-batch ended. With the default file sink (Parquet under ``--output``, committed through its
``_spark_metadata`` log) or ``--sink foreach-batch`` (each micro-batch overwrites ``<output>/batch_id=<id>``, so a
replayed batch replaces its own files), a killed and restarted job writes every message exactly once.

Run locally (pyspark >= 4.2 and ``pip install 'rocketmq-operator[spark]'``)::

    ROCKETMQ_NAME_SERVERS=127.0.0.1:9876 python examples/spark/consumer_job.py --topic orders \\
        --output /tmp/orders --checkpoint /tmp/orders-checkpoint --available-now
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--name-servers", default=os.environ.get("ROCKETMQ_NAME_SERVERS"), help="host:port;host:port")
    selection = p.add_mutually_exclusive_group(required=True)
    selection.add_argument("--topic", help="one topic, or a comma list")
    selection.add_argument("--topic-pattern", help="regex over the name server's topic list")
    p.add_argument("--output", required=True, help="sink directory (a shared file system or object store)")
    p.add_argument("--checkpoint", required=True, help="checkpoint directory (offsets, commits)")
    p.add_argument("--sink", choices=("files", "foreach-batch"), default="files")
    p.add_argument("--starting-offsets", default="earliest", help="earliest | latest | JSON (new queries only)")
    p.add_argument("--max-messages-per-trigger", type=int, default=100_000)
    p.add_argument("--read-from", choices=("auto", "master"), default="auto")
    p.add_argument("--trigger-seconds", type=float, default=10.0, help="micro-batch interval")
    p.add_argument("--available-now", action="store_true", help="read what is there now, then stop")
    p.add_argument(
        "--report",
        action="store_true",
        help="with --available-now: then print what the output holds: `rows N`, `distinct-keys N` and "
        "`keys-sha256 HEX` (of the sorted distinct keys, one per line), for a check by key",
    )
    p.add_argument(
        "--access-key",
        default=os.environ.get("ROCKETMQ_ACCESS_KEY"),
        help="ACL 2.0 user (default: $ROCKETMQ_ACCESS_KEY); its password comes from $ROCKETMQ_SECRET_KEY only",
    )
    p.add_argument(
        "--tls-ca", default=os.environ.get("ROCKETMQ_TLS_CA"), help="PEM authority to trust (default: $ROCKETMQ_TLS_CA)"
    )
    p.add_argument("--tls-chain-only", action="store_true", help="verify the certificate chain, not the host name")
    args = p.parse_args(argv)
    if not args.name_servers:
        p.error("no name servers: set ROCKETMQ_NAME_SERVERS (from the <controllerGroup>-connection ConfigMap)")
    args.secret_key = os.environ.get("ROCKETMQ_SECRET_KEY")
    if bool(args.access_key) != bool(args.secret_key):
        p.error("--access-key and $ROCKETMQ_SECRET_KEY go together: set both (from the user's Secret) or neither")
    if args.tls_chain_only and not args.tls_ca:
        p.error("--tls-chain-only needs --tls-ca (or $ROCKETMQ_TLS_CA): the authority whose chain is verified")
    return args


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The ``rocketmq`` source's options for these arguments (credentials and TLS only when given)."""
    options = {
        "nameServers": args.name_servers,
        "startingOffsets": args.starting_offsets,
        "maxMessagesPerTrigger": str(args.max_messages_per_trigger),
        "readFrom": args.read_from,
        "failOnDataLoss": "true",
    }
    if args.topic_pattern:
        options["topicPattern"] = args.topic_pattern
    else:
        options["topics"] = args.topic
    if args.access_key:
        options["accessKey"], options["secretKey"] = args.access_key, args.secret_key
    if args.tls_ca:
        options["tlsCaFile"] = args.tls_ca
        if args.tls_chain_only:
            options["tlsCheckHostname"] = "false"
    return options


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    from rocketmq_operator.spark import register

    spark = SparkSession.builder.appName("rocketmq-consumer").getOrCreate()
    register(spark)

    messages = (
        spark.readStream.format("rocketmq")
        .options(**source_options(args))
        .load()
        .selectExpr(
            "topic",
            "brokerName",
            "queueId",
            "queueOffset",
            "msgId",
            "keys",
            "tags",
            "body",
            "storeTimestamp",
            "servedByBrokerId",
        )
    )

    if args.sink == "files":
        writer = messages.writeStream.format("parquet").option("path", args.output)
    else:
        output = args.output.rstrip("/")

        def write_batch(batch: Any, batch_id: int) -> None:
            # Idempotent per batch id: a batch replayed after a crash overwrites exactly its own directory.
            batch.write.mode("overwrite").parquet(f"{output}/batch_id={batch_id}")

        writer = messages.writeStream.foreachBatch(write_batch)
    writer = writer.option("checkpointLocation", args.checkpoint).queryName("rocketmq-consumer")
    if args.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{args.trigger_seconds} seconds")
    query = writer.start()
    query.awaitTermination()
    if args.report and args.sink == "files":
        print_report(spark, args.output)
    return 0


def print_report(spark: Any, output: str) -> None:
    """What the output holds, read back through Spark (the driver's view of every executor's files)."""
    table = spark.read.parquet(output)
    keys = sorted(row["keys"] for row in table.select("keys").distinct().collect() if row["keys"] is not None)
    print(f"rows {table.count()}")
    print(f"distinct-keys {len(keys)}")
    print(f"keys-sha256 {hashlib.sha256(chr(10).join(keys).encode()).hexdigest()}")


if __name__ == "__main__":
    sys.exit(main())

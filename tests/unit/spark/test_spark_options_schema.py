"""Option parsing (clear errors naming the option) and the output schema (Spark and Arrow forms agree)."""

from __future__ import annotations

import pytest
from spark_helpers import require

from rocketmq_operator.spark.offsets import QueueRef
from rocketmq_operator.spark.options import OptionError, parse_options
from rocketmq_operator.spark.schema import COLUMN_NAMES, arrow_schema, ddl

NS = {"nameServers": "ns-0.ctl:9876;ns-1.ctl:9876", "topic": "orders"}


def test_defaults_batch_and_streaming() -> None:
    batch = parse_options(NS, streaming=False)
    assert batch.name_servers == ("ns-0.ctl:9876", "ns-1.ctl:9876")
    assert batch.topics == ("orders",) and batch.topic_pattern is None
    assert batch.starting == "earliest" and batch.ending == "latest"
    assert batch.fail_on_data_loss and batch.include_properties and batch.read_from == "auto"
    assert batch.max_messages_per_trigger is None and batch.min_partitions is None
    stream = parse_options(NS, streaming=True)
    assert stream.starting == "latest" and stream.streaming


def test_spark_lower_cases_keys() -> None:
    opts = parse_options(
        {
            "nameservers": "a:1,b:2",
            "topics": "x, y,x",
            "maxmessagespertrigger": "500",
            "minpartitions": "8",
            "failondataloss": "FALSE",
            "readfrom": "Master",
            "includeproperties": "false",
            "startingtimestamp": "1700000000000",
        },
        streaming=True,
    )
    assert opts.name_servers == ("a:1", "b:2") and opts.topics == ("x", "y")
    assert opts.max_messages_per_trigger == 500 and opts.min_partitions == 8
    assert not opts.fail_on_data_loss and opts.read_from == "master" and not opts.include_properties
    assert opts.starting_timestamp == 1_700_000_000_000


def test_json_positions() -> None:
    opts = parse_options(
        {
            **NS,
            "startingOffsets": '{"orders": {"broker-a/0": 5, "broker-a/1": -2}}',
            "endingOffsets": '{"orders": {"broker-a/0": -1}}',
        },
        streaming=False,
    )
    assert opts.starting == {QueueRef("orders", "broker-a", 0): 5, QueueRef("orders", "broker-a", 1): -2}
    assert opts.ending == {QueueRef("orders", "broker-a", 0): -1}


def test_tag_filter_as_a_consumer_subscribes() -> None:
    assert parse_options(NS, streaming=False).tags == frozenset()
    assert parse_options(NS, streaming=False).sub_expression == "*"
    opts = parse_options({**NS, "subexpression": " TagB ||TagA "}, streaming=True)
    assert opts.tags == frozenset({"TagA", "TagB"}) and opts.sub_expression == "TagA || TagB"


def test_topic_pattern() -> None:
    opts = parse_options({"nameServers": "a:1", "topicPattern": "orders-.*"}, streaming=True)
    assert opts.topic_pattern == "orders-.*" and opts.topics == ()
    assert opts.topic_matches("orders-eu") and not opts.topic_matches("xorders-eu") and not opts.topic_matches("other")


@pytest.mark.parametrize(
    ("options", "streaming", "prefix", "detail"),
    [
        ({"topic": "t"}, False, "nameServers", "required"),
        ({"nameServers": "host", "topic": "t"}, False, "nameServers", "is not host:port"),
        ({"nameServers": "a:1"}, False, "topic", "none was given"),
        ({"nameServers": "a:1", "topic": "t", "topics": "u"}, False, "topic", "got topic, topics"),
        ({"nameServers": "a:1", "topic": "a,b"}, False, "topic", "expected one topic name"),
        ({"nameServers": "a:1", "topics": "ok,bad topic"}, False, "topics", "not a valid RocketMQ topic name"),
        ({"nameServers": "a:1", "topicPattern": "("}, False, "topicPattern", "not a valid regular expression"),
        ({**NS, "startingOffsets": "latest"}, False, "startingOffsets", "not allowed for batch"),
        ({**NS, "startingOffsets": "newest"}, True, "startingOffsets", "expected earliest, latest or JSON"),
        ({**NS, "startingOffsets": '{"orders": {"a/0": -3}}'}, True, "startingOffsets", "allowed"),
        ({**NS, "startingOffsets": '{"other": {"a/0": 1}}'}, True, "startingOffsets", "not among the selected"),
        ({**NS, "endingOffsets": "earliest"}, False, "endingOffsets", "not allowed here"),
        ({**NS, "endingOffsets": '{"orders": {"a/0": -2}}'}, False, "endingOffsets", "-2 (earliest) is not allowed"),
        ({**NS, "endingOffsets": "latest"}, True, "endingOffsets", "only for batch"),
        (
            {**NS, "startingOffsets": '{"orders": {"a/0": 9}}', "endingOffsets": '{"orders": {"a/0": 3}}'},
            False,
            "endingOffsets",
            "before its starting offset 9",
        ),
        ({**NS, "maxMessagesPerTrigger": "0"}, True, "maxMessagesPerTrigger", "must be >= 1"),
        ({**NS, "maxMessagesPerTrigger": "lots"}, True, "maxMessagesPerTrigger", "must be an integer"),
        ({**NS, "minPartitions": "-1"}, False, "minPartitions", "must be >= 1"),
        ({**NS, "failOnDataLoss": "yes"}, False, "failOnDataLoss", "must be true or false"),
        ({**NS, "includeProperties": "1"}, False, "includeProperties", "must be true or false"),
        ({**NS, "readFrom": "slave"}, False, "readFrom", "must be auto or master"),
        ({**NS, "pullBatchSize": "5000"}, False, "pullBatchSize", "between 1 and 1024"),
        ({**NS, "startingTimestamp": "yesterday"}, False, "startingTimestamp", "must be an integer"),
        ({**NS, "consumerGroup": "a b"}, False, "consumerGroup", "not a valid RocketMQ group name"),
        ({**NS, "startingOffset": "earliest"}, False, "startingOffset", "did you mean startingOffsets?"),
        ({**NS, "subExpression": "TagA ||"}, False, "subExpression", "has an empty tag"),
        ({**NS, "subExpression": "* || TagA"}, True, "subExpression", "mixes * with tags"),
        ({**NS, "kafka.bootstrap.servers": "x:1"}, False, "kafka.bootstrap.servers", "unknown option"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], streaming: bool, prefix: str, detail: str) -> None:
    with pytest.raises(OptionError) as info:
        parse_options(options, streaming=streaming)
    message = str(info.value)
    assert message.startswith(f"{prefix}: "), message
    assert detail in message, message


def test_schema_columns() -> None:
    assert COLUMN_NAMES == (
        "topic",
        "brokerName",
        "queueId",
        "queueOffset",
        "msgId",
        "keys",
        "tags",
        "body",
        "bornTimestamp",
        "storeTimestamp",
        "properties",
        "servedByBrokerId",
    )
    assert ddl().startswith("topic string NOT NULL, brokerName string NOT NULL, queueId int NOT NULL")
    assert "properties map<string,string>, servedByBrokerId long NOT NULL" in ddl()


def test_arrow_schema_is_what_pyspark_expects() -> None:
    require("pyspark")
    from pyspark.sql.pandas.types import to_arrow_schema

    from rocketmq_operator.spark.schema import spark_schema

    spark = spark_schema()
    assert tuple(spark.fieldNames()) == COLUMN_NAMES
    assert [f.nullable for f in spark.fields] == [False] * 5 + [True, True] + [False] * 3 + [True, False]
    assert to_arrow_schema(spark, timezone="UTC").equals(arrow_schema())


def test_credentials_both_or_neither_and_never_shown() -> None:
    from rocketmq_operator.spark.executor import ReadSettings

    base = {"nameServers": "ns:9876", "topic": "orders"}
    opts = parse_options({**base, "accesskey": "app", "secretkey": "pw"}, streaming=False)
    settings = ReadSettings.of(opts)
    assert settings.credentials is not None and settings.credentials.access_key == "app"
    assert "pw" not in repr(opts) and "pw" not in repr(settings)
    assert ReadSettings.of(parse_options(base, streaming=False)).credentials is None
    with pytest.raises(OptionError, match=r"^secretKey: required with accessKey"):
        parse_options({**base, "accessKey": "app"}, streaming=False)
    with pytest.raises(OptionError, match=r"^accessKey: required with secretKey"):
        parse_options({**base, "secretKey": "pw"}, streaming=False)


def test_tls_options() -> None:
    import pickle

    from rocketmq_operator.remoting import ClientTls
    from rocketmq_operator.spark.executor import ReadSettings

    base = {"nameServers": "ns:9876", "topic": "orders"}
    assert ReadSettings.of(parse_options(base, streaming=False)).tls is None
    with_ca = ReadSettings.of(parse_options({**base, "tlsCaFile": "/etc/rocketmq/ca.crt"}, streaming=False))
    assert with_ca.tls == ClientTls("/etc/rocketmq/ca.crt")
    assert pickle.loads(pickle.dumps(with_ca)).tls == with_ca.tls  # sent to executors
    assert ReadSettings.of(parse_options({**base, "tls": "true"}, streaming=False)).tls == ClientTls(None)
    with pytest.raises(OptionError, match=r"^tls: false with tlsCaFile"):
        parse_options({**base, "tls": "false", "tlsCaFile": "/ca.crt"}, streaming=False)
    # On Kubernetes: the chain verified, not the pod IP a broker is dialled at.
    chain = ReadSettings.of(
        parse_options({**base, "tlsCaFile": "/ca.crt", "tlsCheckHostname": "false"}, streaming=False)
    )
    assert chain.tls == ClientTls("/ca.crt", check_hostname=False)
    # Mutual TLS: a client certificate and its key, both or neither, only over TLS.
    mutual = {**base, "tlsCaFile": "/tls/ca.crt", "tlsCertFile": "/tls/tls.crt", "tlsKeyFile": "/tls/tls.key"}
    presented = ReadSettings.of(parse_options(mutual, streaming=False))
    assert presented.tls == ClientTls("/tls/ca.crt", True, "/tls/tls.crt", "/tls/tls.key")
    assert pickle.loads(pickle.dumps(presented)).tls == presented.tls
    with pytest.raises(OptionError, match=r"^tlsKeyFile: required with tlsCertFile"):
        parse_options({**base, "tlsCaFile": "/ca.crt", "tlsCertFile": "/tls.crt"}, streaming=False)
    with pytest.raises(OptionError, match=r"^tls: false with tlsCertFile"):
        parse_options({**base, "tls": "false", "tlsCertFile": "/a", "tlsKeyFile": "/b"}, streaming=False)


def test_the_clis_tls_chain_only_flag() -> None:
    import argparse

    from rocketmq_operator.cli.tools import add_tls_arguments, tls_from
    from rocketmq_operator.remoting.tls import ClientTls

    parser = argparse.ArgumentParser()
    add_tls_arguments(parser)
    assert tls_from(parser.parse_args([])) is None
    assert tls_from(parser.parse_args(["--tls"])) == ClientTls(None)
    assert tls_from(parser.parse_args(["--tls-chain-only"])) == ClientTls(None, check_hostname=False)

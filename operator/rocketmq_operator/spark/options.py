"""Options of the ``rocketmq`` Spark source, parsed and validated (pure Python: no pyspark, no network).

Contract: :func:`parse_options` turns Spark's option map (keys are case-insensitive; Spark lower-cases them)
into a frozen :class:`SourceOptions`, or raises :class:`OptionError` whose message starts with the option's
name as documented (``startingOffsets: ...``) and says what is allowed. Unknown options are refused (with the
closest known name), so a typo never silently changes what is read.

=============================  ==========================================================================
option                         meaning (default)
=============================  ==========================================================================
``nameServers``                required: ``host:port`` list separated by ``;`` (the connection ConfigMap's
                               ``nameServers`` value) or ``,``
``topic``/``topics``/          exactly one: a topic, a comma list, or a Python regex matched in full against
``topicPattern``               namesrv's topic list (re-evaluated at every micro-batch)
``startingOffsets``            ``earliest`` | ``latest`` (streaming only) | JSON (see :mod:`.offsets`;
                               -2 earliest, -1 latest). Default ``latest`` streaming, ``earliest`` batch.
                               Queues missing from the JSON start at earliest. Only for new queries: a
                               restarted query resumes from its checkpoint.
``startingTimestamp``          epoch milliseconds; overrides ``startingOffsets``: every queue starts at the
                               first message stored at or after it (SEARCH_OFFSET_BY_TIMESTAMP)
``endingOffsets``              batch only: ``latest`` (default) | JSON (-1 latest; -2 refused)
``maxMessagesPerTrigger``      streaming: cap per micro-batch, prorated over queues by backlog (none)
``minPartitions``              split large queues into offset ranges so there are at least this many Spark
                               partitions (none: one partition per queue)
``failOnDataLoss``             ``true``: fail when offsets to read were deleted by retention or a queue went
                               backwards; ``false``: log a warning and continue at the broker's min offset
``readFrom``                   ``auto``: follow the broker's suggestWhichBrokerId (slave read) | ``master``
``includeProperties``          fill the ``properties`` column (``true``) or leave it null
``subExpression``              RocketMQ's tag filter, as a consumer subscribes: ``*`` (every message, the
                               default) or tags joined by ``||`` (``TagA || TagB``). The broker filters by
                               the tags' hash codes; rows are then kept only when their tag is one of them
``consumerGroup``              group named in pulls (never committed) (``spark-rocketmq-source``)
``pullBatchSize``              maxMsgNums per pull, 1..1024 (32; brokers cap it, 32 in memory / 8 on disk)
``pullTimeoutMs``              an executor gives up on a queue after this long without progress (120000)
``requestTimeoutMs``           timeout of one remoting request (10000)
``fetchOffsetNumRetries``      driver retries of route/offset lookups, e.g. during a failover (3)
``fetchOffsetRetryIntervalMs`` pause between those retries (1000)
``accessKey``/``secretKey``    an ACL 2.0 user and its password: every request is signed (both or neither;
                               Spark redacts ``secretKey`` from plans and the UI: its name matches
                               ``spark.redaction.regex``)
``tls``                        connect over TLS (``true``/``false``; default: true when ``tlsCaFile`` is set)
``tlsCaFile``                  PEM file of the authority that signed the servers' certificates, at the same
                               path on the driver and every executor (a mounted Secret on Kubernetes);
                               unset with ``tls=true``: the system's trust store
``tlsCheckHostname``           ``false``: verify the chain only, not the name or address the certificate is
                               issued to, as RocketMQ's Java clients do (on Kubernetes brokers are dialled by
                               pod IP, which their certificates do not name; default true)
``tlsCertFile``/``tlsKeyFile`` a certificate (PEM) and its key presented to servers that require one
                               (``spec.tls.clientAuth: Required``), at the same paths everywhere (both or neither)
=============================  ==========================================================================
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .offsets import EARLIEST, LATEST, OffsetFormatError, Offsets, loads_offsets

DEFAULT_CONSUMER_GROUP = "spark-rocketmq-source"

OPTION_NAMES: tuple[str, ...] = (
    "nameServers",
    "topic",
    "topics",
    "topicPattern",
    "startingOffsets",
    "startingTimestamp",
    "endingOffsets",
    "maxMessagesPerTrigger",
    "minPartitions",
    "failOnDataLoss",
    "readFrom",
    "includeProperties",
    "subExpression",
    "consumerGroup",
    "pullBatchSize",
    "pullTimeoutMs",
    "requestTimeoutMs",
    "fetchOffsetNumRetries",
    "fetchOffsetRetryIntervalMs",
    "accessKey",
    "secretKey",
    "tls",
    "tlsCaFile",
    "tlsCheckHostname",
    "tlsCertFile",
    "tlsKeyFile",
)
_CANONICAL = {name.lower(): name for name in OPTION_NAMES}
_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")

Position = Literal["earliest", "latest"] | Offsets
ReadFrom = Literal["auto", "master"]


class OptionError(ValueError):
    """A bad ``rocketmq`` source option; the message starts with the option name."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    name_servers: tuple[str, ...]
    topics: tuple[str, ...]
    """The fixed topic list (``topic``/``topics``); empty with ``topicPattern``."""
    topic_pattern: str | None
    starting: Position
    """``"earliest"``, ``"latest"`` or explicit offsets (-2/-1 allowed)."""
    ending: Position
    """``"latest"`` or explicit offsets (-1 allowed); batch only."""
    starting_timestamp: int | None = None
    max_messages_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    read_from: ReadFrom = "auto"
    include_properties: bool = True
    consumer_group: str = DEFAULT_CONSUMER_GROUP
    pull_batch_size: int = 32
    pull_timeout_ms: int = 120_000
    request_timeout_ms: int = 10_000
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1_000
    streaming: bool = False
    tags: frozenset[str] = frozenset()
    """The tags a row must carry; empty: every row (``*``)."""
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_ca_file: str | None = None
    tls_check_hostname: bool = True
    tls_cert_file: str | None = None
    tls_key_file: str | None = None

    @property
    def sub_expression(self) -> str:
        """The subscription sent with every pull (``*``, or the tags joined by ``||``)."""
        return sub_expression(self.tags)

    def topic_matches(self, topic: str) -> bool:
        """Whether ``topic`` is selected (in the list, or matching the pattern in full)."""
        if self.topic_pattern is not None:
            return re.fullmatch(self.topic_pattern, topic) is not None
        return topic in self.topics


def _normalize(raw: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw.items():
        canonical = _CANONICAL.get(str(key).lower())
        if canonical is None:
            close = difflib.get_close_matches(str(key).lower(), list(_CANONICAL), n=1, cutoff=0.6)
            hint = f"; did you mean {_CANONICAL[close[0]]}?" if close else ""
            raise OptionError(f"{key}: unknown option of the rocketmq source{hint} (known: {', '.join(OPTION_NAMES)})")
        out[canonical] = "" if value is None else str(value)
    return out


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    text = opts.get(name)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise OptionError(f"{name}: must be true or false, got {text!r}")
    return lowered == "true"


def _int(opts: dict[str, str], name: str, default: int | None, low: int, high: int | None = None) -> int | None:
    text = opts.get(name)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        raise OptionError(f"{name}: must be an integer, got {text!r}") from None
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise OptionError(f"{name}: must be {bound}, got {value}")
    return value


def _req_int(opts: dict[str, str], name: str, default: int, low: int, high: int | None = None) -> int:
    value = _int(opts, name, default, low, high)
    assert value is not None
    return value


def _name_servers(opts: dict[str, str]) -> tuple[str, ...]:
    text = opts.get("nameServers", "")
    addrs = tuple(a.strip() for a in re.split(r"[;,]", text) if a.strip())
    if not addrs:
        raise OptionError(
            "nameServers: required, e.g. 'rocketmq-ctl-0.rocketmq-ctl-headless:9876;...' (the value of key "
            "nameServers in the ControllerGroup's <name>-connection ConfigMap)"
        )
    for addr in addrs:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise OptionError(f"nameServers: {addr!r} is not host:port")
    return addrs


def _topics(opts: dict[str, str]) -> tuple[tuple[str, ...], str | None]:
    given = [name for name in ("topic", "topics", "topicPattern") if name in opts]
    if len(given) != 1:
        what = "none was given" if not given else f"got {', '.join(given)}"
        raise OptionError(f"topic: exactly one of topic, topics or topicPattern is required ({what})")
    name = given[0]
    text = opts[name].strip()
    if name == "topicPattern":
        if not text:
            raise OptionError("topicPattern: must be a non-empty regular expression")
        try:
            re.compile(text)
        except re.error as exc:
            raise OptionError(f"topicPattern: not a valid regular expression ({exc})") from None
        return (), text
    topics = tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
    if not topics or (name == "topic" and len(topics) != 1):
        expected = "one topic name" if name == "topic" else "a comma-separated list of topic names"
        raise OptionError(f"{name}: expected {expected}, got {opts[name]!r}")
    for topic in topics:
        if not _TOPIC_RE.match(topic) or len(topic) > 127:
            raise OptionError(f"{name}: {topic!r} is not a valid RocketMQ topic name ([%|a-zA-Z0-9_-], <= 127)")
    return topics, None


def _position(opts: dict[str, str], name: str, default: str, *, allow_latest: bool, allow_earliest: bool) -> Position:
    text = opts.get(name, default).strip()
    lowered = text.lower()
    if lowered in ("earliest", "latest"):
        if lowered == "latest" and not allow_latest:
            raise OptionError(f"{name}: 'latest' is not allowed for batch queries (use earliest or JSON offsets)")
        if lowered == "earliest" and not allow_earliest:
            raise OptionError(f"{name}: 'earliest' is not allowed here (use latest or JSON offsets)")
        return "earliest" if lowered == "earliest" else "latest"
    if not text.startswith("{"):
        raise OptionError(
            f'{name}: expected earliest, latest or JSON {{"topic": {{"brokerName/queueId": offset}}}}, got {text!r}'
        )
    try:
        offsets = loads_offsets(text, name, allow_special=True)
    except OffsetFormatError as exc:
        raise OptionError(str(exc)) from None
    for queue, offset in offsets.items():
        if offset == EARLIEST and not allow_earliest:
            raise OptionError(f"{name}: -2 (earliest) is not allowed here, found for {queue}")
        if offset == LATEST and not allow_latest:
            raise OptionError(f"{name}: -1 (latest) is not allowed here, found for {queue}")
    return offsets


def parse_sub_expression(value: str) -> frozenset[str]:
    """The tags of a TAG subscription expression (``*``: none, every message), as RocketMQ's client splits it:
    on ``||``, each tag trimmed. An empty tag (``A ||``) is refused rather than dropped."""
    text = value.strip()
    if text in ("", "*"):
        return frozenset()
    tags = [t.strip() for t in text.split("||")]
    empty = [i for i, t in enumerate(tags) if not t]
    if empty:
        raise OptionError(
            f"subExpression: {value!r} has an empty tag; use * for every message or tags joined by || (TagA || TagB)"
        )
    if "*" in tags:
        raise OptionError(f"subExpression: {value!r} mixes * with tags; use * alone or tags joined by ||")
    return frozenset(tags)


def sub_expression(tags: frozenset[str]) -> str:
    """The TAG subscription expression of ``tags`` (``*`` for none): what a pull carries."""
    return " || ".join(sorted(tags)) if tags else "*"


def parse_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate Spark's options for a batch (``streaming=False``) or streaming read."""
    opts = _normalize(raw)
    name_servers = _name_servers(opts)
    topics, pattern = _topics(opts)
    starting = _position(
        opts,
        "startingOffsets",
        "latest" if streaming else "earliest",
        allow_latest=streaming,
        allow_earliest=True,
    )
    if streaming and "endingOffsets" in opts:
        raise OptionError("endingOffsets: only for batch queries (spark.read), not for spark.readStream")
    ending = _position(opts, "endingOffsets", "latest", allow_latest=True, allow_earliest=False)
    for name, position in (("startingOffsets", starting), ("endingOffsets", ending)):
        if isinstance(position, dict) and pattern is None:
            unknown = sorted({q.topic for q in position} - set(topics))
            if unknown:
                raise OptionError(f"{name}: topic(s) {', '.join(unknown)} not among the selected topics {topics}")
    if not streaming and isinstance(starting, dict) and isinstance(ending, dict):
        for queue, end in ending.items():
            start = starting.get(queue)
            if start is not None and start >= 0 and end >= 0 and end < start:
                raise OptionError(f"endingOffsets: {queue} ends at {end}, before its starting offset {start}")
    read_from = opts.get("readFrom", "auto").strip().lower()
    if read_from not in ("auto", "master"):
        raise OptionError(f"readFrom: must be auto or master, got {opts['readFrom']!r}")
    group = opts.get("consumerGroup", DEFAULT_CONSUMER_GROUP).strip()
    if not _TOPIC_RE.match(group):
        raise OptionError(f"consumerGroup: {group!r} is not a valid RocketMQ group name ([%|a-zA-Z0-9_-])")
    tags = parse_sub_expression(opts.get("subExpression", "*"))
    access_key, secret_key = opts.get("accessKey", "").strip() or None, opts.get("secretKey") or None
    if (access_key is None) != (secret_key is None):
        given, missing = ("accessKey", "secretKey") if access_key else ("secretKey", "accessKey")
        raise OptionError(f"{missing}: required with {given} (an ACL 2.0 user signs with both)")
    tls_ca_file = opts.get("tlsCaFile", "").strip() or None
    tls = _bool(opts, "tls", tls_ca_file is not None)
    if tls_ca_file is not None and not tls:
        raise OptionError(f"tls: false with tlsCaFile {tls_ca_file!r}; an authority is trusted only over TLS")
    cert_file, key_file = opts.get("tlsCertFile", "").strip() or None, opts.get("tlsKeyFile", "").strip() or None
    if (cert_file is None) != (key_file is None):
        given, missing = ("tlsCertFile", "tlsKeyFile") if cert_file else ("tlsKeyFile", "tlsCertFile")
        raise OptionError(f"{missing}: required with {given} (a client certificate is presented with its key)")
    if cert_file is not None and not tls:
        raise OptionError(f"tls: false with tlsCertFile {cert_file!r}; a certificate is presented only over TLS")
    return SourceOptions(
        name_servers=name_servers,
        topics=topics,
        topic_pattern=pattern,
        starting=starting,
        ending=ending,
        starting_timestamp=_int(opts, "startingTimestamp", None, 0),
        max_messages_per_trigger=_int(opts, "maxMessagesPerTrigger", None, 1),
        min_partitions=_int(opts, "minPartitions", None, 1),
        fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
        read_from="auto" if read_from == "auto" else "master",
        include_properties=_bool(opts, "includeProperties", True),
        consumer_group=group,
        pull_batch_size=_req_int(opts, "pullBatchSize", 32, 1, 1024),
        pull_timeout_ms=_req_int(opts, "pullTimeoutMs", 120_000, 1),
        request_timeout_ms=_req_int(opts, "requestTimeoutMs", 10_000, 1),
        fetch_offset_num_retries=_req_int(opts, "fetchOffsetNumRetries", 3, 0),
        fetch_offset_retry_interval_ms=_req_int(opts, "fetchOffsetRetryIntervalMs", 1_000, 0),
        streaming=streaming,
        tags=tags,
        access_key=access_key,
        secret_key=secret_key,
        tls=tls,
        tls_ca_file=tls_ca_file,
        tls_check_hostname=_bool(opts, "tlsCheckHostname", True),
        tls_cert_file=cert_file,
        tls_key_file=key_file,
    )

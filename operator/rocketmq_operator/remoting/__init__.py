"""Asyncio client of Apache RocketMQ's remoting protocol (standard library only).

Contract: this package imports nothing outside the Python standard library (checked by
import-linter). It speaks the TCP remoting protocol of RocketMQ 5.x to name servers, controllers and
brokers: framing (:mod:`.codec`), codes and send statuses (:mod:`.codes`), connections
(:mod:`.connection`), stored-message decoding (:mod:`.message`, LZ4 bodies via :mod:`.lz4frame`) and
typed calls (:mod:`.client`, one module per role: :mod:`.namesrv`, :mod:`.controller`, :mod:`.broker`
(admin), :mod:`.producer`, :mod:`.consumer`; topic and group admin in :mod:`.admin`).
Every deliberate failure is a :class:`RemotingException` (see :mod:`.errors`).
"""

from .auth import SessionCredentials
from .broker import (
    BrokerConfigResult,
    HaClient,
    HaConnection,
    HaInfo,
    HaStatus,
    format_properties_text,
    parse_properties_text,
)
from .client import RemotingClient
from .codec import (
    DEFAULT_VERSION,
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    MAX_FRAME_LENGTH,
    FrameDecoder,
    RemotingCommand,
    SerializeType,
    decode_frame,
    decode_payload,
    encode_command,
    loads_json,
    quote_bare_keys,
)
from .codes import PutStatus, RequestCode, ResponseCode, put_status, request_code_name, response_code_name
from .connection import ClientPool, Connection, parse_addr
from .consumer import PullResult
from .controller import ControllerMetadata, ElectMasterResult, ReplicaIdentity, ReplicaInfo, SyncStateInfo
from .errors import (
    FrameError,
    MessageDecodeError,
    NoControllerLeader,
    RemotingConnectionError,
    RemotingError,
    RemotingException,
    RemotingTimeout,
    ResponseFormatError,
    UnsupportedCompression,
    is_name_server_not_ready,
)
from .message import Message, decode_message, decode_messages, encode_message, offset_msg_id
from .namesrv import BrokerData, BrokerMemberGroup, ClusterInfo, QueueData, TopicRoute
from .producer import SendResult, new_message_id
from .tls import ClientTls

__all__ = [
    "DEFAULT_VERSION",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "MAX_FRAME_LENGTH",
    "BrokerConfigResult",
    "BrokerData",
    "BrokerMemberGroup",
    "ClientPool",
    "ClientTls",
    "ClusterInfo",
    "Connection",
    "ControllerMetadata",
    "ElectMasterResult",
    "FrameDecoder",
    "FrameError",
    "HaClient",
    "HaConnection",
    "HaInfo",
    "HaStatus",
    "Message",
    "MessageDecodeError",
    "NoControllerLeader",
    "PullResult",
    "PutStatus",
    "QueueData",
    "RemotingClient",
    "RemotingCommand",
    "RemotingConnectionError",
    "RemotingError",
    "RemotingException",
    "RemotingTimeout",
    "ReplicaIdentity",
    "ReplicaInfo",
    "RequestCode",
    "ResponseCode",
    "ResponseFormatError",
    "SendResult",
    "SerializeType",
    "SessionCredentials",
    "SyncStateInfo",
    "TopicRoute",
    "UnsupportedCompression",
    "decode_frame",
    "decode_message",
    "decode_messages",
    "decode_payload",
    "encode_command",
    "encode_message",
    "format_properties_text",
    "is_name_server_not_ready",
    "loads_json",
    "new_message_id",
    "offset_msg_id",
    "parse_addr",
    "parse_properties_text",
    "put_status",
    "quote_bare_keys",
    "request_code_name",
    "response_code_name",
]

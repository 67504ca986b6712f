"""Request codes, response codes and the mapping of send responses to store statuses.

Contract: numbers are RocketMQ 5.x's (``RequestCode.java``, ``ResponseCode.java``,
``RemotingSysResponseCode.java``). :func:`response_code_name` never raises: unknown numbers get
``"UNKNOWN_<n>"``. :func:`put_status` turns the (code, remark) of a SEND_MESSAGE response into the
broker's ``PutMessageStatus`` name, following ``SendMessageProcessor.handlePutMessageResult``:

* codes 0/10/11/12 are stored (``sendOK``): ``PUT_OK``, ``FLUSH_DISK_TIMEOUT``,
  ``SLAVE_NOT_AVAILABLE``, ``FLUSH_SLAVE_TIMEOUT``;
* ``SYSTEM_ERROR`` (1) is refined by its remark, most importantly ``"in-sync replicas not enough"``
  -> ``IN_SYNC_REPLICAS_NOT_ENOUGH`` (the quorum pre-check rejected the put; nothing was stored);
* any other code is not stored and is reported under its response-code name
  (``SERVICE_NOT_AVAILABLE``, ``TOPIC_NOT_EXIST``, ``NO_PERMISSION``, ...).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class RequestCode(enum.IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    GET_ALL_CONSUMER_OFFSET = 43
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_TOPICS_BY_CLUSTER = 224
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    SEND_MESSAGE_V2 = 310
    GET_NAMESRV_CONFIG = 319
    UPDATE_NAMESRV_CONFIG = 318
    SEND_BATCH_MESSAGE = 320
    ADD_WRITE_PERM_OF_BROKER = 327
    DELETE_EXPIRED_COMMITLOG = 329
    GET_TOPIC_CONFIG = 351
    LITE_PULL_MESSAGE = 361
    GET_BROKER_MEMBER_GROUP = 901
    BROKER_HEARTBEAT = 904
    EXCHANGE_BROKER_HA_INFO = 906
    GET_BROKER_HA_STATUS = 907
    CONTROLLER_ALTER_SYNC_STATE_SET = 1001
    CONTROLLER_ELECT_MASTER = 1002
    CONTROLLER_REGISTER_BROKER = 1003
    CONTROLLER_GET_REPLICA_INFO = 1004
    CONTROLLER_GET_METADATA_INFO = 1005
    CONTROLLER_GET_SYNC_STATE_DATA = 1006
    GET_BROKER_EPOCH_CACHE = 1007
    NOTIFY_BROKER_ROLE_CHANGED = 1008
    UPDATE_CONTROLLER_CONFIG = 1009
    GET_CONTROLLER_CONFIG = 1010
    CLEAN_BROKER_DATA = 1011
    CONTROLLER_GET_NEXT_BROKER_ID = 1012
    CONTROLLER_APPLY_BROKER_ID = 1013
    AUTH_CREATE_USER = 3001
    AUTH_UPDATE_USER = 3002
    AUTH_DELETE_USER = 3003
    AUTH_GET_USER = 3004
    AUTH_LIST_USER = 3005
    AUTH_CREATE_ACL = 3006
    AUTH_UPDATE_ACL = 3007
    AUTH_DELETE_ACL = 3008
    AUTH_GET_ACL = 3009
    AUTH_LIST_ACL = 3010


class ResponseCode(enum.IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210
    BROKER_NOT_EXIST = 211
    BROKER_DISPATCH_NOT_COMPLETE = 212
    BROADCAST_CONSUMPTION = 213
    FLOW_CONTROL = 215
    NOT_LEADER_FOR_QUEUE = 501
    ILLEGAL_OPERATION = 604
    RPC_UNKNOWN = -1000
    RPC_ADDR_IS_NULL = -1002
    RPC_SEND_TO_CHANNEL_FAILED = -1004
    RPC_TIME_OUT = -1006
    GO_AWAY = 1500
    CONTROLLER_FENCED_MASTER_EPOCH = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
    CONTROLLER_INVALID_MASTER = 2002
    CONTROLLER_INVALID_REPLICAS = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE = 2004
    CONTROLLER_INVALID_REQUEST = 2005
    CONTROLLER_BROKER_NOT_ALIVE = 2006
    CONTROLLER_NOT_LEADER = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
    CONTROLLER_MASTER_STILL_EXIST = 2011
    CONTROLLER_ELECT_MASTER_FAILED = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
    CONTROLLER_BROKER_ID_INVALID = 2014
    CONTROLLER_JRAFT_INTERNAL_ERROR = 2015
    CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS = 2016
    USER_NOT_EXIST = 3001
    POLICY_NOT_EXIST = 3002


def response_code_name(code: int) -> str:
    """The ``ResponseCode`` name of ``code``, or ``"UNKNOWN_<code>"``."""
    try:
        return ResponseCode(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def request_code_name(code: int) -> str:
    """The ``RequestCode`` name of ``code``, or ``"REQUEST_<code>"``."""
    try:
        return RequestCode(code).name
    except ValueError:
        return f"REQUEST_{code}"


# Pull request sysFlag bits (PullSysFlag.java).
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_FLAG_CLASS_FILTER = 0x8
PULL_FLAG_LITE_PULL = 0x10

# Topic permission bits (PermName.java).
PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1


@dataclass(frozen=True, slots=True)
class PutStatus:
    """What a send response means for the message.

    ``name`` is a ``PutMessageStatus`` name when the response identifies one, otherwise the response
    code's name. ``stored`` is true when the broker appended the message (``sendOK`` in the broker).
    """

    name: str
    stored: bool


_STORED: dict[int, str] = {
    ResponseCode.SUCCESS: "PUT_OK",
    ResponseCode.FLUSH_DISK_TIMEOUT: "FLUSH_DISK_TIMEOUT",
    ResponseCode.SLAVE_NOT_AVAILABLE: "SLAVE_NOT_AVAILABLE",
    ResponseCode.FLUSH_SLAVE_TIMEOUT: "FLUSH_SLAVE_TIMEOUT",
}

# SYSTEM_ERROR remarks written by SendMessageProcessor.handlePutMessageResult, matched case-insensitively.
_SYSTEM_ERROR_REMARKS: tuple[tuple[str, str], ...] = (
    ("in-sync replicas not enough", "IN_SYNC_REPLICAS_NOT_ENOUGH"),
    ("create mapped file failed", "CREATE_MAPPED_FILE_FAILED"),
    ("put to remote broker fail", "PUT_TO_REMOTE_BROKER_FAIL"),
    ("lmq_consume_queue_num_exceeded", "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"),
    ("timer message is under flow control", "WHEEL_TIMER_FLOW_CONTROL"),
    ("accurate timer message is not enabled", "WHEEL_TIMER_NOT_ENABLE"),
    ("unknown_error", "UNKNOWN_ERROR"),
)


def put_status(code: int, remark: str | None = None) -> PutStatus:
    """Map a SEND_MESSAGE(_V2) response (code, remark) to a :class:`PutStatus`."""
    stored_name = _STORED.get(code)
    if stored_name is not None:
        return PutStatus(stored_name, True)
    text = (remark or "").lower()
    if code == ResponseCode.SYSTEM_ERROR:
        for needle, name in _SYSTEM_ERROR_REMARKS:
            if needle in text:
                return PutStatus(name, False)
        return PutStatus("SYSTEM_ERROR", False)
    if code == ResponseCode.MESSAGE_ILLEGAL:
        return PutStatus("WHEEL_TIMER_MSG_ILLEGAL" if "timer message illegal" in text else "MESSAGE_ILLEGAL", False)
    if code == ResponseCode.SYSTEM_BUSY and "pc_synchronized" in text:
        return PutStatus("OS_PAGE_CACHE_BUSY", False)
    return PutStatus(response_code_name(code), False)


DEFAULT_TOPIC = "TBW102"
"""The topic a producer names when it sends to a topic that does not exist yet (the auto-create template)."""

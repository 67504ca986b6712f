"""Response-code names and the send-response -> PutMessageStatus mapping (facts §2.3)."""

from __future__ import annotations

import pytest

from rocketmq_operator.remoting.codes import (
    RequestCode,
    ResponseCode,
    put_status,
    request_code_name,
    response_code_name,
)


@pytest.mark.parametrize(
    ("code", "remark", "name", "stored"),
    [
        (0, None, "PUT_OK", True),
        (10, None, "FLUSH_DISK_TIMEOUT", True),
        (11, None, "SLAVE_NOT_AVAILABLE", True),
        (12, None, "FLUSH_SLAVE_TIMEOUT", True),
        (1, "in-sync replicas not enough", "IN_SYNC_REPLICAS_NOT_ENOUGH", False),
        (1, "create mapped file failed, server is busy or broken.", "CREATE_MAPPED_FILE_FAILED", False),
        (1, "UNKNOWN_ERROR", "UNKNOWN_ERROR", False),
        (1, "UNKNOWN_ERROR DEFAULT", "UNKNOWN_ERROR", False),
        (1, "put to remote broker fail", "PUT_TO_REMOTE_BROKER_FAIL", False),
        (1, "something else", "SYSTEM_ERROR", False),
        (1, None, "SYSTEM_ERROR", False),
        (13, "the message is illegal, maybe msg body", "MESSAGE_ILLEGAL", False),
        (13, "timer message illegal, the delay time", "WHEEL_TIMER_MSG_ILLEGAL", False),
        (14, "service not available now", "SERVICE_NOT_AVAILABLE", False),
        (2, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", "OS_PAGE_CACHE_BUSY", False),
        (2, "[REJECTREQUEST]system busy", "SYSTEM_BUSY", False),
        (17, "topic not exist", "TOPIC_NOT_EXIST", False),
        (16, "no permission", "NO_PERMISSION", False),
        (9999, None, "UNKNOWN_9999", False),
    ],
)
def test_put_status(code: int, remark: str | None, name: str, stored: bool) -> None:
    status = put_status(code, remark)
    assert (status.name, status.stored) == (name, stored)


def test_controller_codes_are_complete() -> None:
    controller = [c for c in ResponseCode if c.name.startswith("CONTROLLER_")]
    assert sorted(int(c) for c in controller) == list(range(2000, 2017))
    assert response_code_name(2007) == "CONTROLLER_NOT_LEADER"
    assert response_code_name(1) == "SYSTEM_ERROR"
    assert response_code_name(12) == "FLUSH_SLAVE_TIMEOUT"


def test_names_never_raise() -> None:
    assert response_code_name(-7) == "UNKNOWN_-7"
    assert request_code_name(310) == "SEND_MESSAGE_V2"
    assert request_code_name(5) == "REQUEST_5"
    assert RequestCode.CONTROLLER_GET_SYNC_STATE_DATA == 1006

"""ACL 2.0 admin requests to one broker: users and ACLs (RocketMQ 5.3+; standard library only).

Contract:

* :class:`AuthAdmin` wraps a :class:`~.client.RemotingClient` (which must sign with a Super user's credentials
  when the broker authenticates); every call takes the broker address.
* AUTH_GET_USER (3004, field ``username``) answers a ``UserInfo`` JSON body (``username``, ``password``,
  ``userType``, ``userStatus``) or an empty body when there is no such user; AUTH_CREATE_USER (3001) and
  AUTH_UPDATE_USER (3002) take ``username`` and a ``UserInfo`` body.
* AUTH_GET_ACL (3009, field ``subject``, e.g. ``User:app``) answers an ``AclInfo`` body (``subject``,
  ``policies``: ``[{policyType, entries: [{resource, actions, sourceIps, decision}]}]``) or an empty body;
  AUTH_CREATE_ACL (3006) and AUTH_UPDATE_ACL (3007, which merges entries by resource) take ``subject`` and an
  ``AclInfo`` body; AUTH_DELETE_ACL (3008) takes ``subject``, ``policyType`` and ``resource`` (one entry).
* AUTH_LIST_USER (3005, optional field ``filter``: a substring of the name) answers a JSON array of ``UserInfo``
  (passwords included) or an empty body when there is none; AUTH_LIST_ACL (3010, optional ``subjectFilter`` and
  ``resourceFilter``) a JSON array of ``AclInfo`` or an empty body (RocketMQ's ``AdminBrokerProcessor.listUser`` /
  ``listAcl``). Both are returned as lists of JSON objects (an empty body: ``[]``).
* Bodies are returned and taken as plain JSON objects; passwords travel only in request and response bodies,
  never in an exception's text (the broker's remark is all a refusal carries).
"""

from __future__ import annotations

import json
from typing import Any

from .client import RemotingClient
from .codec import loads_json
from .codes import RequestCode
from .errors import ResponseFormatError
from .parsing import _fields


def _json_or_none(body: bytes) -> dict[str, Any] | None:
    if not body or not body.strip():
        return None
    value = json.loads(body.decode("utf-8"))
    return value if isinstance(value, dict) else None


def _json_list(body: bytes, what: str) -> list[dict[str, Any]]:
    """A JSON array of objects; an empty body is an empty list (the broker sets no body when it has none)."""
    if not body or not body.strip():
        return []
    try:
        value = loads_json(body)
    except (ValueError, RecursionError) as exc:
        raise ResponseFormatError(f"{what}: response body is not JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        # No excerpt of the body: a user list carries passwords.
        raise ResponseFormatError(f"{what}: response body is not a JSON array of objects")
    return value


def _body(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


class AuthAdmin:
    """User and ACL admin calls on brokers, through a shared :class:`RemotingClient`."""

    def __init__(self, client: RemotingClient) -> None:
        self.client = client

    async def get_user(self, addr: str, username: str, *, timeout: float | None = None) -> dict[str, Any] | None:
        response = await self.client._call(addr, RequestCode.AUTH_GET_USER, _fields(username=username), timeout=timeout)
        return _json_or_none(response.body)

    async def create_user(self, addr: str, user: dict[str, Any], *, timeout: float | None = None) -> None:
        fields = _fields(username=user["username"])
        await self.client._call(addr, RequestCode.AUTH_CREATE_USER, fields, _body(user), timeout=timeout)

    async def update_user(self, addr: str, user: dict[str, Any], *, timeout: float | None = None) -> None:
        fields = _fields(username=user["username"])
        await self.client._call(addr, RequestCode.AUTH_UPDATE_USER, fields, _body(user), timeout=timeout)

    async def delete_user(self, addr: str, username: str, *, timeout: float | None = None) -> None:
        """AUTH_DELETE_USER (3003): the user and its ACL (RocketMQ deletes both)."""
        await self.client._call(addr, RequestCode.AUTH_DELETE_USER, _fields(username=username), timeout=timeout)

    async def get_acl(self, addr: str, subject: str, *, timeout: float | None = None) -> dict[str, Any] | None:
        response = await self.client._call(addr, RequestCode.AUTH_GET_ACL, _fields(subject=subject), timeout=timeout)
        return _json_or_none(response.body)

    async def create_acl(self, addr: str, acl: dict[str, Any], *, timeout: float | None = None) -> None:
        fields = _fields(subject=acl["subject"])
        await self.client._call(addr, RequestCode.AUTH_CREATE_ACL, fields, _body(acl), timeout=timeout)

    async def update_acl(self, addr: str, acl: dict[str, Any], *, timeout: float | None = None) -> None:
        fields = _fields(subject=acl["subject"])
        await self.client._call(addr, RequestCode.AUTH_UPDATE_ACL, fields, _body(acl), timeout=timeout)

    async def list_users(
        self, addr: str, *, name_filter: str | None = None, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """AUTH_LIST_USER (3005): every user of the broker's store (``name_filter``: names containing it)."""
        response = await self.client._call(
            addr, RequestCode.AUTH_LIST_USER, _fields(filter=name_filter), timeout=timeout
        )
        return _json_list(response.body, "AUTH_LIST_USER")

    async def list_acls(
        self,
        addr: str,
        *,
        subject_filter: str | None = None,
        resource_filter: str | None = None,
        timeout: float | None = None,
    ) -> list[dict[str, Any]]:
        """AUTH_LIST_ACL (3010): every ACL of the broker's store (optionally filtered by subject and resource)."""
        fields = _fields(subjectFilter=subject_filter, resourceFilter=resource_filter)
        response = await self.client._call(addr, RequestCode.AUTH_LIST_ACL, fields, timeout=timeout)
        return _json_list(response.body, "AUTH_LIST_ACL")

    async def delete_acl_entry(
        self, addr: str, subject: str, resource: str, *, policy_type: str = "Custom", timeout: float | None = None
    ) -> None:
        fields = _fields(subject=subject, policyType=policy_type, resource=resource)
        await self.client._call(addr, RequestCode.AUTH_DELETE_ACL, fields, timeout=timeout)

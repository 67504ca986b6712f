"""RocketMQ's session-credentials signature on remoting requests (how ACL 2.0 brokers authenticate a client).

Contract: `sign(request, credentials)` adds ``AccessKey`` (and ``SecurityToken`` when set) to the request's ext
fields, then ``Signature``: base64(HMAC-SHA1(secret key, the values of every other ext field in key order, UTF-8,
followed by the body)). That is what the Java client's ``AclClientRPCHook`` sends and what the broker's
``DefaultAuthenticationContextBuilder`` recomputes with the user's password (tests check it against vectors
computed by the Java hook of the pinned release). Written here because the remoting protocol has no maintained
Python client (see the package docstring); only the standard library is used.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass, field

from .codec import RemotingCommand

ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
SIGNATURE = "Signature"


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """A user's name (``access_key``) and password (``secret_key``, never shown by repr)."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)


def signature(fields: dict[str, str], body: bytes, secret_key: str) -> str:
    """The ``Signature`` value for these ext fields (``Signature`` itself excluded) and body."""
    content = "".join(value for key, value in sorted(fields.items()) if key != SIGNATURE).encode("utf-8") + body
    return base64.b64encode(hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()).decode("ascii")


def sign(request: RemotingCommand, credentials: SessionCredentials) -> RemotingCommand:
    """``request`` with the credentials' fields and signature added (in place; returned for chaining)."""
    request.ext_fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        request.ext_fields[SECURITY_TOKEN] = credentials.security_token
    request.ext_fields[SIGNATURE] = signature(request.ext_fields, request.body, credentials.secret_key)
    return request

"""Request signatures as the Java client's AclClientRPCHook computes them (vectors from the 5.5.0 jars, by
running the hook on the same request), and a pool with credentials signing every request it sends."""

from __future__ import annotations

import asyncio

from rocketmq_operator.remoting import RemotingCommand, SessionCredentials
from rocketmq_operator.remoting.auth import sign
from rocketmq_operator.remoting.connection import ClientPool


def test_signature_matches_the_java_hook() -> None:
    request = RemotingCommand(
        code=310, ext_fields={"topic": "orders", "queueId": "3", "a": "ünï", "producerGroup": "g1"}, body=b"hello body"
    )
    sign(request, SessionCredentials("rocketmq2", "12345678"))
    assert request.ext_fields["AccessKey"] == "rocketmq2"
    assert request.ext_fields["Signature"] == "GXIe90WBTW/KbNXUesabVmNmy0M="


def test_signature_with_a_security_token_and_no_body_matches_the_java_hook() -> None:
    request = RemotingCommand(code=3005)
    sign(request, SessionCredentials("admin", "s3cret", "tok"))
    assert request.ext_fields == {
        "AccessKey": "admin",
        "SecurityToken": "tok",
        "Signature": "sXO+fQR2vIhuZJKGp0dCigot/+E=",
    }


def test_the_secret_never_shows_in_a_repr() -> None:
    assert "12345678" not in repr(SessionCredentials("u", "12345678", "token"))


def test_a_pool_with_credentials_signs_what_it_sends() -> None:
    seen: list[dict[str, str]] = []

    async def main() -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            from rocketmq_operator.remoting import FrameDecoder

            decoder = FrameDecoder()
            while data := await reader.read(65536):
                for command in decoder.feed(data):
                    seen.append(dict(command.ext_fields))
                    reply = RemotingCommand(code=0, opaque=command.opaque, flag=1)
                    writer.write(reply.encode())
                    await writer.drain()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = ClientPool(credentials=SessionCredentials("rocketmq2", "12345678"))
        try:
            request = RemotingCommand(code=310, ext_fields={"topic": "orders"}, body=b"x")
            await pool.invoke(f"127.0.0.1:{port}", request, timeout=5)
        finally:
            await pool.close()
            server.close()

    asyncio.run(main())
    assert seen and seen[0]["AccessKey"] == "rocketmq2" and seen[0]["Signature"]
    assert seen[0]["topic"] == "orders"

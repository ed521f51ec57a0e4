"""The multiplexed client: one connection per address, opaque matching, deadlines, backoff, broker callbacks."""

import asyncio
import struct
import time

import pytest

from monitor.remoting.acl import AclCredentials, verify_signature
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import (
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)
from tests.responder import Responder
from tests.support.network import free_port


def run(coro):
    return asyncio.run(coro)


def test_concurrent_requests_share_one_connection_and_get_their_own_answers():
    # Answers come back in reverse order of arrival; each caller must still get its own.
    def handler(cmd):
        return cmd.make_response(body=cmd.ext("n").encode())

    with Responder(handler, delay=0.05) as server:

        async def main():
            client = RemotingClient()
            cmds = [RemotingCommand.request(28, {"n": str(i)}) for i in range(200)]
            responses = await asyncio.gather(*(client.invoke(server.addr, c) for c in cmds))
            await client.close()
            return responses

        responses = run(main())
    assert [r.body.decode() for r in responses] == [str(i) for i in range(200)]
    assert server.connections == 1


def test_a_request_without_answer_times_out_naming_address_and_request():
    with Responder(lambda cmd: None) as server:

        async def main():
            client = RemotingClient(timeout=0.3)
            started = time.monotonic()
            with pytest.raises(RemotingTimeoutError) as err:
                await client.invoke(server.addr, RemotingCommand.request(319))
            await client.close()
            return time.monotonic() - started, err.value

        elapsed, error = run(main())
    assert 0.25 < elapsed < 2
    assert server.addr in str(error)
    assert "GET_NAMESRV_CONFIG" in str(error)


def test_refused_connection_names_the_address_and_backs_off():
    addr = f"127.0.0.1:{free_port()}"

    async def main():
        client = RemotingClient()
        with pytest.raises(RemotingConnectError) as first:
            await client.invoke(addr, RemotingCommand.request(28))
        started = time.monotonic()
        with pytest.raises(RemotingConnectError) as second:
            await client.invoke(addr, RemotingCommand.request(28))
        await client.close()
        return first.value, second.value, time.monotonic() - started

    first, second, elapsed = run(main())
    assert f"connect to {addr} failed" in str(first)
    assert "next try in" in str(second)  # within the backoff window the call fails at once
    assert elapsed < 0.1


def test_client_reconnects_after_the_server_drops_the_connection():
    with Responder() as server:

        async def main():
            client = RemotingClient()
            await client.invoke(server.addr, RemotingCommand.request(28))
            server.drop_connections()
            await asyncio.sleep(0.05)
            response = await client.invoke(server.addr, RemotingCommand.request(28, body=b"again"))
            await client.close()
            return response

        response = run(main())
    assert response.body == b"again"
    assert server.connections == 2


def test_in_flight_requests_per_address_are_bounded():
    with Responder(delay=0.05) as server:

        async def main():
            client = RemotingClient(max_inflight=3)
            await asyncio.gather(*(client.invoke(server.addr, RemotingCommand.request(28)) for _ in range(20)))
            await client.close()

        run(main())
    assert server.max_outstanding == 3


def test_a_malformed_frame_fails_the_waiting_request_and_the_next_call_reconnects():
    answers = iter([b"\x00\x00\x00\x08\x00\x00\x00\x04{bad", None])

    def handler(cmd):
        nxt = next(answers, None)
        return nxt if nxt is not None else cmd.make_response(body=b"fine")

    with Responder(handler) as server:

        async def main():
            client = RemotingClient()
            with pytest.raises(ProtocolError, match="malformed frame"):
                await client.invoke(server.addr, RemotingCommand.request(28))
            await asyncio.sleep(0.25)  # past the first reconnect backoff
            response = await client.invoke(server.addr, RemotingCommand.request(28))
            await client.close()
            return response

        assert run(main()).body == b"fine"


def test_pending_requests_fail_when_the_peer_closes():
    with Responder(lambda cmd: None) as server:

        async def main():
            client = RemotingClient(timeout=5)
            task = asyncio.create_task(client.invoke(server.addr, RemotingCommand.request(28)))
            await asyncio.sleep(0.1)
            server.drop_connections()
            with pytest.raises(RemotingClosedError):
                await task
            await client.close()

        run(main())


def test_broker_callbacks_are_answered_by_the_handler_or_rejected_like_java():
    async def handler(addr, cmd):
        if cmd.code == 307:
            return cmd.make_response(body=b'{"jstack":""}', language="PYTHON")
        return None

    with Responder() as server:

        async def main():
            client = RemotingClient(request_handler=handler)
            await client.invoke(server.addr, RemotingCommand.request(28))  # opens the connection
            server.push_request(RemotingCommand(code=307, opaque=9001, ext_fields={"consumerGroup": "g"}))
            server.push_request(RemotingCommand(code=9999, opaque=9002))
            server.push_request(RemotingCommand(code=40, opaque=9003, flag=2))  # oneway: no answer
            for _ in range(50):
                if len(server.client_replies) >= 2:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)
            await client.close()

        run(main())
    replies = {r.opaque: r for r in server.client_replies}
    assert set(replies) == {9001, 9002}
    assert replies[9001].code == ResponseCode.SUCCESS and replies[9001].body == b'{"jstack":""}'
    assert replies[9002].code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert replies[9002].remark == " request type 9999 not supported"


def test_acl_clusters_get_signed_requests():
    with Responder() as server:

        async def main():
            client = RemotingClient(acl=AclCredentials("ak", "sk"))
            await client.invoke(server.addr, RemotingCommand.request(208, {"consumerGroup": "g"}, body=b"b"))
            await client.close()

        run(main())
    cmd = server.received[0]
    assert cmd.ext("AccessKey") == "ak"
    assert verify_signature(cmd, "sk")
    assert not verify_signature(cmd, "wrong")


def test_bad_addresses_are_refused_before_connecting():
    async def main():
        client = RemotingClient()
        with pytest.raises(RemotingConnectError, match="HOST:PORT"):
            await client.invoke("no-port-here", RemotingCommand.request(28))

    run(main())


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -1),  # absurd length
        struct.pack(">iI", 4 + 20_000, 20_000) + b"[" * 20_000,  # JSON header nested past the stack
        struct.pack(">iI", 4 + 14, 14) + b'{"code":"--5"}',  # an integer Java could not read
        struct.pack(">iI", 4 + 6, (1 << 24) | 6) + b"\0" * 6,  # ROCKETMQ header cut short
    ],
    ids=["absurd-length", "deep-json-header", "bad-integer", "short-binary-header"],
)
def test_a_malformed_frame_fails_only_the_requests_of_its_connection(garbage):
    """Every request waiting on the connection gets ProtocolError naming the server; another server's connection in
    the same client is untouched."""

    def broken(cmd):
        return garbage if cmd.ext("last") else None  # answer nothing until the last request, then garbage

    with Responder(broken) as bad, Responder() as good:

        async def main():
            client = RemotingClient(timeout=5)
            await client.invoke(good.addr, RemotingCommand.request(28, body=b"before"))
            waiting = [asyncio.create_task(client.invoke(bad.addr, RemotingCommand.request(28))) for _ in range(3)]
            await asyncio.sleep(0.05)
            last = await asyncio.gather(
                client.invoke(bad.addr, RemotingCommand.request(28, {"last": "1"})), *waiting, return_exceptions=True
            )
            after = await client.invoke(good.addr, RemotingCommand.request(28, body=b"after"))
            await client.close()
            return last, after

        failures, after = run(main())
    assert all(isinstance(failure, ProtocolError) and bad.addr in str(failure) for failure in failures)
    assert after.body == b"after"
    assert good.connections == 1  # the good server's connection was never dropped

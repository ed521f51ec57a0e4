"""The sandbox RemotingServer: Java-remoting answers, connection handling, server-to-client calls, fault hooks."""

import asyncio
import base64
import json
import socket
import struct
import time

import pytest

from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import ResponseCode, SerializeType
from monitor.remoting.command import FrameDecoder, RemotingCommand, decode_frame, encode_frame
from monitor.remoting.errors import ProtocolError, RemotingClosedError, RemotingTimeoutError
from monitor.remoting.sync import run_sync
from monitor.sandbox.server import RemotingServer
from tests.fixtures import FIXTURES_DIR
from tests.support.waiting import wait_for


async def echo(conn, cmd):
    return cmd.make_response(body=cmd.body)


def broker_style() -> RemotingServer:
    server = RemotingServer(name="test-broker")
    server.register(28, echo)
    return server


def raw_connection(server: RemotingServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=2)


def read_frame(sock: socket.socket) -> RemotingCommand | None:
    """The next frame from a raw socket, None when the server closed the connection."""
    decoder = FrameDecoder()
    while True:
        data = sock.recv(65536)
        if not data:
            return None
        commands = decoder.feed(data)
        if commands:
            return commands[0]


def test_unknown_code_is_answered_like_a_java_broker():
    capture = json.loads((FIXTURES_DIR / "REQUEST_CODE_NOT_SUPPORTED_broker.json").read_text())
    with broker_style() as server, raw_connection(server) as sock:
        sock.sendall(base64.b64decode(capture["request"]["frame_b64"]))
        response = read_frame(sock)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 9999 not supported"
    assert encode_frame(response) == base64.b64decode(capture["response"]["frame_b64"])


def test_oneway_requests_get_no_answer():
    with broker_style() as server, raw_connection(server) as sock:
        sock.sendall(encode_frame(RemotingCommand(code=9999, opaque=1, flag=2)))
        sock.sendall(encode_frame(RemotingCommand(code=28, opaque=2, flag=2)))
        sock.sendall(encode_frame(RemotingCommand(code=28, opaque=3, body=b"x")))
        response = read_frame(sock)
    assert (response.opaque, response.body) == (3, b"x")
    assert server.received == {9999: 1, 28: 2}


def test_rocketmq_serialized_requests_are_answered_in_kind():
    with broker_style() as server, raw_connection(server) as sock:
        request = RemotingCommand(code=28, opaque=7, body=b"hi", serialize_type=SerializeType.ROCKETMQ)
        sock.sendall(encode_frame(request))
        data = sock.recv(65536)
    assert data[4] == SerializeType.ROCKETMQ  # high byte of the header-length int
    response = decode_frame(data)
    assert (response.opaque, response.flag, response.body, response.language) == (7, 1, b"hi", "JAVA")


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -5),  # absurd length
        struct.pack(">ii", 9, 5) + b"nope!",  # JSON header that is not JSON
        struct.pack(">ii", 4, 9 << 24),  # unknown serialize type
    ],
)
def test_a_malformed_frame_closes_only_that_connection(garbage):
    closed = []
    server = broker_style()
    server.on_close(lambda conn: closed.append(conn.remote_addr))
    with server, raw_connection(server) as good, raw_connection(server) as bad:
        bad_addr = "{}:{}".format(*bad.getsockname())
        bad.sendall(garbage)
        assert read_frame(bad) is None
        good.sendall(encode_frame(RemotingCommand(code=28, opaque=1, body=b"still here")))
        assert read_frame(good).body == b"still here"
        with raw_connection(server) as fresh:
            fresh.sendall(encode_frame(RemotingCommand(code=28, opaque=2)))
            assert read_frame(fresh).opaque == 2
        wait_for(lambda: bad_addr in closed, timeout=2.0)
        assert "{}:{}".format(*good.getsockname()) not in closed


def test_handler_errors_become_system_error_answers():
    async def broken(conn, cmd):
        raise ValueError("boom")

    async def undecodable(conn, cmd):
        raise ProtocolError("the custom field <topic> is null")

    server = RemotingServer()
    server.register(1, broken)
    server.register(2, undecodable)
    with server, raw_connection(server) as sock:
        sock.sendall(encode_frame(RemotingCommand(code=1, opaque=5)))
        first = read_frame(sock)
        sock.sendall(encode_frame(RemotingCommand(code=2, opaque=6, serialize_type=SerializeType.ROCKETMQ)))
        second = read_frame(sock)
    assert (first.code, first.opaque, first.remark) == (ResponseCode.SYSTEM_ERROR, 5, "ValueError: boom")
    assert second.remark == (
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <topic> is null"
    )
    assert second.serialize_type == SerializeType.JSON  # Java builds this answer outside the serialize-type echo


def test_server_calls_the_client_back_on_its_own_connection():
    seen = []

    async def client_side(addr, cmd):
        seen.append(cmd)
        if cmd.code == 307:
            return cmd.make_response(body=b'{"properties":{}}')
        return None

    server = broker_style()

    async def scenario():
        async with server:
            client = RemotingClient(request_handler=client_side, timeout=2)
            await client.invoke(server.addr, RemotingCommand.request(28))
            (conn,) = server.connections
            reply = await conn.request(RemotingCommand(code=307, language="JAVA", ext_fields={"clientId": "c1"}))
            await conn.oneway(RemotingCommand(code=40, language="JAVA", ext_fields={"consumerGroup": "g"}))
            unknown = await conn.request(RemotingCommand(code=9999, language="JAVA"))
            await asyncio.sleep(0.05)
            await client.close()
            await asyncio.sleep(0.05)
            with pytest.raises(RemotingClosedError):
                await conn.request(RemotingCommand(code=307))
            return reply, unknown

    reply, unknown = asyncio.run(scenario())
    assert (reply.code, reply.body) == (0, b'{"properties":{}}')
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED  # how the client library answers what it lacks
    assert [(c.code, c.is_oneway, c.ext_fields) for c in seen] == [
        (307, False, {"clientId": "c1"}),
        (40, True, {"consumerGroup": "g"}),
        (9999, False, None),
    ]
    assert [c.opaque for c in seen] == [1, 2, 3]  # the server's own counter, not the client's


def test_threaded_server_calls_back_a_synchronous_client():
    async def client_side(addr, cmd):
        return cmd.make_response(body=b"running info")

    with broker_style() as server:
        client = RemotingClient(request_handler=client_side)
        try:
            run_sync(client.invoke(server.addr, RemotingCommand.request(28)))
            (conn,) = server.connections
            reply = server.run(conn.request(RemotingCommand(code=307, language="JAVA")))
        finally:
            run_sync(client.close())
    assert reply.body == b"running info"


def test_server_request_times_out_when_the_client_does_not_answer():
    async def slow(addr, cmd):
        await asyncio.sleep(1)

    async def scenario():
        async with broker_style() as server:
            client = RemotingClient(request_handler=slow)
            await client.invoke(server.addr, RemotingCommand.request(28))
            (conn,) = server.connections
            started = time.monotonic()
            with pytest.raises(RemotingTimeoutError):
                await conn.request(RemotingCommand(code=307), timeout=0.2)
            elapsed = time.monotonic() - started
            await client.close()
            return elapsed

    assert asyncio.run(scenario()) < 0.5


def test_close_callbacks_run_for_every_closed_connection():
    events = []

    async def async_callback(conn):
        events.append(("async", conn.remote_addr))

    server = broker_style()
    server.on_close(lambda conn: events.append(("sync", conn.remote_addr)))
    server.on_close(async_callback)
    with server:
        sock = raw_connection(server)
        addr = "{}:{}".format(*sock.getsockname())
        sock.close()
        wait_for(lambda: len(events) == 2, timeout=2.0)
    assert events == [("sync", addr), ("async", addr)]


def test_idle_connections_are_closed():
    server = RemotingServer(idle_timeout=0.2)
    with server, raw_connection(server) as sock:
        started = time.monotonic()
        assert read_frame(sock) is None
        assert 0.15 < time.monotonic() - started < 2


def test_pause_delay_and_drop():
    async def scenario():
        async with broker_style() as server:
            client = RemotingClient(timeout=0.3)
            server.pause()
            with pytest.raises(RemotingTimeoutError):
                await client.invoke(server.addr, RemotingCommand.request(28))
            server.resume()
            assert (await client.invoke(server.addr, RemotingCommand.request(28))).code == 0

            server.set_delay(0.1)
            started = time.monotonic()
            await client.invoke(server.addr, RemotingCommand.request(28))
            assert time.monotonic() - started >= 0.1
            server.set_delay(0)

            server.set_drop_ratio(1.0)
            with pytest.raises(RemotingTimeoutError):
                await client.invoke(server.addr, RemotingCommand.request(28))
            server.set_drop_ratio(0.0)
            assert (await client.invoke(server.addr, RemotingCommand.request(28))).code == 0
            await client.close()

    asyncio.run(scenario())


def test_pause_from_another_thread_holds_requests_until_resume():
    with broker_style() as server, raw_connection(server) as sock:
        server.pause()
        assert server.paused
        sock.sendall(encode_frame(RemotingCommand(code=28, opaque=1)))
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        server.resume()
        sock.settimeout(2)
        assert read_frame(sock).opaque == 1  # handled late, as a process that wakes up again


def test_stop_and_restart_on_the_same_port():
    server = broker_style().start()
    try:
        addr = server.addr
        assert server.port != 0
        with raw_connection(server) as sock:
            server.stop()
            assert read_frame(sock) is None
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((server.host, server.port), timeout=1)
        server.start()
        assert server.addr == addr
        with raw_connection(server) as sock:
            sock.sendall(encode_frame(RemotingCommand(code=28, opaque=4)))
            assert read_frame(sock).opaque == 4
    finally:
        server.stop()


def test_fault_settings_are_validated():
    server = RemotingServer()
    with pytest.raises(ValueError):
        server.set_drop_ratio(1.5)
    with pytest.raises(ValueError):
        server.set_delay(-1)
    with pytest.raises(RuntimeError):
        server.pause()

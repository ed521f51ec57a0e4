"""Garbage sent to a live sandbox name server or broker closes only the connection it came on, is logged once without
a traceback, and the server goes on answering everyone else (issue 15, finding 9).

Budget: 150 generated examples (``deadline=None``): arbitrary bytes and mutated real captured frames, each on a
fresh connection, followed by a good request on another fresh connection.
"""

import contextlib
import logging
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import FrameDecoder, RemotingCommand, encode_frame
from monitor.sandbox.cluster import SandboxCluster
from tests.remoting.test_decode_fuzz import FRAMES, FRAMES_WITH_MUTATED_HEADERS, mutated

# A request each server answers with SUCCESS, and who logs for it.
GOOD_REQUESTS = {"namesrv": RequestCode.GET_NAMESRV_CONFIG, "broker-a": RequestCode.GET_BROKER_CONFIG}
IO_TIMEOUT = 5.0


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(scope="module")
def sandbox():
    with SandboxCluster(brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def sandbox_log():
    """What the sandbox logs, and what asyncio logs for it (a server task that died of an exception)."""
    handler = Records()
    loggers = [logging.getLogger("monitor.sandbox"), logging.getLogger("asyncio")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    yield handler
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def send_and_drain(addr: str, data: bytes) -> None:
    """Send ``data`` as one client that then stops writing, and read until the server closes the connection."""
    host, port = addr.rsplit(":", 1)
    # The server may close (a reset, for unread bytes) before it has read everything.
    with socket.create_connection((host, int(port)), timeout=IO_TIMEOUT) as sock, contextlib.suppress(ConnectionError):
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(65536):
            pass


def ask(addr: str, code: int) -> RemotingCommand:
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=IO_TIMEOUT) as sock:
        sock.sendall(encode_frame(RemotingCommand.request(code)))
        decoder = FrameDecoder()
        while not (commands := decoder.feed(sock.recv(65536))):
            pass
        return commands[0]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    target=st.sampled_from(sorted(GOOD_REQUESTS)),
    garbage=st.binary(min_size=1, max_size=400)
    | st.sampled_from(FRAMES).flatmap(mutated)
    | FRAMES_WITH_MUTATED_HEADERS,
)
def test_garbage_on_one_connection_never_stops_the_server_answering_another(sandbox, sandbox_log, target, garbage):
    addr = sandbox.server(target).addr
    sandbox_log.records.clear()

    send_and_drain(addr, garbage)

    assert ask(addr, GOOD_REQUESTS[target]).code == ResponseCode.SUCCESS
    assert not [r for r in sandbox_log.records if r.exc_info], "a traceback was logged"
    malformed = [r for r in sandbox_log.records if "malformed frame" in r.getMessage()]
    assert len(malformed) <= 1  # once per connection


def test_a_malformed_frame_is_logged_once_as_a_warning_without_traceback(sandbox, sandbox_log):
    sandbox_log.records.clear()
    send_and_drain(sandbox.namesrv.addr, b"\x00\x00\x00\x0a\x00\x00\x00\x06" + b"[1,2,]")
    assert ask(sandbox.namesrv.addr, RequestCode.GET_NAMESRV_CONFIG).code == ResponseCode.SUCCESS
    (record,) = [r for r in sandbox_log.records if r.levelno >= logging.WARNING]
    assert "malformed frame" in record.getMessage() and "not valid JSON" in record.getMessage()
    assert record.exc_info is None

"""The multiplexed remoting client: one TCP connection per address, many requests in flight on it.

Requests are matched to responses by opaque, so hundreds of admin calls to one broker share one socket without a
thread each. Each address has a bound on requests in flight (a broker's remoting thread pool is small; flooding it
only makes every call slower), each request a deadline that covers waiting for that bound, connecting and the
answer. A failed connect is retried on the next call after a growing backoff, so a dead broker costs one quick
error instead of a connect timeout per call. Brokers also send requests to clients (GET_CONSUMER_RUNNING_INFO,
NOTIFY_CONSUMER_IDS_CHANGED, ...): they go to an optional handler, and are otherwise answered the way a Java
client answers an unknown code.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from monitor.remoting.acl import AclCredentials
from monitor.remoting.codes import ONEWAY_FLAG, ResponseCode
from monitor.remoting.command import FrameDecoder, RemotingCommand, encode_frame
from monitor.remoting.errors import (
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)

log = logging.getLogger(__name__)

ServerRequestHandler = Callable[[str, RemotingCommand], Awaitable[RemotingCommand | None]]

DEFAULT_TIMEOUT = 5.0
DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_MAX_INFLIGHT = 64
BACKOFF_FIRST = 0.2
BACKOFF_MAX = 10.0


def split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RemotingConnectError(addr, "address must be HOST:PORT")
    return host.strip("[]"), int(port)


def expect_success(response: RemotingCommand, request: RemotingCommand, addr: str, *ok_codes: int) -> RemotingCommand:
    """Return the response if its code is SUCCESS (or one of ok_codes), else raise a typed RemotingError."""
    if response.code == ResponseCode.SUCCESS or response.code in ok_codes:
        return response
    raise RemotingError(response.code, response.remark, request_code=request.code, addr=addr)


class _Connection:
    def __init__(self, client: RemotingClient, addr: str):
        self.client = client
        self.addr = addr
        self.host, self.port = split_addr(addr)
        self.inflight = asyncio.Semaphore(client.max_inflight)
        self.pending: dict[int, asyncio.Future] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._connect_lock = asyncio.Lock()
        self._backoff = 0.0
        self._retry_at = 0.0
        self._outbox: list[bytes] = []

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def ensure_connected(self) -> asyncio.StreamWriter:
        if self.connected:
            return self._writer
        async with self._connect_lock:
            if self.connected:
                return self._writer
            loop = asyncio.get_running_loop()
            if loop.time() < self._retry_at:
                wait = self._retry_at - loop.time()
                raise RemotingConnectError(self.addr, f"previous attempt failed; next try in {wait:.1f}s")
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.client.connect_timeout
                )
            except (OSError, TimeoutError) as exc:
                self._backoff = min(max(self._backoff * 2, BACKOFF_FIRST), BACKOFF_MAX)
                self._retry_at = loop.time() + self._backoff
                reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
                raise RemotingConnectError(self.addr, reason) from None
            self._backoff = 0.0
            self._retry_at = 0.0
            self._writer = writer
            self._reader_task = loop.create_task(self._read_loop(reader, writer))
            return writer

    async def request(self, cmd: RemotingCommand) -> RemotingCommand:
        writer = await self.ensure_connected()
        future = asyncio.get_running_loop().create_future()
        self.pending[cmd.opaque] = future
        try:
            self._send(writer, encode_frame(cmd))
            await writer.drain()
            return await future
        except (ConnectionError, OSError) as exc:
            self._close(writer)
            raise RemotingClosedError(self.addr, f"write failed: {exc}") from None
        finally:
            self.pending.pop(cmd.opaque, None)

    async def oneway(self, cmd: RemotingCommand) -> None:
        writer = await self.ensure_connected()
        try:
            self._send(writer, encode_frame(cmd))
            await writer.drain()
        except (ConnectionError, OSError) as exc:
            self._close(writer)
            raise RemotingClosedError(self.addr, f"write failed: {exc}") from None

    def _send(self, writer: asyncio.StreamWriter, frame: bytes) -> None:
        """Queue a frame; the frames queued during one turn of the event loop go out in one write.

        A collection cycle issues hundreds of requests to a broker at once: one system call for all of them instead
        of one each halves the client's CPU per request. Order is kept, so requests still reach the broker in the
        order they were made."""
        if not self._outbox:
            asyncio.get_running_loop().call_soon(self._flush, writer)
        self._outbox.append(frame)

    def _flush(self, writer: asyncio.StreamWriter) -> None:
        frames, self._outbox = self._outbox, []
        if frames and not writer.is_closing():
            writer.write(b"".join(frames))

    async def _read_loop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        failure: Exception = RemotingClosedError(self.addr, "connection closed by peer")
        try:
            while True:
                data = await reader.read(256 * 1024)
                if not data:
                    break
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        future = self.pending.get(cmd.opaque)
                        if future is not None and not future.done():
                            future.set_result(cmd)
                    else:
                        asyncio.get_running_loop().create_task(self._answer_server_request(cmd, writer))
                decoder.check()
        except ProtocolError as exc:
            log.warning("closing connection to %s: %s", self.addr, exc)
            failure = ProtocolError(f"{self.addr} sent a malformed frame: {exc}")
        except (ConnectionError, OSError) as exc:
            failure = RemotingClosedError(self.addr, f"connection lost: {exc}")
        finally:
            self._close(writer)
            for future in list(self.pending.values()):
                if not future.done():
                    future.set_exception(failure)

    async def _answer_server_request(self, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
        handler = self.client.request_handler
        response: RemotingCommand | None = None
        try:
            if handler is not None:
                response = await handler(self.addr, cmd)
        except Exception as exc:  # a bad handler must not take the connection down; the broker gets the error
            log.exception("handler for request code %s from %s failed", cmd.code, self.addr)
            response = cmd.make_response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if cmd.is_oneway:
            return
        if response is None:
            response = cmd.make_response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported"
            )
        response.opaque = cmd.opaque
        response.flag |= 1
        if not writer.is_closing():
            writer.write(encode_frame(response))

    def _close(self, writer: asyncio.StreamWriter) -> None:
        if self._writer is writer:
            self._writer = None
        if not writer.is_closing():
            writer.close()

    async def close(self) -> None:
        if self._writer is not None:
            self._close(self._writer)
        if self._reader_task is not None:
            self._reader_task.cancel()
            try:
                await self._reader_task
            except (asyncio.CancelledError, Exception):  # closing: the read loop's own outcome no longer matters
                log.debug("reader of %s ended while closing", self.addr)


class RemotingClient:
    """Asynchronous client. Use from one event loop; the synchronous facade (monitor.remoting.sync) owns one."""

    def __init__(
        self,
        *,
        acl: AclCredentials | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        request_handler: ServerRequestHandler | None = None,
    ):
        if max_inflight < 1:
            raise ValueError("max_inflight must be at least 1")
        self.acl = acl
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_inflight = max_inflight
        self.request_handler = request_handler
        self._connections: dict[str, _Connection] = {}

    def _connection(self, addr: str) -> _Connection:
        conn = self._connections.get(addr)
        if conn is None:
            conn = self._connections[addr] = _Connection(self, addr)
        return conn

    def _prepare(self, cmd: RemotingCommand) -> RemotingCommand:
        return self.acl.sign(cmd) if self.acl is not None else cmd

    async def invoke(self, addr: str, cmd: RemotingCommand, *, timeout: float | None = None) -> RemotingCommand:
        """Send a request and wait for its response (any response code; see expect_success)."""
        timeout = self.timeout if timeout is None else timeout
        conn = self._connection(addr)
        self._prepare(cmd)
        try:
            async with asyncio.timeout(timeout), conn.inflight:
                return await conn.request(cmd)
        except TimeoutError:
            raise RemotingTimeoutError(addr, cmd.code, timeout) from None

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, *, timeout: float | None = None) -> None:
        timeout = self.timeout if timeout is None else timeout
        cmd.flag |= ONEWAY_FLAG
        conn = self._connection(addr)
        self._prepare(cmd)
        try:
            async with asyncio.timeout(timeout), conn.inflight:
                await conn.oneway(cmd)
        except TimeoutError:
            raise RemotingTimeoutError(addr, cmd.code, timeout) from None

    async def close(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for conn in connections:
            await conn.close()

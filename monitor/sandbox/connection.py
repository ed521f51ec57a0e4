"""One accepted connection of a sandbox server, its Netty channel: what handlers receive with each request.

State lives with connections (a name server drops a broker's routes when its connection closes, a broker keys its
consumer tables by connection), and brokers call their clients back over the clients' own connections
(GET_CONSUMER_RUNNING_INFO relayed from an admin, NOTIFY_CONSUMER_IDS_CHANGED and RESET_CONSUMER_CLIENT_OFFSET
oneway), so a connection can send requests, numbered from the server's own opaque counter like a Java process's, and
match the client's replies to them. Reading frames from it is the server's job (:mod:`monitor.sandbox.server`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from monitor.remoting.codes import ONEWAY_FLAG, RESPONSE_FLAG
from monitor.remoting.command import RemotingCommand, encode_frame
from monitor.remoting.errors import RemotingClosedError, RemotingTimeoutError

if TYPE_CHECKING:
    from monitor.sandbox.server import RemotingServer

log = logging.getLogger(__name__)

# How long a server-to-client request waits for the client's reply unless the caller says otherwise.
DEFAULT_CLIENT_REQUEST_TIMEOUT = 5.0


class Connection:
    """One accepted connection, the sandbox's Netty channel: handlers receive it with each request.

    It identifies the peer (``remote_addr``, the client's "ip:port"), can send requests to the client and await
    the reply (:meth:`request`) or send oneway requests (:meth:`oneway`), and can be closed (:meth:`close`), which
    runs the server's close callbacks. Its methods must be called on the server's loop."""

    def __init__(self, server: RemotingServer, writer: asyncio.StreamWriter, idle_timeout: float | None):
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.server = server
        self.remote_addr = f"{peer[0]}:{peer[1]}"
        self.idle_timeout = idle_timeout
        self.last_activity = asyncio.get_running_loop().time()
        self._writer = writer
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}

    def __repr__(self) -> str:
        return f"<Connection {self.remote_addr} to {self.server.addr}>"

    @property
    def closed(self) -> bool:
        return self._writer.is_closing()

    def send(self, cmd: RemotingCommand) -> None:
        """Write one frame now; a connection already closing silently drops it, as a write to a dead channel."""
        if self.closed:
            log.debug("not writing code %s to closed %s", cmd.code, self.remote_addr)
            return
        self._writer.write(encode_frame(cmd))
        self.last_activity = asyncio.get_running_loop().time()

    async def request(self, cmd: RemotingCommand, timeout: float = DEFAULT_CLIENT_REQUEST_TIMEOUT) -> RemotingCommand:
        """Send a request to the client on this connection and return its reply (any response code).

        The opaque comes from the server's counter, as a broker numbers its own requests. Raises
        RemotingTimeoutError when the client does not answer in time and RemotingClosedError when the connection
        is or becomes closed."""
        if self.closed:
            raise RemotingClosedError(self.remote_addr, "connection already closed")
        cmd.opaque = self.server.next_opaque()
        cmd.flag &= ~(RESPONSE_FLAG | ONEWAY_FLAG)
        future = asyncio.get_running_loop().create_future()
        self._pending[cmd.opaque] = future
        try:
            self.send(cmd)
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise RemotingTimeoutError(self.remote_addr, cmd.code, timeout) from None
        finally:
            self._pending.pop(cmd.opaque, None)

    async def oneway(self, cmd: RemotingCommand) -> None:
        """Send a oneway request (flag bit 1): the client never answers it."""
        if self.closed:
            raise RemotingClosedError(self.remote_addr, "connection already closed")
        cmd.opaque = self.server.next_opaque()
        cmd.flag = (cmd.flag & ~RESPONSE_FLAG) | ONEWAY_FLAG
        self.send(cmd)
        await self.drain()

    def close(self) -> None:
        """Close the connection; the read loop then ends and the server's close callbacks run."""
        if not self.closed:
            self._writer.close()

    async def wait_closed(self) -> None:
        """Wait until the socket is really closed (asyncio closes it a loop turn after close())."""
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError) as exc:
            log.debug("connection %s closed with %s", self.remote_addr, exc)

    async def drain(self) -> None:
        """Wait until what was written has gone out; a connection lost meanwhile is only logged."""
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            log.debug("write to %s failed: %s", self.remote_addr, exc)

    def on_response(self, cmd: RemotingCommand) -> None:
        """Hand the client's reply to the :meth:`request` waiting for it."""
        future = self._pending.get(cmd.opaque)
        if future is None or future.done():
            log.warning("response with opaque %s from %s matches no request", cmd.opaque, self.remote_addr)
            return
        future.set_result(cmd)

    def fail_pending(self) -> None:
        """Fail every :meth:`request` still waiting: the connection closed before the client answered."""
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RemotingClosedError(self.remote_addr, "connection closed"))

"""The server half of RocketMQ's remoting layer, on asyncio, for the sandbox name server and brokers: listening,
accepting, reading frames from each :class:`~monitor.sandbox.connection.Connection` and handing requests to the
answering half it inherits (:class:`~monitor.sandbox.dispatch.Dispatcher`).

A sandbox server has to be more than a function from request to response, because real clients notice the rest:

* state lives with connections, so handlers get the Connection and the server reports every closed connection to its
  close callbacks (:meth:`RemotingServer.on_close`);
* failures must look like real ones: :meth:`RemotingServer.pause` accepts connections but answers nothing, like a
  hung JVM, and :meth:`~RemotingServer.stop` followed by :meth:`~RemotingServer.start` restarts on the same port, as
  a restarted broker comes back at its address (the answer faults are the dispatcher's).

Every request is handled in its own task, as Java hands each to a thread pool, so a handler
waiting on another connection (a relayed call) never blocks the connection it came from. A frame that cannot be
decoded closes that connection only (Java's NettyDecoder does the same); idle connections are closed after
``idle_timeout`` seconds without traffic either way, like the IdleStateHandler of serverChannelMaxIdleTimeSeconds.

The server runs on a thread of its own with its own loop (:meth:`~RemotingServer.start`, :meth:`~RemotingServer.stop`,
``with``), so synchronous tests and the demo can use it, or inside a running loop (:meth:`~RemotingServer.start_async`,
``async with``).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import inspect
import itertools
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Self, TypeVar

from monitor.remoting.command import FrameDecoder
from monitor.remoting.errors import ProtocolError
from monitor.sandbox.connection import Connection
from monitor.sandbox.dispatch import Dispatcher

log = logging.getLogger(__name__)

T = TypeVar("T")
CloseCallback = Callable[[Connection], Awaitable[None] | None]

READ_CHUNK = 256 * 1024
# NettyServerConfig.serverChannelMaxIdleTimeSeconds.
DEFAULT_IDLE_TIMEOUT = 120.0
# NettySystemConfig.socketBacklog, as GET_NAMESRV_CONFIG reports it.
LISTEN_BACKLOG = 1024
# How long the synchronous start/stop wait for the server's loop.
_LIFECYCLE_TIMEOUT = 10.0


class RemotingServer(Dispatcher):
    """A RocketMQ remoting server on ``host:port`` (port 0 picks a free port, kept for restarts).

    Register a handler per request code with :meth:`register`; handlers and answer faults are the
    :class:`~monitor.sandbox.dispatch.Dispatcher`'s, the connections, pausing and the lifecycle this class's."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        answer_unknown_codes: bool = True,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        name: str = "remoting",
    ):
        super().__init__(name=name, answer_unknown_codes=answer_unknown_codes)
        self.host = host
        self.port = port
        self.idle_timeout = idle_timeout
        # Requests received, by code: lets tests and the demo see what a client actually asked.
        self.received: collections.Counter[int] = collections.Counter()
        self._close_callbacks: list[CloseCallback] = []
        self._connections: set[Connection] = set()
        self._tasks: set[asyncio.Task] = set()
        self._opaque = itertools.count(1)
        self._listener: socket.socket | None = None
        self._unopened: set[socket.socket] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._answering: asyncio.Event | None = None

    # --- configuration -------------------------------------------------------------------------------------------

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> list[Connection]:
        return list(self._connections)

    def on_close(self, callback: CloseCallback) -> None:
        """Call ``callback(connection)`` (plain or async) whenever a connection closes, for whatever reason."""
        self._close_callbacks.append(callback)

    def next_opaque(self) -> int:
        """The server's own request id counter, for requests it sends to clients (wraps like a Java int)."""
        return next(self._opaque) % 0x7FFFFFFF

    # --- pausing -------------------------------------------------------------------------------------------------

    def pause(self) -> None:
        """Stop handling anything, like a hung process: connections are still accepted (the kernel does that),
        but no request is read or answered until :meth:`resume`. Requests that arrived meanwhile are then handled,
        and their late answers are ignored by clients that already gave up. A restart clears the pause."""
        self._set_answering(False)

    def resume(self) -> None:
        self._set_answering(True)

    @property
    def paused(self) -> bool:
        return self._answering is not None and not self._answering.is_set()

    def _set_answering(self, answering: bool) -> None:
        event = self._answering
        if event is None:
            raise RuntimeError(f"{self.name} server is not running")
        self._call_in_loop(event.set if answering else event.clear)

    def _call_in_loop(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` on the server's loop and wait for it, so a fault set from a test thread is in force before
        the test's next request can arrive."""
        loop = self._loop
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or running is loop or not loop.is_running():
            fn()
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def call() -> None:
            try:
                fn()
                done.set_result(None)
            except Exception as exc:  # handed to the waiting thread
                done.set_exception(exc)

        loop.call_soon_threadsafe(call)
        done.result(_LIFECYCLE_TIMEOUT)

    # --- lifecycle in a running loop -----------------------------------------------------------------------------

    async def start_async(self) -> Self:
        """Listen (SO_REUSEADDR, as Netty's server bootstrap sets it, so a restart can rebind at once) and accept
        from a reader callback of our own. Not asyncio.start_server, nor a task awaiting sock_accept: in Python
        3.11 both can lose a connection accepted just as the server stops, neither serving nor closing it, and a
        client of a stopped sandbox must see its connection close, as it would when a real server exits."""
        if self._listener is not None:
            raise RuntimeError(f"{self.name} server already running on {self.addr}")
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))
            listener.listen(LISTEN_BACKLOG)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._loop = asyncio.get_running_loop()
        self._answering = asyncio.Event()
        self._answering.set()
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._loop.add_reader(listener.fileno(), self._on_acceptable)
        log.info("%s server listening on %s", self.name, self.addr)
        return self

    async def stop_async(self) -> None:
        """Stop accepting, close every connection (close callbacks run) and cancel handlers still running."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        self._loop.remove_reader(listener.fileno())
        listener.close()  # connections still in the backlog are reset, as by a process that exits
        for conn in list(self._connections):
            conn.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in self._unopened:  # accepted, but stopped before asyncio took it over
            sock.close()
        self._unopened.clear()
        for conn in list(self._connections):  # opened, but stopped before its read loop ever ran
            await self._finish(conn)
        await asyncio.sleep(0)  # a transport cancelled while opening closes its socket on the next loop turn
        self._answering = None
        log.info("%s server on %s stopped", self.name, self.addr)

    async def __aenter__(self) -> Self:
        return await self.start_async()

    async def __aexit__(self, *exc) -> None:
        await self.stop_async()

    # --- lifecycle on a thread of its own ------------------------------------------------------------------------

    def start(self) -> Self:
        """Start on a new thread with its own event loop; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name} server already running on {self.addr}")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"sandbox-{self.name}", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start_async(), loop).result(_LIFECYCLE_TIMEOUT)
        except BaseException:
            self._end_thread(loop, thread)
            raise
        self._thread = thread
        return self

    def stop(self) -> None:
        """Stop the server started with :meth:`start`; it can be started again, on the same port."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        if threading.current_thread() is thread:
            raise RuntimeError("stop() called from the server's own loop; await stop_async() instead")
        try:
            asyncio.run_coroutine_threadsafe(self.stop_async(), loop).result(_LIFECYCLE_TIMEOUT)
        finally:
            self._thread = None
            self._end_thread(loop, thread)

    @staticmethod
    def _end_thread(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_LIFECYCLE_TIMEOUT)
        loop.close()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = _LIFECYCLE_TIMEOUT) -> T:
        """Run a coroutine on the server's loop from another thread and return its result (for tests and the
        demo, e.g. ``server.run(conn.request(cmd))``)."""
        if self._loop is None or not self._loop.is_running():
            coro.close()
            raise RuntimeError(f"{self.name} server is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- serving -------------------------------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_acceptable(self) -> None:
        """Reader callback of the listening socket: accept whatever is waiting, each socket at once owned by a
        task (or, until it runs, by _unopened) so that stop() can always close it."""
        for _ in range(LISTEN_BACKLOG):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of descriptors, aborted handshake: leave the rest in the backlog
                log.warning("%s server: accept failed: %s", self.name, exc)
                return
            sock.setblocking(False)
            self._unopened.add(sock)
            self._spawn(self._open(sock))

    async def _open(self, sock: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=sock)
        except OSError as exc:  # reset before we got to it
            log.debug("%s server: accepted connection failed at once: %s", self.name, exc)
            sock.close()
            return
        finally:
            self._unopened.discard(sock)
        conn = Connection(self, writer, self.idle_timeout or None)
        self._connections.add(conn)
        await self._serve(conn, reader)

    async def _serve(self, conn: Connection, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder()
        try:
            while data := await self._read(conn, reader):
                for cmd in decoder.feed(data):
                    await self._answering.wait()
                    if conn.closed:
                        break
                    if cmd.is_response:
                        conn.on_response(cmd)
                    else:
                        self.received[cmd.code] += 1
                        self._spawn(self._process(conn, cmd))
                decoder.check()
        except ProtocolError as exc:
            log.warning("%s server: closing connection from %s after a malformed frame: %s", self.name, conn, exc)
        except (ConnectionError, OSError) as exc:
            log.debug("%s server: connection from %s lost: %s", self.name, conn.remote_addr, exc)
        finally:
            await self._finish(conn)

    async def _finish(self, conn: Connection) -> None:
        """Close a connection once: fail the server's requests waiting on it and tell the close callbacks."""
        if conn not in self._connections:
            return
        self._connections.discard(conn)
        conn.close()
        conn.fail_pending()
        await conn.wait_closed()
        await self._run_close_callbacks(conn)

    async def _read(self, conn: Connection, reader: asyncio.StreamReader) -> bytes:
        """The next bytes from the client; b"" at end of stream or once the connection has been idle too long
        (traffic in either direction counts, like Netty's ALL_IDLE)."""
        loop = asyncio.get_running_loop()
        while True:
            if conn.idle_timeout is None:
                return await reader.read(READ_CHUNK)
            try:
                async with asyncio.timeout_at(conn.last_activity + conn.idle_timeout):
                    data = await reader.read(READ_CHUNK)
            except TimeoutError:
                if loop.time() >= conn.last_activity + conn.idle_timeout:
                    log.info("%s server: closing %s, idle for %gs", self.name, conn.remote_addr, conn.idle_timeout)
                    return b""
                continue
            conn.last_activity = loop.time()
            return data

    async def _run_close_callbacks(self, conn: Connection) -> None:
        for callback in self._close_callbacks:
            try:
                result = callback(conn)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # one failing callback must not stop the others or the server
                log.exception("%s server: close callback failed for %s", self.name, conn.remote_addr)

"""How a sandbox server answers a request: the handler registered for its code, or Java's answer to a code nobody
handles or to a handler that failed, and the answer faults tests set.

Response rules follow NettyRemotingAbstract.processRequestCommand (4.9.4): a response carries the request's opaque
and serialize type, oneway requests are never answered, and a handler that raises is answered with SYSTEM_ERROR and
a one-line description (in JSON, since Java builds that response outside the callback that copies the request's
serialize type). Unknown codes are answered the way each Java server answers them: a broker's default processor
replies code 3 REQUEST_CODE_NOT_SUPPORTED with remark ``" request type N not supported"``, the name server's returns
null so the client just times out (``answer_unknown_codes=False``).

Answer faults make failures look like real ones for the monitor's tests and the demo: :meth:`Dispatcher.set_delay`
slows every answer, :meth:`~Dispatcher.set_drop_ratio` loses a share of them, :meth:`~Dispatcher.set_answer_body`
answers one request code with a body of the test's choosing (bytes a client cannot read, such as Properties text
that is not UTF-8).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from monitor.remoting.codes import RESPONSE_FLAG, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import ProtocolError
from monitor.sandbox.connection import Connection

log = logging.getLogger(__name__)

Handler = Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand | None]]

_REMOTING_COMMAND_EXCEPTION = "org.apache.rocketmq.remoting.exception.RemotingCommandException"


def exception_simple_desc(exc: BaseException) -> str:
    """The remark of a SYSTEM_ERROR answer to a failed handler, after RemotingHelper.exceptionSimpleDesc.

    A ProtocolError is a request the server could not decode (a missing @CFNotNull header field, a bad body), which
    a Java server reports as RemotingCommandException; anything else is named by its Python type."""
    name = _REMOTING_COMMAND_EXCEPTION if isinstance(exc, ProtocolError) else type(exc).__name__
    return f"{name}: {exc}"


class Dispatcher:
    """The answering half of a :class:`~monitor.sandbox.server.RemotingServer`: a handler per request code
    (:meth:`register`) and the answer faults. A handler gets the Connection and the request and returns the response
    (opaque, flag and serialize type are filled in) or None to answer nothing."""

    def __init__(self, *, name: str, answer_unknown_codes: bool):
        self.name = name
        self.answer_unknown_codes = answer_unknown_codes
        self._handlers: dict[int, Handler] = {}
        self._delay = 0.0
        self._drop_ratio = 0.0
        self._answer_bodies: dict[int, bytes] = {}
        self._random = random.Random()

    def register(self, code: int, handler: Handler) -> None:
        self._handlers[int(code)] = handler

    # --- answer faults -------------------------------------------------------------------------------------------

    def set_delay(self, seconds: float) -> None:
        """Hold every response back this long before writing it (0 for none)."""
        if seconds < 0:
            raise ValueError("delay must not be negative")
        self._delay = float(seconds)

    def set_drop_ratio(self, ratio: float) -> None:
        """Silently drop this share (0..1) of responses, as a lossy network or an overloaded server would."""
        if not 0.0 <= ratio <= 1.0:
            raise ValueError("drop ratio must be between 0 and 1")
        self._drop_ratio = float(ratio)

    def set_answer_body(self, code: int, body: bytes | None) -> None:
        """Answer requests of ``code`` with ``body`` in place of the handler's (None: the handler's again), as a
        broken or hostile server would; the frame around it stays well-formed, so only the body decoder sees it."""
        if body is None:
            self._answer_bodies.pop(int(code), None)
        else:
            self._answer_bodies[int(code)] = bytes(body)

    def clear_answer_bodies(self) -> None:
        """Undo every :meth:`set_answer_body`."""
        self._answer_bodies.clear()

    # --- answering -----------------------------------------------------------------------------------------------

    async def _process(self, conn: Connection, cmd: RemotingCommand) -> None:
        response = await self._dispatch(conn, cmd)
        if response is None or cmd.is_oneway:
            return
        if self._delay:
            await asyncio.sleep(self._delay)
        if self._drop_ratio and self._random.random() < self._drop_ratio:
            log.debug("%s server: dropping the answer to code %s (opaque %s)", self.name, cmd.code, cmd.opaque)
            return
        if cmd.code in self._answer_bodies:
            response.body = self._answer_bodies[cmd.code]
        try:
            conn.send(response)
        except ProtocolError as exc:  # e.g. a body over the frame limit: nothing sendable, the client times out
            log.error("%s server: cannot encode the answer to code %s: %s", self.name, cmd.code, exc)
            return
        await conn.drain()

    async def _dispatch(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand | None:
        handler = self._handlers.get(cmd.code)
        if handler is None:
            if not self.answer_unknown_codes:
                log.debug("%s server: no processor for code %s, not answering", self.name, cmd.code)
                return None
            return cmd.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {cmd.code} not supported")
        try:
            response = await handler(conn, cmd)
        except ProtocolError as exc:
            log.warning("%s server: bad request code %s from %s: %s", self.name, cmd.code, conn.remote_addr, exc)
            return self._system_error(cmd, exc)
        except Exception as exc:
            log.exception("%s server: handler for code %s failed", self.name, cmd.code)
            return self._system_error(cmd, exc)
        if response is not None:
            response.opaque = cmd.opaque
            response.flag |= RESPONSE_FLAG
            response.serialize_type = cmd.serialize_type
        return response

    @staticmethod
    def _system_error(cmd: RemotingCommand, exc: Exception) -> RemotingCommand:
        return RemotingCommand(
            code=ResponseCode.SYSTEM_ERROR,
            language="JAVA",
            opaque=cmd.opaque,
            flag=RESPONSE_FLAG,
            remark=exception_simple_desc(exc),
        )

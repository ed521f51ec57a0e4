"""A programmable RocketMQ-speaking server on 127.0.0.1 for client tests and the wire benchmark.

`handler(cmd)` returns a response command, None for no answer, or raw bytes to write as they are (for malformed
frame tests). The server can also push requests to its connected clients, as a broker does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from monitor.remoting.command import FrameDecoder, RemotingCommand, encode_frame

Handler = Callable[[RemotingCommand], "RemotingCommand | bytes | None"]


def echo_handler(cmd: RemotingCommand) -> RemotingCommand:
    return cmd.make_response(body=cmd.body)


class Responder:
    def __init__(self, handler: Handler = echo_handler, *, delay: float = 0.0):
        self.handler = handler
        self.delay = delay
        self.connections = 0
        self.received: list[RemotingCommand] = []
        self.client_replies: list[RemotingCommand] = []
        self.max_outstanding = 0
        self._outstanding = 0
        self._writers: list[asyncio.StreamWriter] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="responder", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def run(self, coro, timeout: float = 10):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self) -> Responder:
        self._thread.start()

        async def _start():
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
            self.port = self._server.sockets[0].getsockname()[1]

        self.run(_start())
        return self

    def stop(self) -> None:
        async def _stop():
            self._server.close()
            for writer in self._writers:
                writer.close()

        self.run(_stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> Responder:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def drop_connections(self) -> None:
        async def _drop():
            for writer in self._writers:
                writer.close()
            self._writers.clear()

        self.run(_drop())

    def push_request(self, cmd: RemotingCommand) -> None:
        """Send a request to every connected client, as a broker calls its clients back."""

        async def _push():
            for writer in self._writers:
                writer.write(encode_frame(cmd))
                await writer.drain()

        self.run(_push())

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for cmd in decoder.feed(data):
                    if cmd.is_response:
                        self.client_replies.append(cmd)
                        continue
                    self.received.append(cmd)
                    asyncio.get_running_loop().create_task(self._answer(cmd, writer))
                decoder.check()
        except (ConnectionError, asyncio.CancelledError):
            return

    async def _answer(self, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
        self._outstanding += 1
        self.max_outstanding = max(self.max_outstanding, self._outstanding)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            result = self.handler(cmd)
        finally:
            self._outstanding -= 1
        if result is None or writer.is_closing():
            return
        writer.write(result if isinstance(result, bytes) else encode_frame(result))


def serve_captured_forever(port: int) -> None:
    """Answer every request with the captured GET_CONSUME_STATS response (for the wire benchmark's server
    process, so the client under test does not share a GIL with its server)."""
    import base64
    import json

    from tests.fixtures import FIXTURES_DIR

    captured = json.loads((FIXTURES_DIR / "GET_CONSUME_STATS.json").read_text())["response"]
    from monitor.remoting.command import decode_frame

    template = decode_frame(base64.b64decode(captured["frame_b64"]))

    def handler(cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=template.body)

    responder = Responder(handler)
    responder.port = port
    responder.start()
    print(responder.addr, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    import sys

    serve_captured_forever(int(sys.argv[1]) if len(sys.argv) > 1 else 0)

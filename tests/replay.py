"""A local RocketMQ responder that answers with the real frames captured in ../shared/fixtures/rocketmq-4.9/.

Three servers stand in for the captured name server (127.0.0.1:9876), master (10911) and slave (11911). A request
is answered with the captured response of the same code whose captured request carried the same header fields
(ACL fields aside), re-encoded with the caller's opaque; addresses inside response bodies and headers are
rewritten to the replay servers' ports so follow-up calls land here too. Every request received is recorded so
tests can compare it with what the real tool sent. Like the real name server, an unknown code is never answered.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from dataclasses import dataclass, field

from monitor.remoting.codes import ResponseCode
from monitor.remoting.command import FrameDecoder, RemotingCommand, decode_frame, encode_frame
from tests.fixtures import FIXTURES_DIR

FIXTURES = FIXTURES_DIR
ACL_FIELDS = {"AccessKey", "Signature", "OnsChannel", "SecurityToken"}
ROLE_BY_PORT = {"9876": "namesrv", "10911": "master", "11911": "slave", "10909": "master"}


@dataclass
class Exchange:
    name: str
    data: dict
    request: RemotingCommand | None
    response: RemotingCommand | None

    @property
    def server_role(self) -> str:
        return ROLE_BY_PORT.get(self.data["connection"]["server"].rsplit(":", 1)[1], "client")

    @property
    def produced_by(self) -> str:
        return self.data.get("produced_by", "")

    def frame(self, side: str) -> dict | None:
        return self.data[side]


def _decode(frame: dict | None) -> RemotingCommand | None:
    return decode_frame(base64.b64decode(frame["frame_b64"])) if frame else None


def load_exchanges() -> dict[str, Exchange]:
    exchanges = {}
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        exchanges[path.stem] = Exchange(path.stem, data, _decode(data["request"]), _decode(data["response"]))
    return exchanges


def plain_ext(cmd: RemotingCommand | None) -> dict[str, str]:
    """extFields without ACL fields, every value as the string Java would see."""
    if cmd is None or not cmd.ext_fields:
        return {}
    return {k: cmd.ext(k) for k in cmd.ext_fields if k not in ACL_FIELDS}


@dataclass
class _Server:
    role: str
    server: asyncio.AbstractServer | None = None
    port: int = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class ReplayCluster:
    exchanges: dict[str, Exchange] = field(default_factory=load_exchanges)
    received: list[tuple[str, RemotingCommand]] = field(default_factory=list)
    preferred: set[str] = field(default_factory=set)

    def __post_init__(self):
        self._servers = {role: _Server(role) for role in ("namesrv", "master", "slave")}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="replay-cluster", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self) -> ReplayCluster:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start_servers(), self._loop).result(10)
        return self

    async def _start_servers(self) -> None:
        for srv in self._servers.values():
            srv.server = await asyncio.start_server(lambda r, w, srv=srv: self._serve(srv, r, w), "127.0.0.1", 0)
            srv.port = srv.server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        async def _stop():
            for srv in self._servers.values():
                srv.server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        asyncio.run_coroutine_threadsafe(_stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> ReplayCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- addresses -------------------------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        return self._servers["namesrv"].addr

    @property
    def master_addr(self) -> str:
        return self._servers["master"].addr

    @property
    def slave_addr(self) -> str:
        return self._servers["slave"].addr

    def _rewrites(self) -> list[tuple[str, str]]:
        return [
            ("127.0.0.1:9876", self.namesrv_addr),
            ("127.0.0.1:10911", self.master_addr),
            ("127.0.0.1:11911", self.slave_addr),
            ("127.0.0.1:10909", self.master_addr),
        ]

    def rewrite(self, text: str) -> str:
        for old, new in self._rewrites():
            text = text.replace(old, new)
        return text

    def requests_to(self, role: str, code: int | None = None) -> list[RemotingCommand]:
        return [cmd for r, cmd in self.received if r == role and (code is None or cmd.code == code)]

    def prefer(self, *names: str) -> None:
        self.preferred = set(names)

    # --- answering -------------------------------------------------------------------------------------------------

    def match(self, role: str, cmd: RemotingCommand) -> Exchange | None:
        ext = plain_ext(cmd)
        candidates = [
            ex
            for ex in self.exchanges.values()
            if ex.request is not None
            and ex.response is not None
            and ex.server_role == role
            and ex.request.code == cmd.code
            and not ex.request.is_response
        ]
        exact = [ex for ex in candidates if plain_ext(ex.request) == ext]
        pool = exact or [ex for ex in candidates if set(plain_ext(ex.request)) == set(ext)]
        if not pool:
            return None
        preferred = [ex for ex in pool if ex.name in self.preferred]
        return (preferred or sorted(pool, key=lambda ex: (len(ex.name), ex.name)))[0]

    def answer(self, role: str, cmd: RemotingCommand) -> RemotingCommand | None:
        exchange = self.match(role, cmd)
        if exchange is None:
            if role == "namesrv":
                return None  # the real name server never answers a code it does not handle
            return cmd.make_response(
                ResponseCode.SYSTEM_ERROR, f"replay: no captured exchange for {cmd.code} {cmd.ext_fields}"
            )
        captured = exchange.response
        body = captured.body
        if exchange.frame("response").get("body_text") is not None:
            body = self.rewrite(body.decode("utf-8")).encode("utf-8")
        ext = {k: self.rewrite(v) if isinstance(v, str) else v for k, v in (captured.ext_fields or {}).items()}
        return RemotingCommand(
            code=captured.code,
            language=captured.language,
            version=captured.version,
            opaque=cmd.opaque,
            flag=captured.flag,
            remark=captured.remark,
            ext_fields=ext if captured.ext_fields is not None else None,
            body=body,
            serialize_type=cmd.serialize_type,
        )

    async def _serve(self, srv: _Server, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for cmd in decoder.feed(data):
                    self.received.append((srv.role, cmd))
                    response = None if cmd.is_oneway else self.answer(srv.role, cmd)
                    if response is not None:
                        writer.write(encode_frame(response))
                decoder.check()
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

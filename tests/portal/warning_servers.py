"""Real servers on 127.0.0.1 that warning deliveries go to in tests: an SMTP server (aiosmtpd) keeping every message
it accepts, and an HTTP server keeping every POST (path, query, headers, body) and answering what a test tells it
to per path (a DingTalk robot's ``{"errcode": 0}`` by default)."""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

from tests.support.network import free_port

OK_ROBOT = (200, b'{"errcode": 0, "errmsg": "ok"}')
# Webhooks refuse loopback unless the admins' allow-list names it: what tests posting to these servers set as
# ``settings.WEBHOOK_ALLOWED_NETWORKS``.
LOCAL_RECEIVERS = ["127.0.0.0/8"]


class _Keeper:
    """aiosmtpd handler: accept every message and keep it (parsed)."""

    def __init__(self):
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.refuse: set[str] = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        self.messages.append(message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted for delivery"


class SmtpServer:
    """``with SmtpServer() as smtp:`` a real SMTP server; ``smtp.messages`` the e-mails received."""

    def __init__(self):
        self.port = free_port()
        self.keeper = _Keeper()
        self.controller = Controller(self.keeper, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[EmailMessage]:
        return self.keeper.messages

    def refuse(self, address: str) -> None:
        """Answer RCPT TO for ``address`` with a permanent 550."""
        self.keeper.refuse.add(address)

    def __enter__(self) -> SmtpServer:
        self.controller.start()
        return self

    def __exit__(self, *exc) -> None:
        self.controller.stop()


@dataclass
class Request:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    @property
    def json(self):
        return json.loads(self.body)


class WebhookServer:
    """``with WebhookServer() as hooks:`` a real HTTP server; ``hooks.url("/x")`` its address, ``hooks.requests``
    the POSTs received, ``hooks.answer(path, status, body)`` what it answers on a path."""

    def __init__(self):
        self.requests: list[Request] = []
        self.answers: dict[str, tuple[int, bytes]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                parts = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                server.requests.append(
                    Request(
                        path=parts.path,
                        query=dict(urllib.parse.parse_qsl(parts.query)),
                        headers={key.lower(): value for key, value in self.headers.items()},
                        body=body,
                    )
                )
                status, answer = server.answers.get(parts.path, OK_ROBOT)
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format, *args):  # quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def answer(self, path: str, status: int, body: bytes) -> None:
        self.answers[path] = (status, body)

    def on(self, path: str) -> list[Request]:
        return [request for request in self.requests if request.path == path]

    def __enter__(self) -> WebhookServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def read_request(connection: socket.socket) -> bytes:
    """Read one HTTP request (head and Content-Length body) off ``connection``; its head."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _sep, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")),
        0,
    )
    while len(body) < length:
        chunk = connection.recv(65536)
        if not chunk:
            break
        body += chunk
    return head


class ScriptedServer:
    """``with ScriptedServer(script) as server:`` a real TCP server on 127.0.0.1 that runs ``script(connection)`` for
    each connection it accepts (then closes it): for answers no HTTP server would give (a truncated body, a status
    line that is not HTTP, a drip-fed header). ``server.url(path)`` its address; ``server.connections`` how many
    it accepted."""

    def __init__(self, script):
        self.script = script
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.listener.getsockname()[1]}{path}"

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _address = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._run, args=(connection,), daemon=True).start()

    def _run(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.settimeout(10)
                self.script(connection)
            except OSError:  # the client gave up: what some tests expect
                pass

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.thread.join()
        self.listener.close()

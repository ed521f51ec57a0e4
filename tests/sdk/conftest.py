"""Fixtures of the producer SDK tests: the real C++ client (its logs under var/, never the user's HOME), a sandbox
cluster for the module, topics created on every master, and a real HTTP server on 127.0.0.1 standing in for the
portal's report endpoints, recording what it is sent and answering as told."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from monitor.remoting.admin import MQAdmin
from monitor.remoting.body import TopicConfig
from monitor.sandbox.cluster import SandboxCluster
from tests.support.factories import unique
from tests.support.paths import VAR


@pytest.fixture(scope="session", autouse=True)
def cpp_client_home():
    """The C++ client logs to $HOME/logs/rocketmq-cpp: point HOME into var/ for the session (it is read once)."""
    home = VAR / "sdk-tests-home"
    home.mkdir(parents=True, exist_ok=True)
    previous = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield home
    if previous is not None:
        os.environ["HOME"] = previous


@pytest.fixture(scope="module")
def cluster():
    """Two broker names, masters only, for the module's tests (each test uses its own topics)."""
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


@pytest.fixture
def make_topic(cluster):
    """``make_topic(queues={"broker-a": 3, "broker-b": 5})`` creates a fresh topic on those masters."""

    def make(queues: dict[str, int] | None = None) -> str:
        name = unique("SdkTopic")
        with MQAdmin(cluster.namesrv_addr) as admin:
            for broker, nums in (queues or {"broker-a": 2, "broker-b": 2}).items():
                config = TopicConfig(topic_name=name, read_queue_nums=nums, write_queue_nums=nums)
                admin.create_and_update_topic_config(cluster.broker(broker).addr, config)
        return name

    return make


@dataclass
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: object
    status: int = 0  # what the fake portal answered


@dataclass
class FakePortal:
    """What the SDK sent (``requests``) and how to answer: ``answer(request) -> (status, json)`` per request,
    by default 202 for reports, ``registered`` for registration checks and ``bootstrap`` for the client bootstrap
    (change it while a client runs to see it follow)."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    registered: bool = True
    bootstrap: dict = field(default_factory=dict)
    answer: Callable[[Received], tuple[int, object]] | None = None
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def reports(self) -> list[dict]:
        """Every report of every accepted POST, in order."""
        return [
            report
            for request in self.requests
            if request.method == "POST" and request.status == 202
            for report in request.body["reports"]
        ]

    def posts(self) -> list[Received]:
        return [request for request in self.requests if request.method == "POST"]

    def wait_for(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        with self.arrived:
            assert self.arrived.wait_for(condition, timeout), f"the fake portal got: {self.requests}"

    def respond(self, request: Received) -> tuple[int, object]:
        if self.answer is not None:
            return self.answer(request)
        if request.method == "GET" and request.path == "/api/v1/client-bootstrap/":
            return 200, self.bootstrap
        if request.method == "GET":
            topic = request.query.get("topic", [""])[0]
            return 200, {"registered": self.registered, "producer_group": "?", "topic": topic}
        return 202, {"accepted": len(request.body["reports"])}


@pytest.fixture
def portal():
    fake = FakePortal()

    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Received(
                self.command, parts.path, parse_qs(parts.query), dict(self.headers), json.loads(raw) if raw else None
            )
            request.status, answer = fake.respond(request)
            with fake.arrived:  # before answering, so that a client that has its answer finds its request here
                fake.requests.append(request)
                fake.arrived.notify_all()
            body = json.dumps(answer).encode()
            self.send_response(request.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _handle

        def log_message(self, *args) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address) -> None:
            """Quiet: the only errors are answers to clients that gave up waiting, as some tests make them."""

    server = Server(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()

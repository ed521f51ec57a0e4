"""One traffic client: a real C++ RocketMQ producer or push consumer, run as its own process by
:mod:`monitor.sandbox.traffic`.

``python worker.py SPEC_JSON``. A process per client, because the C++ client can block a caller for a minute on
a peer that accepts and never answers, keeps threads of its own, and logs to ``$HOME/logs/rocketmq-cpp`` (the
parent gives every worker its own HOME). This file runs as a plain script with only the standard library and the
``rocketmq`` package, so it never pulls Django or the project into a process that only needs the client.

A producer reports its sends to a portal, as a business application would, through the Django-free producer SDK
(:mod:`monitor.sdk`) when the environment names the portal (MQCLOUD_PORTAL_URL) and a folder of token files
(MQCLOUD_PRODUCER_TOKEN_DIR, one ``<producer group>.token`` each, which may appear after the worker starts: the
SDK reads it at every report) and its spec does not say ``"report": false``. ``manage.py demo`` sets both.

It stops on SIGTERM or SIGINT, or by itself when the process that started it goes away (so an aborted demo
leaves no clients behind): it releases any callback it is holding, shuts the client down and exits 0. Every
``status_interval`` seconds, and once more at the end, it prints a ``STATUS {json}`` line of counters to stdout.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
import threading
import time
import zlib

from rocketmq.client import Message, Producer, PushConsumer, RecvMessage
from rocketmq.exceptions import ffi_check
from rocketmq.ffi import dll

CONSUME_SUCCESS, RECONSUME_LATER = 0, 1
PORTAL_URL_ENV = "MQCLOUD_PORTAL_URL"
TOKEN_DIR_ENV = "MQCLOUD_PRODUCER_TOKEN_DIR"
PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# What a reporting producer spends on its last report when stopped (the runner kills workers after 5 s).
REPORT_FLUSH_TIMEOUT = 2.0
# Where the daily curve peaks and bottoms out: 15:00 and 03:00, like the traffic of a business application.
PEAK_HOUR = 15.0
SECONDS_PER_DAY = 86400.0
PARENT_CHECK_INTERVAL = 1.0


def rate_at(now: float, base: float, amplitude: float, day_seconds: float) -> float:
    """Messages per second at wall-clock time ``now``: ``base`` times a sinusoid over the day, from
    ``base * (1 - amplitude)`` at 03:00 to ``base * (1 + amplitude)`` at 15:00. ``day_seconds`` squeezes a day
    into less time (600: a whole day every ten minutes), so a short demo still shows the curve."""
    local = time.localtime(now)
    since_midnight = local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec + (now % 1)
    day_fraction = (since_midnight % day_seconds) / day_seconds
    phase = 2 * math.pi * (day_fraction - (PEAK_HOUR - 6) / 24)
    return max(0.0, base * (1 + amplitude * math.sin(phase)))


class Worker:
    def __init__(self, spec: dict):
        self.spec = spec
        self.stop = threading.Event()
        self.counts: dict[str, int] = {}
        self.last_error: str | None = None
        self.lock = threading.Lock()

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + n

    def report(self) -> None:
        with self.lock:
            line = json.dumps({**self.counts, "last_error": self.last_error}, sort_keys=True)
        print(f"STATUS {line}", flush=True)

    def watch_parent(self) -> None:
        """Stop once the parent is gone (re-parented to init or a subreaper): nobody would stop us otherwise."""
        parent = self.spec["parent_pid"]
        while not self.stop.wait(PARENT_CHECK_INTERVAL):
            if os.getppid() != parent:
                self.stop.set()

    def credentials(self, client) -> None:
        if self.spec.get("credentials"):
            access_key, secret_key = self.spec["credentials"]
            client.set_session_credentials(access_key, secret_key, "")

    def run(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self.stop.set())
        threading.Thread(target=self.watch_parent, daemon=True).start()
        if self.spec["role"] == "producer":
            self.produce()
        else:
            self.consume()
        self.report()

    # --- producer --------------------------------------------------------------------------------------------------

    def produce(self) -> None:
        spec = self.spec
        producer = self.producer()
        producer.set_namesrv_addr(spec["namesrv"])
        self.credentials(producer)
        producer.start()
        try:
            seq = 0
            for _ in range(spec.get("backlog", 0)):
                if self.stop.is_set():
                    return
                self.send(producer, seq)
                seq += 1
            self.report()  # the runner starts the consumers once the backlog is written
            next_report = next_send = time.monotonic()
            while not self.stop.is_set():
                now = time.monotonic()
                if now >= next_report:
                    self.report()
                    next_report = now + spec["status_interval"]
                rate = rate_at(time.time(), spec["rate"], spec["amplitude"], spec["day_seconds"])
                if rate <= 0:
                    self.stop.wait(1.0)
                    continue
                if now < next_send:
                    self.stop.wait(min(next_send, next_report) - now)
                    continue
                self.send(producer, seq)
                seq += 1
                # A send slower than the rate does not build up a burst to catch up with.
                next_send = max(next_send + 1 / rate, time.monotonic() - 1 / rate)
        finally:
            producer.shutdown()

    def producer(self) -> Producer:
        """The plain C++ producer, or the SDK's (a subclass) when this worker reports to a portal."""
        spec = self.spec
        timeout = spec.get("send_timeout_ms", 3000)
        portal_url, token_dir = os.environ.get(PORTAL_URL_ENV), os.environ.get(TOKEN_DIR_ENV)
        if not (portal_url and token_dir and spec.get("report", True)):
            return Producer(spec["group"], timeout=timeout)
        sys.path.insert(0, PROJECT)
        from monitor.sdk import Producer as ReportingProducer

        return ReportingProducer(
            spec["group"],
            timeout=timeout,
            portal_url=portal_url,
            token_file=os.path.join(token_dir, f"{spec['group']}.token"),
            topics=[spec["topic"]],
            flush_timeout=REPORT_FLUSH_TIMEOUT,
        )

    def send(self, producer: Producer, seq: int) -> None:
        spec = self.spec
        message = Message(spec["topic"])
        message.set_keys(f"{spec['group']}-{seq}")
        message.set_tags(spec.get("tags", "TagA"))
        head = f"{spec['group']} #{seq} at {time.time():.3f} "
        message.set_body(head + "x" * max(0, spec.get("body_bytes", 0) - len(head)))
        try:
            producer.send_sync(message)
        except Exception as exc:  # a failed send is traffic too: count it and keep sending
            self.count("failed")
            self.last_error = " ".join(str(exc).split())
        else:
            self.count("sent")

    # --- push consumer ---------------------------------------------------------------------------------------------

    def consume(self) -> None:
        spec = self.spec
        release = threading.Event()  # set on stop: a blocked callback must return before the client can shut down
        consumer = PushConsumer(spec["group"])
        consumer.set_namesrv_addr(spec["namesrv"])
        self.credentials(consumer)
        consumer.set_thread_count(spec.get("threads", 2))
        # One message per callback: the C++ client sends a whole batch back when one of its messages fails.
        consumer.set_message_batch_max_size(1)
        callback = self.callback(release)
        ffi_check(dll.Subscribe(consumer._handle, spec["topic"].encode(), spec.get("expression", "*").encode()))
        # Our own callback rather than subscribe()'s wrapper, so that failing needs no exception (and no traceback
        # on stderr for every failed message).
        consumer._register_callback(callback)
        consumer.start()
        try:
            while not self.stop.wait(spec["status_interval"]):
                self.report()
        finally:
            release.set()
            consumer.shutdown()

    def callback(self, release: threading.Event):
        spec = self.spec
        delay, block_every, fail_every = spec.get("delay", 0.0), spec.get("block_every", 0), spec.get("fail_every", 0)

        def on_message(_consumer, handle) -> int:
            try:
                message = RecvMessage(handle)
                # The body, unlike the message id or queue offset, is the same on every redelivery: a message
                # picked to fail or block is picked again when it comes back from the retry topic.
                pick = zlib.crc32(message.body)
                self.count("received")
                if message.reconsume_times:
                    self.count("redelivered")
                if block_every and pick % block_every == 0:
                    self.count("blocked")
                    release.wait()
                    return RECONSUME_LATER
                if delay and self.stop.wait(delay):
                    return RECONSUME_LATER
                if fail_every and pick % fail_every == 0:
                    self.count("reconsume_later")
                    return RECONSUME_LATER
                self.count("consumed")
                return CONSUME_SUCCESS
            except Exception as exc:  # an exception must not escape into the C++ thread
                print(f"callback failed: {exc!r}", file=sys.stderr, flush=True)
                return RECONSUME_LATER

        return on_message


def main() -> None:
    Worker(json.loads(sys.argv[1])).run()


if __name__ == "__main__":
    main()

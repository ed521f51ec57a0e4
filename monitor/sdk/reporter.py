"""The background reporter: every minute, one report per (client, group, topic) to the portal, for producers (their
sends) and consumers (their consumption; :data:`monitor.sdk.consumer.CONSUMER_REPORTS`) alike: a :class:`ReportKind`
says where reports go and how one looks.

It runs in its own daemon thread and touches the send path only through :meth:`Recorder.take`, so a slow or
unreachable portal never blocks or slows a send, and nothing it meets is raised into the application (problems are
logged on the ``monitor.sdk`` logger). Reports wait in a bounded backlog (oldest dropped first, counted in
:attr:`Reporter.dropped`); delivery is retried with exponential backoff on network errors, timeouts, 429 and 5xx.
What the portal refuses is not retried: reports it rejects one by one (400 with errors per report index) are
dropped and the rest of the batch sent again; a batch too large for it (413) is sent again in halves; a batch
rejected whole (401 unknown or revoked token, 403 another group's token, any other 4xx) is dropped with an error
logged. The wire formats are the portal's ``POST /api/v1/producer-reports/`` and ``/consumer-reports/``
(docs/sdk.md).

For producers, at start and for each topic seen later, the reporter asks the portal whether the producer group is
registered for the topic (``GET /api/v1/producer-reports/registration/?topic=``) and logs a warning if not, as
MQCloud's client checks at startup. On stop it takes every minute, the current one included, and makes a last delivery
attempt bounded by ``flush_timeout``.
"""

from __future__ import annotations

import collections
import datetime as dt
import logging
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from monitor.sdk.portal_client import REQUEST_TIMEOUT, PortalClient, Rejected, TooLarge, Transient
from monitor.sdk.recorder import MinuteStats, Recorder

log = logging.getLogger("monitor.sdk")

REGISTRATION_PATH = "/api/v1/producer-reports/registration/"
MAX_BATCH = 1000  # the portal's limit per request
DEFAULT_MAX_BACKLOG = 10_000  # reports; a producer of 10 topics on 4 brokers keeps about 16 hours
INTERVAL = 60.0
# Sends finishing in the last moments of a minute are recorded in it: report a little after the minute ends
# (2 s of every 60).
REPORT_DELAY_SHARE = 1 / 30
BACKOFF_MIN = 5.0
BACKOFF_MAX = 300.0


@dataclass(frozen=True)
class ReportKind:
    """What a reporter reports: ``noun`` (for log lines), the token's ``scheme``, the endpoint's ``path``, where to
    check a topic's registration (None: no check), and ``build(stats, group, client_id, client_addr)`` making one
    report of a minute's statistics of one topic."""

    noun: str
    scheme: str
    path: str
    registration_path: str | None
    build: Callable[[MinuteStats, str, str, str], dict]


def _producer_report(stats: MinuteStats, group: str, client_id: str, client_addr: str) -> dict:
    report = {
        "minute": minute_text(stats.minute),
        "client_id": client_id,
        "client_addr": client_addr,
        "producer_group": group,
        "topic": stats.topic,
        "brokers": [cell.to_report(name) for name, cell in sorted(stats.brokers.items())],
    }
    return with_trace(report, stats)


def with_trace(report: dict, stats: MinuteStats) -> dict:
    """The report with its minute's trace record counts (``trace``: written, dropped, failed) when it traced."""
    if stats.trace is not None:
        report["trace"] = dict(stats.trace)
    return report


PRODUCER_REPORTS = ReportKind("producer", "Producer", "/api/v1/producer-reports/", REGISTRATION_PATH, _producer_report)


def client_address(namesrv_addrs: str) -> str:
    """This host's IP address as seen on the way to the first name server (no packet is sent)."""
    host, _, port = namesrv_addrs.split(";")[0].strip().rpartition(":")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, int(port)))
            return probe.getsockname()[0]
    except (OSError, ValueError):
        return "127.0.0.1"


def minute_text(epoch_seconds: int) -> str:
    return dt.datetime.fromtimestamp(epoch_seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:00Z")


class Reporter:
    def __init__(
        self,
        recorder: Recorder,
        *,
        portal_url: str,
        token: str | None = None,
        token_file: Path | None = None,
        group: Callable[[], str],
        client_id: str,
        client_addr: str,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        interval: float = INTERVAL,
        request_timeout: float = REQUEST_TIMEOUT,
        backoff_min: float = BACKOFF_MIN,
        kind: ReportKind = PRODUCER_REPORTS,
    ):
        self._recorder = recorder
        self._kind = kind
        self._portal = PortalClient(
            portal_url, scheme=kind.scheme, token=token, token_file=token_file, request_timeout=request_timeout
        )
        self._base = self._portal.base
        self._group = group
        self._client_id = client_id
        self._client_addr = client_addr
        self._interval = interval
        self._request_timeout = request_timeout
        self._backlog: collections.deque[dict] = collections.deque()
        self._max_backlog = max_backlog
        self._lock = threading.Lock()  # the backlog and the topics to check
        self._to_check: list[str] = []
        self._checked: set[str] = set()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._backoff_min = backoff_min
        self._batch_limit = MAX_BATCH  # halved on each 413, grown back on each delivery
        self._backoff = 0.0
        self._retry_at = 0.0
        self.failed_deliveries = 0  # attempts that found the portal unreachable or failing
        self.dropped = 0  # reports lost to a full backlog or refused by the portal
        self.delivered = 0

    # --- lifecycle -------------------------------------------------------------------------------------------------

    def start(self, topics: Iterable[str] = ()) -> None:
        for topic in topics:
            self.check_registration(topic)
        self._thread = threading.Thread(target=self._run, name="mqcloud-sdk-reporter", daemon=True)
        self._thread.start()

    def stop(self, flush_timeout: float = 5.0) -> None:
        """Stop the thread, then report everything recorded so far, giving up after ``flush_timeout`` seconds."""
        deadline = time.monotonic() + flush_timeout
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(flush_timeout)
        self._enqueue(self._recorder.take(everything=True))
        self._retry_at = 0.0
        self._deliver(deadline)
        with self._lock:
            lost = len(self._backlog)
            self._backlog.clear()
        if lost:
            self.dropped += lost
            log.warning(
                "%s stopped with %d reports the portal at %s did not take; they are lost",
                self._kind.noun,
                lost,
                self._base,
            )

    def check_registration(self, topic: str) -> None:
        """Ask the portal (from the reporter thread) whether the group is registered for ``topic``, once."""
        # Every send asks: answer without the lock once the topic is known.
        if self._kind.registration_path is None or topic in self._checked:
            return
        with self._lock:
            if topic in self._checked:
                return
            self._checked.add(topic)
            self._to_check.append(topic)
        self._wake.set()

    @property
    def backlog(self) -> int:
        return len(self._backlog)

    # --- the thread ------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        next_report = self._next_report_time()
        while not self._stopped.is_set():
            timeout = next_report - time.time()
            if self._backlog and self._retry_at:
                timeout = min(timeout, self._retry_at - time.monotonic())
            self._wake.wait(max(0.0, timeout))
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                self._check_registrations()
                if time.time() >= next_report:
                    next_report = self._next_report_time()
                    self._enqueue(self._recorder.take())
                self._deliver()
            except Exception:  # a bug here must not kill reporting for the life of the application
                log.exception("%s report cycle failed; trying again next minute", self._kind.noun)

    def _next_report_time(self) -> float:
        now = time.time()
        return now - now % self._interval + self._interval * (1 + REPORT_DELAY_SHARE)

    def _check_registrations(self) -> None:
        with self._lock:
            topics, self._to_check = self._to_check, []
        for topic in topics:
            if self._stopped.is_set():
                return
            query = urllib.parse.urlencode({"topic": topic})
            try:
                answer = self._portal.request("GET", f"{self._kind.registration_path}?{query}")
            except (Transient, Rejected) as error:
                log.warning("could not check at %s whether producer group %s may send to topic %s: %s",
                            self._base, self._group(), topic, error)  # fmt: skip
                if isinstance(error, Transient):  # ask again at the next report
                    with self._lock:
                        self._to_check.append(topic)
                continue
            if not answer.get("registered"):
                log.warning(
                    "producer group %s is not registered for topic %s on the portal %s: its send reports for this "
                    "topic will be refused. Apply for the producer group on the topic in the portal.",
                    self._group(),
                    topic,
                    self._base,
                )

    # --- backlog and delivery --------------------------------------------------------------------------------------

    def _enqueue(self, minutes: list[MinuteStats]) -> None:
        group = self._group()
        reports = [self._kind.build(stats, group, self._client_id, self._client_addr) for stats in minutes]
        with self._lock:
            self._backlog.extend(reports)
            overflow = len(self._backlog) - self._max_backlog
            for _ in range(max(0, overflow)):
                self._backlog.popleft()
        if overflow > 0:
            self.dropped += overflow
            log.warning(
                "the portal at %s is unreachable: dropped the %d oldest %s reports",
                self._base,
                overflow,
                self._kind.noun,
            )

    def _deliver(self, deadline: float | None = None) -> None:
        """Send the backlog in batches until it is empty, the portal fails (retry later) or ``deadline`` passes."""
        if self._retry_at and time.monotonic() < self._retry_at:
            return
        while self._backlog:
            if deadline is not None and time.monotonic() >= deadline:
                return
            with self._lock:
                batch = [self._backlog[i] for i in range(min(self._batch_limit, len(self._backlog)))]
            timeout = self._request_timeout if deadline is None else max(0.1, deadline - time.monotonic())
            try:
                self._portal.request("POST", self._kind.path, {"reports": batch}, timeout=timeout)
            except Transient as error:
                self.failed_deliveries += 1
                self._backoff = min(BACKOFF_MAX, max(self._backoff_min, self._backoff * 2))
                self._retry_at = time.monotonic() + self._backoff * random.uniform(0.8, 1.2)
                log.warning(
                    "could not deliver %d %s reports to %s (%s); retrying in %.1f s",
                    len(self._backlog),
                    self._kind.noun,
                    self._base,
                    error,
                    self._backoff,
                )
                return
            except TooLarge:
                if len(batch) > 1:
                    self._batch_limit = max(1, len(batch) // 2)
                    continue
                self._remove(batch)
                self.dropped += 1
                log.error("the portal at %s refused a %s report as too large", self._base, self._kind.noun)
                continue
            except Rejected as error:
                refused = [batch[i] for i in self._refused_indexes(error.details, len(batch))]
                self._remove(refused)
                self.dropped += len(refused)
                log.error(
                    "the portal at %s refused %d %s reports: %s", self._base, len(refused), self._kind.noun, error
                )
                continue
            self._remove(batch)
            self.delivered += len(batch)
            self._batch_limit = min(MAX_BATCH, self._batch_limit * 2)
            self._backoff, self._retry_at = 0.0, 0.0

    @staticmethod
    def _refused_indexes(details: object, size: int) -> list[int]:
        """The reports a 400 names by index, or the whole batch when the refusal is not per report."""
        per_report = details.get("reports") if isinstance(details, dict) else None
        if isinstance(per_report, dict) and per_report and all(k.isdigit() and int(k) < size for k in per_report):
            return sorted(int(k) for k in per_report)
        return list(range(size))

    def _remove(self, reports: list[dict]) -> None:
        gone = {id(report) for report in reports}
        with self._lock:
            self._backlog = collections.deque(report for report in self._backlog if id(report) not in gone)

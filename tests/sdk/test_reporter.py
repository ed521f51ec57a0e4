"""The reporter against a real HTTP server on 127.0.0.1 standing in for the portal: the wire format, one report per
(client, group, topic) and minute, retries with backoff, the bounded backlog, refusals, the registration check and
the last flush. Its clock is the recorder's; a test clock makes minutes pass at once."""

from __future__ import annotations

import logging
import threading

import pytest

from monitor.sdk.recorder import Recorder
from monitor.sdk.reporter import Reporter
from stats.histogram import Histogram
from tests.sdk.test_recorder import MINUTE, Clock
from tests.support.network import closed_port_url
from tests.support.waiting import wait_for

TOKEN = "mqp_test-token"


@pytest.fixture
def clock():
    return Clock(MINUTE * 60 + 1)


@pytest.fixture
def recorder(clock):
    return Recorder(clock)


@pytest.fixture
def start_reporter(recorder):
    started = []

    def start(url: str, **options) -> Reporter:
        options = {"interval": 0.2, "backoff_min": 0.05, **options}
        topics = options.pop("topics", ())
        if "token_file" not in options:
            options["token"] = TOKEN
        reporter = Reporter(
            recorder,
            portal_url=url,
            group=lambda: "pg_orders",
            client_id="10.1.2.3@4711",
            client_addr="10.1.2.3",
            **options,
        )
        reporter.start(topics)
        started.append(reporter)
        return reporter

    yield start
    for reporter in started:
        reporter.stop(flush_timeout=0.5)


def test_each_finished_minute_is_one_report_per_topic_with_an_entry_per_broker(portal, clock, recorder, start_reporter):
    recorder.record("Orders", "broker-b", 2.0)
    recorder.record("Orders", "broker-a", 1.5)
    recorder.record("Orders", "broker-a", 1000.0, "ProducerSendSyncFailed")
    recorder.record("Payments", "broker-a", 3.0)
    start_reporter(portal.url)
    clock.now += 60

    portal.wait_for(lambda: len(portal.reports()) == 2)

    (post,) = portal.posts()
    assert post.path == "/api/v1/producer-reports/"
    assert post.headers["Authorization"] == f"Producer {TOKEN}"
    assert post.headers["Content-Type"] == "application/json"
    orders, payments = post.body["reports"]
    assert {key: value for key, value in orders.items() if key != "brokers"} == {
        "minute": "2026-11-22T07:15:00Z",
        "client_id": "10.1.2.3@4711",
        "client_addr": "10.1.2.3",
        "producer_group": "pg_orders",
        "topic": "Orders",
    }
    assert [broker["broker_name"] for broker in orders["brokers"]] == ["broker-a", "broker-b"]
    broker_a = orders["brokers"][0]
    assert broker_a["count"] == 2
    assert broker_a["exceptions"] == {"ProducerSendSyncFailed": 1}
    histogram = Histogram.from_dict(broker_a["histogram"])
    assert (histogram.count, histogram.min_ms, histogram.max_ms) == (2, 1.5, 1000.0)
    assert payments["topic"] == "Payments"
    assert payments["brokers"][0]["exceptions"] == {}


def test_reports_are_kept_and_retried_while_the_portal_fails(portal, clock, recorder, start_reporter):
    failures = iter([503, 500])
    portal.answer = lambda request: (next(failures, 202), {"accepted": len(request.body["reports"])})
    recorder.record("Orders", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    clock.now += 60

    portal.wait_for(lambda: len(portal.reports()) == 1)
    wait_for(lambda: reporter.backlog == 0)

    statuses = [post.status for post in portal.posts()]
    assert statuses == [503, 500, 202]
    assert all(post.body == portal.posts()[0].body for post in portal.posts())
    assert reporter.failed_deliveries == 2


def test_an_unreachable_portal_keeps_a_bounded_backlog_dropping_the_oldest(clock, recorder, start_reporter):
    reporter = start_reporter(closed_port_url(), max_backlog=3)
    for minutes in range(1, 6):
        recorder.record("Orders", "broker-a", 1.0)
        clock.now += 60
        wait_for(lambda n=minutes: reporter.backlog + reporter.dropped == n)

    assert reporter.backlog == 3
    assert reporter.dropped == 2
    assert reporter.failed_deliveries >= 1


def test_reports_refused_one_by_one_are_dropped_and_the_rest_delivered(portal, clock, recorder, start_reporter):
    def answer(request):
        topics = [report["topic"] for report in request.body["reports"]]
        if "Unregistered" in topics:
            return 400, {"reports": {str(topics.index("Unregistered")): {"topic": ["Unknown topic Unregistered."]}}}
        return 202, {"accepted": len(topics)}

    portal.answer = answer
    recorder.record("Orders", "broker-a", 1.0)
    recorder.record("Unregistered", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    clock.now += 60

    portal.wait_for(lambda: len(portal.reports()) == 1)
    wait_for(lambda: reporter.backlog == 0)

    assert [post.status for post in portal.posts()] == [400, 202]
    assert portal.reports()[0]["topic"] == "Orders"
    assert reporter.dropped == 1


def test_a_refused_token_drops_the_batch_without_retrying(portal, clock, recorder, start_reporter, caplog):
    portal.answer = lambda request: (401, {"detail": "Unknown or revoked producer token."})
    recorder.record("Orders", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    clock.now += 60

    wait_for(lambda: reporter.dropped == 1)
    reporter.stop(flush_timeout=0.5)

    assert len(portal.posts()) == 1
    assert "revoked producer token" in caplog.text


def test_a_batch_holds_at_most_1000_reports(portal, clock, recorder, start_reporter):
    for index in range(1500):
        recorder.record(f"Topic{index}", "broker-a", 1.0)
    start_reporter(portal.url)
    clock.now += 60

    portal.wait_for(lambda: len(portal.reports()) == 1500)

    assert [len(post.body["reports"]) for post in portal.posts()] == [1000, 500]


def test_a_batch_the_portal_finds_too_large_is_sent_again_in_halves_and_nothing_is_lost(
    portal, clock, recorder, start_reporter
):
    portal.answer = lambda request: (
        (413, {"detail": "Request body too large."})
        if len(request.body["reports"]) > 300
        else (202, {"accepted": len(request.body["reports"])})
    )
    for index in range(1000):
        recorder.record(f"Topic{index}", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    clock.now += 60

    portal.wait_for(lambda: len(portal.reports()) == 1000)
    wait_for(lambda: reporter.backlog == 0)

    assert [post.status for post in portal.posts()][:3] == [413, 413, 202]  # 1000, then 500, then 250 per batch
    assert {report["topic"] for report in portal.reports()} == {f"Topic{index}" for index in range(1000)}
    assert (reporter.dropped, reporter.backlog) == (0, 0)


def test_a_topic_the_group_is_not_registered_for_is_warned_about_once(portal, start_reporter, caplog):
    portal.registered = False
    caplog.set_level(logging.WARNING, logger="monitor.sdk")
    reporter = start_reporter(portal.url, topics=["Orders"])
    reporter.check_registration("Orders")
    reporter.check_registration("Payments")

    portal.wait_for(lambda: len(portal.requests) == 2)
    wait_for(lambda: caplog.text.count("is not registered") == 2)

    checks = [(request.path, request.query["topic"]) for request in portal.requests]
    assert sorted(checks) == [
        ("/api/v1/producer-reports/registration/", ["Orders"]),
        ("/api/v1/producer-reports/registration/", ["Payments"]),
    ]
    assert all(request.headers["Authorization"] == f"Producer {TOKEN}" for request in portal.requests)
    assert "producer group pg_orders is not registered for topic Orders" in caplog.text


def test_stopping_reports_the_current_minute_too(portal, recorder, start_reporter):
    recorder.record("Orders", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    reporter.stop(flush_timeout=5.0)

    assert [report["minute"] for report in portal.reports()] == ["2026-11-22T07:15:00Z"]
    assert reporter.backlog == 0


def test_stopping_gives_up_on_a_portal_that_does_not_answer(portal, recorder, start_reporter):
    release = threading.Event()
    portal.answer = lambda request: (release.wait(30), (202, {"accepted": 1}))[1]
    recorder.record("Orders", "broker-a", 1.0)
    reporter = start_reporter(portal.url)
    try:
        reporter.stop(flush_timeout=0.5)
    finally:
        release.set()

    assert reporter.dropped == 1


def test_a_token_file_is_read_when_reporting_so_it_may_appear_later(portal, clock, recorder, start_reporter, tmp_path):
    token_file = tmp_path / "pg_orders.token"
    recorder.record("Orders", "broker-a", 1.0)
    reporter = start_reporter(portal.url, token_file=token_file)
    clock.now += 60
    wait_for(lambda: reporter.failed_deliveries >= 1)
    assert portal.requests == []

    token_file.write_text("mqp_from-file\n")

    portal.wait_for(lambda: len(portal.reports()) == 1)
    assert portal.posts()[0].headers["Authorization"] == "Producer mqp_from-file"

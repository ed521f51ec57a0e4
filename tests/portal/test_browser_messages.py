"""The message pages in a real browser (headless Chromium, the portal on pytest-django's live server, the sandbox
cluster, a real C++ consumer): a member finds messages by key, watches the search's progress until its hits appear
(static/js/messages.js polls the status endpoint; the page's CSP allows no inline script), opens a message (body
tabs, properties, where it went: CONSUMED by the running group), then previews an offset reset that skips the
backlog. The screenshots of the message page, its track and the reset preview are the user guide's
(docs/messages.md), written to docs/screenshots/."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse

from portal.models import ConsumerGroup, Subscription, Topic
from portal.services.messages import searches
from tests.portal.browser import browser  # noqa: F401 (the module's Chromium)
from tests.portal.message_world import create_group, create_topic, send
from tests.portal.test_browser_charts import logged_in
from tests.portal.test_message_pages import CPP_CONSUMER
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow

SCREENSHOTS = Path(settings.BASE_DIR) / "docs" / "screenshots"
# How long the stand-in worker waits before running a search: long enough for the page to show it queued.
WORKER_DELAY = 1.5


@pytest.fixture
def worker(monkeypatch):
    """A Celery worker's stand-in: runs each started search in a thread of its own, a little later."""
    threads = []

    def run_later(search_id):
        def work():
            time.sleep(WORKER_DELAY)
            try:
                searches.run_search(search_id)
            finally:
                connection.close()

        threads.append(threading.Thread(target=work))
        threads[-1].start()

    monkeypatch.setattr(searches, "enqueue", run_later)
    yield
    for thread in threads:
        thread.join(timeout=30)


@pytest.fixture
def live_topic(cluster, sandbox, team):
    """The topic of the guide's pictures (the sandbox is this session's own, so the name is free)."""
    create_topic(sandbox, "ORDER_EVENTS")
    return Topic.objects.create(cluster=cluster, team=team, name="ORDER_EVENTS", queue_nums=4)


@pytest.fixture
def live_group(cluster, sandbox, team, live_topic):
    create_group(sandbox, "GID_BILLING")
    group = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_BILLING")
    Subscription.objects.create(consumer_group=group, topic=live_topic)
    return group


def start_consumer(sandbox, group: str, topic: str, expression: str = "*") -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", CPP_CONSUMER, group, sandbox.namesrv_addr, topic, expression],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "STARTED"
    return process


@pytest.fixture
def consumer(sandbox, cluster, team, live_topic, live_group):
    """A real C++ push consumer of the group, running until the test stops it, and one of another group that
    takes only refunds (so the track shows a message filtered out by its tag)."""
    create_group(sandbox, "GID_REFUNDS")
    refunds = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_REFUNDS")
    Subscription.objects.create(consumer_group=refunds, topic=live_topic, tag_expression="refunded")
    processes = [
        start_consumer(sandbox, live_group.name, live_topic.name),
        start_consumer(sandbox, refunds.name, live_topic.name, "refunded"),
    ]
    yield processes[0]
    for process in processes:
        if process.poll() is None:
            process.communicate("stop\n", timeout=30)


def test_find_a_message_see_where_it_went_and_preview_a_reset(
    browser,  # noqa: F811
    live_server,
    transactional_db,
    sandbox,
    member,
    live_topic,
    live_group,
    consumer,
    worker,
):
    orders = [
        send(
            sandbox,
            live_topic.name,
            json.dumps({"order": 1000 + number, "amount": 12.5 * number, "currency": "EUR"}).encode(),
            tags="paid",
            keys=[f"order-{1000 + number}", "customer-77"],
        )
        for number in range(4)
    ]
    with logged_in(browser, live_server, member) as tab:
        errors = []
        tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.goto(live_server.url + reverse("topic-detail", args=[live_topic.pk]))
        tab.click("#topic-messages a:text('Find messages')")
        tab.select_option("select[name=kind]", "key")
        tab.fill("input[name=key]", "customer-77")
        tab.click("#message-search-form button[type=submit]")

        tab.wait_for_selector("#search-progress[data-state=queued], #search-progress[data-state=running]")
        tab.wait_for_selector("table.hits tbody tr", timeout=30_000)  # the script reloaded the finished search
        assert tab.inner_text("[data-found]") == "4" and tab.inner_text("[data-percent]") == "100%"
        assert tab.locator("table.hits tbody tr").count() == 4

        first = orders[0]
        tab.click(f"a:text('{first.offset_msg_id}')")
        tab.wait_for_selector("#message-body [role=tab][aria-selected=true]")
        assert "order-1000" in tab.inner_text("#message-fields")
        assert '"amount": 0.0' in tab.inner_text("#body-json")
        tab.click("[data-tab=hex]")
        assert tab.is_visible("#body-hex") and not tab.is_visible("#body-json")
        tab.click("[data-tab=json]")

        def consumed() -> bool:
            tab.reload()
            track = tab.inner_text("#message-track")
            return "CONSUMED\t" in track and "CONSUMED_BUT_FILTERED" in track

        wait_for(consumed, timeout=30)
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOTS / "message.png"), full_page=True)
        tab.locator("#message-track").screenshot(path=str(SCREENSHOTS / "message-track.png"))
        assert live_group.name in tab.inner_text("#message-track")

        consumer.communicate("stop\n", timeout=30)  # the group goes offline and a backlog builds up
        for number in range(6):
            send(
                sandbox, live_topic.name, json.dumps({"order": 2000 + number}).encode(), keys=[f"order-{2000 + number}"]
            )
        tab.goto(live_server.url + reverse("consumer-group-detail", args=[live_group.pk]))
        tab.click("#group-messages a:text('Reset offsets')")
        tab.select_option("select[name=topic]", live_topic.name)
        tab.check("input[name=to][value=newest]")
        tab.fill("textarea[name=reason]", "skip the backlog built up during the incident")
        tab.click("button[name=preview]")
        tab.wait_for_selector("#reset-preview table.preview")
        rows = tab.locator("#reset-preview tbody tr")
        assert rows.count() == 8
        assert tab.is_visible("button[name=confirm]")
        tab.screenshot(path=str(SCREENSHOTS / "reset-preview.png"), full_page=True)
    assert errors == []

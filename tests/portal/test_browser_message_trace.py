"""A message's trace in a real browser (headless Chromium, the portal on pytest-django's live server, the sandbox
cluster): a slow send, a failed attempt and its successful retry in one group, a second group named as not having
consumed it yet. The screenshot is the user guide's (docs/trace.md), written to docs/screenshots/."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from portal.models import ConsumerGroup, Subscription, Topic
from tests.portal.browser import browser  # noqa: F401 (the module's Chromium)
from tests.portal.message_world import create_group, create_topic, send
from tests.portal.test_browser_charts import logged_in
from tests.portal.test_browser_messages import SCREENSHOTS
from tests.portal.test_message_trace_page import pub, sub_after, sub_before, write_trace

pytestmark = pytest.mark.slow


def test_a_messages_trace_shows_its_legs_and_the_group_that_has_not_consumed_it(
    browser,  # noqa: F811
    live_server,
    transactional_db,
    cluster,
    sandbox,
    member,
    team,
):
    create_topic(sandbox, "PAYMENT_EVENTS")
    topic = Topic.objects.create(cluster=cluster, team=team, name="PAYMENT_EVENTS", queue_nums=4, trace_enabled=True)
    for name in ("GID_LEDGER", "GID_NOTIFY"):
        create_group(sandbox, name)
        group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=name)
        Subscription.objects.create(consumer_group=group, topic=topic)
    sent = send(sandbox, topic.name, b'{"payment": 501, "amount": "19.90"}', keys=["order-7"], tags="TagA")
    now = int(time.time() * 1000)
    write_trace(
        sandbox,
        cluster.trace_topic,
        sent,
        pub(sent, group="PG_PAYMENTS", cost=1240, at=now),
        sub_before(sent, "GID_LEDGER", "REQ1", at=now + 1300),
        sub_after(sent, "GID_LEDGER", "REQ1", cost=3015, success="false", code=1, at=now + 4315),
        sub_before(sent, "GID_LEDGER", "REQ2", retry=1, at=now + 14_400),
        sub_after(sent, "GID_LEDGER", "REQ2", cost=8, at=now + 14_408),
    )
    with logged_in(browser, live_server, member) as tab:
        tab.goto(live_server.url + reverse("message-detail", args=[cluster.pk, topic.name, sent.offset_msg_id]))
        section = tab.locator("#message-trace")
        text = section.inner_text()
        assert "PG_PAYMENTS" in text and "GID_LEDGER" in text and "TIME_OUT" in text
        assert "Not consumed by group GID_NOTIFY yet." in text
        assert tab.locator("#message-trace tr.slow").count() == 2  # the send and the timed-out attempt
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        section.screenshot(path=str(SCREENSHOTS / "message-trace.png"))

"""Names that come from outside (a producer's client id, a broker name) are drawn by plotly.js as plain text: a
client id written as a link shows its markup in the legend and puts no link on the page (stats/charts.py)."""

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from portal.models import Cluster, Membership, ProducerGroup, TeamRole, Topic
from stats.store.producers import store_producer_minutes
from tests.portal.test_browser_charts import logged_in, open_charts
from tests.portal.test_producer_pages import ago, stored
from tests.support.factories import make_user

LINK = '<a href="https://evil.example/">10.0.0.9@1</a>'
BOLD_BROKER = "<b>broker-a</b>"


@pytest.fixture
def group(transactional_db, team):
    cluster = Cluster.objects.create(name="prod")
    topic = Topic.objects.create(cluster=cluster, team=team, name="ORDERS")
    group = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_ORDERS")
    group.topics.add(topic)
    store_producer_minutes(
        [
            stored(ago(2), LINK, BOLD_BROKER, [3.0, 5.0]),
            stored(ago(2), "10.0.0.1@100", "broker-b", [4.0]),  # a second of each, so that the legends show
        ]
    )
    return group


def test_a_client_id_written_as_a_link_is_shown_as_text_in_the_chart_legends(browser, live_server, group, team):
    user = make_user("mia")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    url = live_server.url + reverse("producer-group-detail", args=[group.pk]) + "?" + urlencode({"client": LINK})

    with logged_in(browser, live_server, user) as page:
        plots = open_charts(page, url, "producer-group-hostile-names")
        legends = page.locator("[data-chart] .legendtext").all_text_contents()
        titles = page.locator("[data-chart] .gtitle").all_text_contents()
        links_in_charts = page.locator("[data-chart] a").count()

    assert links_in_charts == 0
    assert LINK in legends and BOLD_BROKER in legends
    assert f"Send latency of client {LINK}" in titles
    assert any(trace["name"] == LINK.replace("<", "&lt;").replace(">", "&gt;") for plot in plots for trace in plot)

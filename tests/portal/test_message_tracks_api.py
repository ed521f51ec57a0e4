"""A message's tracks through the API name each track as mqadmin prints it (``NOT_ONLINE``), not as Python spells the
enum (``TrackType.NOT_ONLINE``): found against a real 4.9.4 broker (tests/real/test_portal_messages_real.py), where
the API said ``TrackType.CONSUMED``. On the sandbox cluster."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient

from monitor.remoting.admin import MQAdmin
from tests.portal.message_world import create_topic, live_group_fixture, live_topic_fixture, send  # noqa: F401


def test_the_api_names_a_track_as_mqadmin_does(cluster, sandbox, member, live_topic, live_group):
    create_topic(sandbox, f"%RETRY%{live_group.name}", queues=1)  # where the broker looks for the group's clients
    sent = send(sandbox, live_topic.name)
    with MQAdmin(sandbox.namesrv_addr) as admin:  # the group has consumed the topic (committed offsets), no client
        for broker_name in sandbox.broker_names:
            addr = sandbox.broker(broker_name).addr
            admin.update_consumer_offset(addr, live_group.name, live_topic.name, sent.queue_id, 0)
    client = APIClient()
    client.force_login(member)

    response = client.get(reverse("api:message-tracks", args=[cluster.pk, live_topic.name, sent.offset_msg_id]))

    assert response.status_code == 200, response.data
    tracks = {t["consumer_group"]: t["track_type"] for t in response.data}
    assert tracks[live_group.name] == "NOT_ONLINE", response.data

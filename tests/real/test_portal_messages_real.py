"""The portal's message services and API against real Apache RocketMQ 4.9.4 and 5.5.0 clusters, with traffic from
the real C++ client (PyPI rocketmq 0.4.4): a key with more messages than one broker answer holds is found whole by a
search job, and a re-run adds no duplicate hit; a message's page shows its body to its team (audited) and metadata
only to another team, and where it went for a group a C++ push consumer runs; dead letters of an always-failing C++
consumer are listed with their original topic and id, resent through an approved application and consumed, nothing
sent twice; an approved offset reset makes a running C++ consumer consume again from that point.

The portal's cluster row is pointed at the real cluster (as in test_portal_real); the shared clusters are used by
other tests too, so every topic and group name here is this module's own.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from monitor.launcher.cluster import RealCluster
from monitor.messages import send
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from portal.models import (
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    ConsumerGroup,
    MessageOperationItem,
    MessageSearch,
    OperationItemState,
    SearchState,
    Subscription,
    Topic,
)
from portal.services import registry
from portal.services.applications import approve, submit
from portal.services.messages import inspection, searches
from portal.services.messages.operations import preview_offset_reset
from portal.tasks import run_message_operation
from tests.real.test_message_operations_real import later_than, make_group, make_topic, start_consumer
from tests.real.traffic import FIRST, QUEUES, Traffic, committed, start_traffic
from tests.sandbox.test_broker_messaging import run_client
from tests.support import portal_world
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

K = ApplicationKind
WAIT = 120.0  # a loaded machine; every wait polls
BULK = 150  # messages under one key: more than one broker answer holds (64 on 4.9.4 and 5.5.0)

portal_admin = portal_world.portal_admin
team = portal_world.team
other_team = portal_world.other_team
member = portal_world.member
outsider = portal_world.outsider


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def real(request) -> RealCluster:
    return request.getfixturevalue(f"rocketmq{request.param}")


@pytest.fixture(scope="module")
def wire(real):
    admin = MQAdmin(real.namesrv_addr, timeout=15.0)
    yield admin
    admin.close()


def register(real: RealCluster, by):
    """The real cluster registered in the portal (its brokers discovered as they describe themselves)."""
    return registry.register_cluster(name=f"real-{real.version}", namesrv_addrs=[real.namesrv_addr], by=by)


@pytest.fixture
def cluster(real, portal_admin):
    return register(real, portal_admin)


def name(real: RealCluster, what: str) -> str:
    return f"PortalMsg{real.version.split('.')[0]}{what}"


def logged_in(user) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.force_login(user)
    return client


def produce(real: RealCluster, home, topic: str, specs: list[dict]) -> list[str]:
    """Send with the real C++ producer; the ids its sends returned (UNIQ_KEY), in send order."""
    sent = run_client({"namesrv": real.namesrv_addr, "produce": {"group": f"pg_{topic}", "messages": specs}}, home)
    assert all(s["status"] == 0 for s in sent["sent"]), sent  # SEND_OK
    return [s["id"] for s in sent["sent"]]


def search_hits(client: APIClient, search_id: int) -> list[dict]:
    """Every hit of a search, page by page through the API."""
    page = client.get(reverse("api:message-search-hits", args=[search_id])).data
    found = list(page["results"])
    while page["next"]:
        page = client.get(page["next"]).data
        found += page["results"]
    return found


def registered(cluster, team, topic: str, group: str | None = None, queues: int = QUEUES):
    """The topic (and a group subscribed to it) as the portal's registry holds them."""
    row = Topic.objects.create(cluster=cluster, team=team, name=topic, queue_nums=queues)
    if group is None:
        return row, None
    consumer_group = ConsumerGroup.objects.create(cluster=cluster, team=team, name=group)
    Subscription.objects.create(consumer_group=consumer_group, topic=row)
    return row, consumer_group


# --- find --------------------------------------------------------------------------------------------------------


@dataclass
class Bulk:
    """BULK messages sent by the C++ producer under one key (``ids``: their UNIQ_KEYs) within [begin, end], and ten
    under another key."""

    topic: str
    key: str
    ids: list[str]
    begin: dt.datetime
    end: dt.datetime


@pytest.fixture(scope="module")
def bulk(real, wire, tmp_path_factory) -> Bulk:
    topic = name(real, "Bulk")
    make_topic(real, wire, topic, QUEUES)
    key = f"{topic}_KEY"
    specs = [{"topic": topic, "body": f"bulk {n}", "keys": key, "tags": "TagA"} for n in range(BULK)]
    begin = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    ids = produce(
        real,
        tmp_path_factory.mktemp("cpp-bulk"),
        topic,
        specs + [{"topic": topic, "body": "other", "keys": "OTHER"}] * 10,
    )
    return Bulk(topic, key, ids[:BULK], begin, dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))


def test_a_search_job_finds_every_message_of_a_key_beyond_one_broker_answer_and_a_rerun_adds_no_duplicate(
    real, wire, bulk: Bulk, cluster, team, member
):
    topic, key, ids = bulk.topic, bulk.key, bulk.ids
    registered(cluster, team, topic)
    assert len(wire.query_message_on_broker(real.broker("broker-a").addr, topic, key)) < BULK
    client = logged_in(member)

    started = client.post(
        reverse("api:message-search-list"),
        {"cluster": cluster.pk, "topic": topic, "kind": "key", "key": key},
        format="json",
    )
    assert started.status_code == 201, started.data
    searches.run_search(started.data["id"])  # the task's body, in this process

    status = client.get(reverse("api:message-search-detail", args=[started.data["id"]])).data
    assert (status["state"], status["found"], status["progress"]) == ("done", BULK, 1.0), status
    hits = search_hits(client, started.data["id"])
    assert sorted(hit["uniq_key"] for hit in hits) == sorted(ids)
    assert {(hit["broker_name"], hit["keys"]) for hit in hits} == {("broker-a", key)}

    # The worker died mid-run and the task is delivered again: the search runs once more, from the start.
    MessageSearch.objects.filter(pk=started.data["id"]).update(state=SearchState.RUNNING)
    again = searches.run_search(started.data["id"])
    assert (again.state, again.found, again.hits.count()) == (SearchState.DONE, BULK, BULK)


def test_a_message_is_found_by_its_id_its_offset_id_its_queue_offset_and_a_store_time_range(
    real, bulk: Bulk, cluster, team, member
):
    registered(cluster, team, bulk.topic)
    (one,) = searches.hits(
        searches.run_search(
            searches.start_search(member, cluster, kind="unique_key", topic=bulk.topic, key=bulk.ids[42]).pk
        )
    )
    assert (one.uniq_key, one.keys) == (bulk.ids[42], bulk.key)

    def found(**criteria) -> list[str]:
        search = searches.run_search(searches.start_search(member, cluster, topic=bulk.topic, **criteria).pk)
        assert search.state == SearchState.DONE, search.error
        return [hit.uniq_key for hit in searches.hits(search)]

    assert found(kind="msg_id", key=one.offset_msg_id) == [bulk.ids[42]]
    assert found(kind="msg_id", key=bulk.ids[42]) == [bulk.ids[42]]
    queue = {"broker_name": one.broker_name, "queue_id": one.queue_id, "queue_offset": one.queue_offset}
    assert found(kind="queue_offset", **queue) == [bulk.ids[42]]
    in_range = found(kind="time_range", begin=bulk.begin, end=bulk.end)
    assert set(bulk.ids) <= set(in_range) and len(in_range) == BULK + 10


# --- a message's page --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def traffic(real, wire, tmp_path_factory):
    """A C++ producer and push consumer left online: the group consumed the first FIRST messages, not the rest."""
    run = start_traffic(real, wire, name(real, "Page"), tmp_path_factory.mktemp("cpp-page"))
    yield run
    run.stop()


def find_one(user, cluster, topic: str, key: str) -> MessageSearch:
    search = searches.start_search(user, cluster, kind="key", topic=topic, key=key)
    return searches.run_search(search.pk)


def test_a_hits_page_shows_the_body_to_its_team_metadata_to_another_and_tracks_of_the_running_consumer(
    real, traffic: Traffic, cluster, team, member, outsider
):
    registered(cluster, team, traffic.topic, traffic.group)
    consumed, waiting = traffic.sent[0], traffic.sent[FIRST]
    search = find_one(member, cluster, traffic.topic, consumed["key"])
    (hit,) = searches.hits(search)
    assert hit.uniq_key == consumed["id"]
    url = reverse("api:message-detail", args=[cluster.pk, traffic.topic, hit.offset_msg_id])

    owned = logged_in(member).get(url)
    assert owned.status_code == 200, owned.data
    assert (owned.data["body_visible"], owned.data["body"]["text"]) == (True, "body 0")
    assert (owned.data["fields"]["msgId"], owned.data["fields"]["keys"]) == (consumed["id"], consumed["key"])
    assert AuditEntry.objects.filter(action="message.body_viewed", actor=member).count() == 1

    other = logged_in(outsider).get(url)
    assert other.status_code == 200, other.data
    assert (other.data["body_visible"], other.data["body"]) == (False, None)
    assert other.data["fields"]["keys"] == consumed["key"]
    assert not AuditEntry.objects.filter(action="message.body_viewed", actor=outsider).exists()

    def track(key: str) -> dict[str, str]:
        (one,) = searches.hits(find_one(member, cluster, traffic.topic, key))
        tracks = logged_in(member).get(
            reverse("api:message-tracks", args=[cluster.pk, traffic.topic, one.offset_msg_id])
        )
        assert tracks.status_code == 200, tracks.data
        return {t["consumer_group"]: t["track_type"] for t in tracks.data}

    assert track(consumed["key"])[traffic.group] == "CONSUMED"
    assert track(waiting["key"])[traffic.group] == "NOT_CONSUME_YET"


def test_a_message_the_real_broker_does_not_hold_is_not_found(real, wire, cluster, team, member):
    """An offset id naming the real master and an offset far past its commit log: 404, not a server error."""
    topic = name(real, "Missing")
    registered(cluster, team, topic)
    host, port = real.broker("broker-a").addr.rsplit(":", 1)
    msg_id = "".join(f"{int(part):02X}" for part in host.split(".")) + f"{int(port):08X}" + f"{2**40:016X}"
    response = logged_in(member).get(reverse("api:message-detail", args=[cluster.pk, topic, msg_id]))
    assert response.status_code == 404, (response.status_code, response.data)


# --- act ---------------------------------------------------------------------------------------------------------


def test_dead_letters_of_a_failing_cpp_consumer_are_resent_through_an_application_and_consumed_once(
    rocketmq4, team, member, portal_admin, tmp_path
):
    """4.9.4 only: on 5.5.0 an always-failed message may not reach the DLQ in minutes (see
    test_message_operations_real.real4)."""
    real, cluster = rocketmq4, register(rocketmq4, portal_admin)
    with MQAdmin(real.namesrv_addr, timeout=15.0) as wire:
        topic, group = name(real, "Orders"), f"cg_portal_msg_dlq{real.version.split('.')[0]}"
        make_topic(real, wire, topic)
        make_group(real, wire, group)
        _, consumer_group = registered(cluster, team, topic, group, queues=2)
        for queue_id in range(2):  # where a new group starts
            wire.update_consumer_offset(real.broker().addr, group, topic, queue_id, 0)

        settings = submit(
            member, kind=K.GROUP_SETTINGS, team=team, cluster=None, payload={"retry_max_times": 1},
            consumer_group=consumer_group,
        )  # fmt: skip
        approve(settings, by=portal_admin)
        assert inspection.group_settings(member, consumer_group).retry_max_times == 1

        originals = produce(
            real,
            tmp_path / "producer",
            topic,
            [{"topic": topic, "body": f"order {n}", "keys": f"order-{n}"} for n in range(2)],
        )
        failing = start_consumer(real, group, topic, tmp_path / "failing", fail=True)
        try:
            dead = wait_for(
                lambda: (
                    (found := inspection.dead_letters(member, consumer_group, "dlq", newest=10))
                    and len(found) == 2
                    and found
                ),
                WAIT,
                "two dead letters",
                state=failing.read,
            )
        finally:
            failing.stop()
        assert {(d.topic, d.original_topic) for d in dead} == {(f"%DLQ%{group}", topic)}
        by_key = {d.keys: d for d in dead}
        assert sorted(by_key) == ["order-0", "order-1"]
        originals_by_id = {
            hit.uniq_key: hit for n in range(2) for hit in searches.hits(find_one(member, cluster, topic, f"order-{n}"))
        }
        assert set(originals_by_id) == set(originals)
        assert {d.original_msg_id for d in dead} == {hit.offset_msg_id for hit in originals_by_id.values()}

        resend = submit(
            member, kind=K.DEAD_LETTER_RESEND, team=team, cluster=None,
            payload={"msg_ids": [d.msg_id for d in dead], "to": "origin"}, consumer_group=consumer_group,
        )  # fmt: skip
        approve(resend, by=portal_admin)
        assert resend.state == ApplicationState.APPROVED
        sent = list(MessageOperationItem.objects.filter(application=resend).order_by("index"))
        assert [(item.state, item.target_topic) for item in sent] == [(OperationItemState.SENT, topic)] * 2
        for item in sent:
            wait_for(lambda item=item: wire.query_message_by_uniq_key(topic, item.uniq_key), 30, "the copy's index")

        # A run again after a crash that left one item "sending": the broker's index says it was sent.
        MessageOperationItem.objects.filter(pk=sent[0].pk).update(state=OperationItemState.SENDING, sent_msg_id="")
        assert run_message_operation(resend.pk) == {"total": 2, "sent": 2, "failed": 0}
        assert [len(wire.query_message_by_uniq_key(topic, item.uniq_key)) for item in sent] == [1, 1]

        succeeding = start_consumer(real, group, topic, tmp_path / "succeeding")
        try:
            wait_for(lambda: len(succeeding.read()) >= 2, WAIT, "the two resent messages", state=succeeding.read)
        finally:
            got = succeeding.stop()
    assert sorted((m["keys"], m["body"], m["topic"], m["reconsume"]) for m in got) == [
        ("order-0", "order 0", topic, 0),
        ("order-1", "order 1", topic, 0),
    ]


def test_an_approved_offset_reset_previewed_per_queue_makes_the_running_cpp_consumer_consume_again(
    real, wire, cluster, team, member, portal_admin, tmp_path
):
    topic, group = name(real, "Replay"), f"cg_portal_msg_replay{real.version.split('.')[0]}"
    make_topic(real, wire, topic)
    make_group(real, wire, group)
    _, consumer_group = registered(cluster, team, topic, group, queues=2)
    rounds = []
    for n in range(3):
        sent = [
            send.send_message(wire, topic, f"round {n} queue {q}".encode(), queue=b.MessageQueue(topic, "broker-a", q))
            for q in range(2)
        ]
        rounds.append([wire.view_message(s.offset_msg_id) for s in sent])
        later_than(max(m.store_timestamp for m in rounds[-1]))
    for queue_id in range(2):
        wire.update_consumer_offset(real.broker().addr, group, topic, queue_id, 0)

    consumer = start_consumer(real, group, topic, tmp_path / "cpp")
    try:
        wait_for(lambda: len(consumer.read()) >= 6, WAIT, "the first six messages", state=consumer.read)
        wait_for(lambda: committed(wire, group, topic) == 6, WAIT, "the consumer's commit of six")
        at = dt.datetime.fromtimestamp(rounds[1][0].store_timestamp / 1000, tz=dt.UTC)

        preview = preview_offset_reset(member, consumer_group, topic, at)
        assert [(p.broker_name, p.queue_id, p.current_offset, p.target_offset) for p in preview] == [
            ("broker-a", q, 3, 1) for q in range(2)
        ]
        application = submit(
            member, kind=K.OFFSET_RESET, team=team, cluster=None, payload={"topic": topic, "when": at.isoformat()},
            consumer_group=consumer_group,
        )  # fmt: skip
        approve(application, by=portal_admin)

        outcome = application.payload["outcome"]
        assert (application.state, outcome["online"]) == (ApplicationState.APPROVED, True)
        assert sorted((q["queue_id"], q["offset"], q["previous_offset"]) for q in outcome["queues"]) == [
            (q, 1, 3) for q in range(2)
        ]
        wait_for(lambda: len(consumer.read()) >= 10, WAIT, "the four messages again", state=consumer.read)
        wait_for(lambda: committed(wire, group, topic) == 6, WAIT, "the consumer's commit of six again")
    finally:
        got = consumer.stop()
    assert sorted(m["body"] for m in got[6:]) == sorted(m.body.decode() for m in rounds[1] + rounds[2])

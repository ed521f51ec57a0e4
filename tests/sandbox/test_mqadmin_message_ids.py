"""``mqadmin queryMsgById`` with both ids a message has, against the sandbox and the real C++ producer.

A producer's send returns the message's unique id (UNIQ_KEY: client IP, pid, class-loader hash, time, counter),
not the offset id (store host, port, commit-log offset) the 4.9.4 tool takes; both are 32 hex characters. The
command reads an id as an offset id only when the store host it names is a broker of the cluster, else looks it
up by unique key in the topic given with -t (as mqadmin 5 does), and never connects to an address an id names
that is not one of the cluster's brokers.
"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import create_offset_msg_id
from monitor.sandbox.cluster import SandboxCluster
from tests.sandbox.test_broker_messaging import messages, run_client

TOPIC = "TopicTest"


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxCluster]:
    with SandboxCluster() as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def sent(cluster, tmp_path_factory) -> list[dict]:
    """Two messages sent by the real C++ client; each entry holds the id its send_sync returned."""
    plan = {"namesrv": cluster.namesrv_addr, "produce": {"group": "pg_ids", "messages": messages(TOPIC, 2)}}
    return run_client(plan, tmp_path_factory.mktemp("cpp-home"))["sent"]


@pytest.fixture
def bystander() -> Iterator[socket.socket]:
    """A listening socket that is not a broker: an id naming it must never make the command connect to it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        yield listener


def connections(listener: socket.socket) -> int:
    accepted = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return accepted
        conn.close()
        accepted += 1


def mqadmin(cluster: SandboxCluster, *args: str) -> str:
    out = io.StringIO()
    call_command("mqadmin", "queryMsgById", "-n", cluster.namesrv_addr, "--timeout", "3", *args, stdout=out)
    return out.getvalue()


def mqadmin_error(cluster: SandboxCluster, *args: str) -> str:
    with pytest.raises(CommandError) as failure:
        mqadmin(cluster, *args)
    return str(failure.value)


def test_a_producers_id_is_found_in_the_topic_given_with_t(cluster, sent):
    producer_id = sent[0]["id"]
    out = mqadmin(cluster, "-i", producer_id, "-t", TOPIC)
    assert f"{'Topic:':<20} {TOPIC}" in out and f"{'Keys:':<20} [KEY_0]" in out
    assert "Message Body:        body 0" in out
    (view,) = json.loads(mqadmin(cluster, "-i", producer_id, "-t", TOPIC, "--json"))
    assert view["msgId"] == producer_id
    assert view["offsetMsgId"] == create_offset_msg_id(cluster.broker().addr, view["commitLogOffset"])


def test_several_producer_ids_are_found_in_one_command(cluster, sent):
    views = json.loads(mqadmin(cluster, "-i", ",".join(s["id"] for s in sent), "-t", TOPIC, "--json"))
    assert [(v["msgId"], v["bodyText"]) for v in views] == [(sent[0]["id"], "body 0"), (sent[1]["id"], "body 1")]


def test_a_producers_id_without_a_topic_is_a_clear_error(cluster, sent):
    error = mqadmin_error(cluster, "-i", sent[0]["id"])
    assert "is not an offset message id" in error
    assert "give its topic with -t to look it up as a producer's message id (UNIQ_KEY)" in error


def test_an_offset_id_still_shows_the_message_with_or_without_a_topic(cluster, sent):
    (by_unique,) = json.loads(mqadmin(cluster, "-i", sent[1]["id"], "-t", TOPIC, "--json"))
    offset_id = by_unique["offsetMsgId"]
    (by_offset,) = json.loads(mqadmin(cluster, "-i", offset_id, "--json"))
    (by_offset_in_topic,) = json.loads(mqadmin(cluster, "-i", offset_id, "-t", TOPIC, "--json"))
    assert by_offset == by_offset_in_topic
    assert (by_offset["msgId"], by_offset["bodyText"]) == (sent[1]["id"], "body 1")


def test_an_id_naming_a_host_that_is_not_a_broker_is_never_connected_to(cluster, bystander):
    host, port = bystander.getsockname()
    forged = create_offset_msg_id(f"{host}:{port}", 0)
    error = mqadmin_error(cluster, "-i", forged)
    assert f"the store host it would name, {host}:{port}, is not one of its brokers" in error
    error = mqadmin_error(cluster, "-i", forged, "-t", TOPIC)
    assert error.startswith(f"queryMsgById: no message with id {forged} in topic [{TOPIC}]")
    assert connections(bystander) == 0


def test_the_admin_client_refuses_to_view_a_message_on_a_host_that_is_not_a_broker(cluster, bystander):
    host, port = bystander.getsockname()
    with MQAdmin(cluster.namesrv_addr, timeout=3.0) as admin:
        with pytest.raises(ValueError, match="is not one of its brokers"):
            admin.view_message(create_offset_msg_id(f"{host}:{port}", 0))
        assert admin.is_cluster_broker(cluster.broker().addr)
        assert not admin.is_cluster_broker(f"{host}:{port}")
    assert connections(bystander) == 0

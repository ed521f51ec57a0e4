"""monitor.messages.search against the sandbox cluster: complete, de-duplicated, cancellable searches.

Two brokers each store the same pattern of messages straight into their store (with chosen store times), so the
tests know every message a search must find: a key with far more messages than one QUERY_MESSAGE answer holds,
many of them stored in the same millisecond (more than an answer holds, so no narrower time slice can separate
them), a dense stretch of hundreds per second, a sparse tail, and other keys' messages in between.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from monitor.messages import search
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.message import MessageExt, create_offset_msg_id
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.store.properties import java_properties_string
from tests.support.waiting import wait_for

TOPIC = "TopicSearch"
QUEUES = 4
KEY = "ORDER-1"
BURST = 150  # messages of KEY in one millisecond, per broker: more than the 64 an answer holds
DENSE = 400  # then one every 3 ms
SPARSE = 100  # then one every 10 s
NOISE_EVERY = 3  # another key's message after every third message of KEY


@dataclass(frozen=True)
class Stored:
    broker_name: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_timestamp: int
    keys: str
    uniq_key: str


def plan(base: int) -> list[tuple[int, str]]:
    """(store time, KEYS) of one broker's messages, in store order."""
    times = [base] * BURST + [base + 1000 + 3 * n for n in range(DENSE)]
    times += [base + 10_000 + 10_000 * n for n in range(SPARSE)]
    messages = []
    for n, stamp in enumerate(times):
        messages.append((stamp, KEY if n % 7 else f"{KEY} {KEY}"))  # a key listed twice is indexed twice
        if n % NOISE_EVERY == 0:
            messages.append((stamp, f"OTHER-{n}"))
    return messages


def store_all(cluster: SandboxCluster, base: int) -> list[Stored]:
    stored = []
    for name in cluster.broker_names:
        store = cluster.broker(name).store
        for n, (stamp, keys) in enumerate(plan(base)):
            uniq_key = f"{name}-{n}"
            properties = java_properties_string({"KEYS": keys, "UNIQ_KEY": uniq_key, "TAGS": "TagA"})
            queue_id = n % QUEUES
            result = store.put_message(
                TOPIC, queue_id, f"body {n}".encode(), properties, 0, 0, stamp, "127.0.0.1:5555", store_timestamp=stamp
            )
            stored.append(Stored(name, queue_id, result.queue_offset, result.commit_log_offset, stamp, keys, uniq_key))
    return stored


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxCluster]:
    with SandboxCluster(brokers=2) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def admin(cluster) -> Iterator[MQAdmin]:
    client = MQAdmin(cluster.namesrv_addr, timeout=5.0)
    yield client
    client.close()


def create_topic(cluster: SandboxCluster, admin: MQAdmin, topic: str) -> None:
    for name in cluster.broker_names:
        config = b.TopicConfig(topic_name=topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
        admin.create_and_update_topic_config(cluster.broker(name).addr, config)
    wait_for(lambda: len(admin.examine_topic_route_info(topic).queue_datas) == 2, 15, f"route of {topic}")


@dataclass(frozen=True)
class World:
    base: int  # the crowded millisecond; everything else follows it
    stored: list[Stored]


@pytest.fixture(scope="module")
def world(cluster, admin) -> World:
    create_topic(cluster, admin, TOPIC)
    base = int(time.time() * 1000) - 3_600_000
    return World(base, store_all(cluster, base))


def where(messages: list[MessageExt]) -> list[tuple[str, int]]:
    return sorted((m.store_host, m.commit_log_offset) for m in messages)


def expected(cluster: SandboxCluster, stored: list[Stored], keep) -> list[tuple[str, int]]:
    return sorted((cluster.broker(s.broker_name).addr, s.commit_log_offset) for s in stored if keep(s))


def has_key(s: Stored) -> bool:
    return KEY in s.keys.split()


def test_a_key_with_thousands_of_messages_is_found_completely_and_once(cluster, admin, world):
    found = list(search.by_key(admin, TOPIC, KEY))
    assert len(found) > 1000
    assert where(found) == expected(cluster, world.stored, has_key)


def test_many_messages_of_a_key_in_one_millisecond_are_all_found(cluster, admin, world):
    base, stored = world.base, world.stored
    found = list(search.by_key(admin, TOPIC, KEY, base, base))
    assert len(found) == 2 * BURST
    assert where(found) == expected(cluster, stored, lambda s: has_key(s) and s.store_timestamp == base)


def test_a_key_search_keeps_to_its_store_time_range(cluster, admin, world):
    base, stored = world.base, world.stored
    begin, end = base + 1000 + 300, base + 1000 + 600  # inside the dense stretch, not on second boundaries
    found = list(search.by_key(admin, TOPIC, KEY, begin, end))
    assert found
    assert where(found) == expected(cluster, stored, lambda s: has_key(s) and begin <= s.store_timestamp <= end)


def test_a_broker_answering_fewer_per_query_still_gives_every_message(admin, world):
    with (
        SandboxCluster(brokers=1, broker_config={"maxMsgsNumBatch": 16}) as small,
        MQAdmin(small.namesrv_addr, timeout=5.0) as small_admin,
    ):
        create_topic_single(small, small_admin)
        stored = store_all(small, world.base)
        found = list(search.by_key(small_admin, TOPIC, KEY))
        assert where(found) == expected(small, stored, has_key)


def create_topic_single(cluster: SandboxCluster, admin: MQAdmin) -> None:
    config = b.TopicConfig(topic_name=TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    admin.create_and_update_topic_config(cluster.broker().addr, config)
    wait_for(lambda: admin.examine_topic_route_info(TOPIC).queue_datas, 15, f"route of {TOPIC}")


def test_a_unique_key_finds_every_copy_a_producer_retry_stored(cluster, admin, world):
    (one,) = search.by_unique_key(admin, TOPIC, "broker-a-7")
    assert (one.uniq_key, one.store_host) == ("broker-a-7", cluster.broker("broker-a").addr)
    properties = java_properties_string({"KEYS": "RETRIED", "UNIQ_KEY": "RETRIED-ID", "TAGS": "TagA"})
    store = cluster.broker("broker-b").store
    now = int(time.time() * 1000)
    copies = [store.put_message(TOPIC, queue, b"again", properties, 0, 0, now, "127.0.0.1:5555") for queue in (0, 1)]
    found = list(search.by_unique_key(admin, TOPIC, "RETRIED-ID"))
    assert sorted(m.commit_log_offset for m in found) == sorted(c.commit_log_offset for c in copies)
    assert where(search.by_id(admin, "RETRIED-ID", TOPIC)) == where(found)
    assert list(search.by_unique_key(admin, TOPIC, "NO-SUCH-ID")) == []


def test_an_offset_id_is_read_from_its_broker_and_a_producer_id_needs_the_topic(cluster, admin, world):
    found = next(search.by_key(admin, TOPIC, KEY))
    (by_offset,) = search.by_id(admin, found.msg_id)
    assert (by_offset.commit_log_offset, by_offset.store_host) == (found.commit_log_offset, found.store_host)
    elsewhere = create_offset_msg_id("10.255.255.1:10911", found.commit_log_offset)  # no broker of this cluster
    with pytest.raises(search.InvalidMessageId, match="not an offset message id of this cluster"):
        search.by_id(admin, elsewhere)
    assert search.by_id(admin, elsewhere, TOPIC) == []  # looked up as a producer's id instead
    with pytest.raises(search.InvalidMessageId, match="must be 32 hex characters"):
        search.by_id(admin, found.uniq_key)


def test_a_time_range_over_all_queues_gives_exactly_the_messages_stored_in_it(cluster, admin, world):
    base, stored = world.base, world.stored
    begin, end = base, base + 1000 + 3 * 100
    found = list(search.by_time_range(admin, TOPIC, begin, end))
    assert where(found) == expected(cluster, stored, lambda s: begin <= s.store_timestamp <= end)
    assert len(found) > 2 * BURST


def test_a_time_range_starting_in_a_crowded_millisecond_misses_none_of_it(cluster, admin, world):
    base, stored = world.base, world.stored
    found = list(search.by_time_range(admin, TOPIC, base, base))
    assert where(found) == expected(cluster, stored, lambda s: s.store_timestamp == base)


def test_a_time_range_of_one_queue(cluster, admin, world):
    base, stored = world.base, world.stored
    begin, end = base + 1000, base + 10_000 + 10_000 * 50
    found = list(search.by_time_range(admin, TOPIC, begin, end, broker_name="broker-b", queue_id=2))
    assert [m.queue_offset for m in found] == sorted(m.queue_offset for m in found)
    assert where(found) == expected(
        cluster,
        stored,
        lambda s: s.broker_name == "broker-b" and s.queue_id == 2 and begin <= s.store_timestamp <= end,
    )


def test_an_unknown_broker_or_queue_is_refused(admin, world):
    with pytest.raises(ValueError, match="broker-z does not serve"):
        list(search.by_time_range(admin, TOPIC, 0, None, broker_name="broker-z"))
    with pytest.raises(ValueError, match="no readable queue 9"):
        list(search.by_time_range(admin, TOPIC, 0, None, broker_name="broker-a", queue_id=9))


def test_by_queue_offset_and_queue_range(cluster, admin, world):
    target = next(s for s in world.stored if s.broker_name == "broker-b" and s.queue_id == 3 and s.queue_offset == 17)
    msg = search.by_queue_offset(admin, TOPIC, "broker-b", 3, 17)
    assert (msg.commit_log_offset, msg.uniq_key) == (target.commit_log_offset, target.uniq_key)
    with pytest.raises(search.MessageNotFound, match="no message at offset 999999"):
        search.by_queue_offset(admin, TOPIC, "broker-b", 3, 999_999)
    assert [m.queue_offset for m in search.queue_range(admin, TOPIC, "broker-b", 3, 10, 75)] == list(range(10, 75))


def test_progress_grows_to_one_and_counts_what_was_found(admin, world):
    for run in (
        lambda report: search.by_key(admin, TOPIC, KEY, progress=report),
        lambda report: search.by_time_range(admin, TOPIC, 0, None, progress=report),
    ):
        reports: list[search.Progress] = []
        found = list(run(reports.append))
        done = [r.done for r in reports]
        assert done == sorted(done) and done[-1] == 1.0
        assert reports[-1].found == len(found)


class Polls:
    """A cancel function that says stop at its fourth poll."""

    def __init__(self):
        self.count = 0

    def cancelled(self) -> bool:
        self.count += 1
        return self.count > 3


def test_a_cancelled_search_stops_between_two_requests(admin, world):
    for run in (
        lambda cancelled: search.by_key(admin, TOPIC, KEY, cancelled=cancelled),
        lambda cancelled: search.by_time_range(admin, TOPIC, 0, None, cancelled=cancelled),
    ):
        polls = Polls()
        found = []
        with pytest.raises(search.SearchCancelled):
            found.extend(run(polls.cancelled))
        assert polls.count == 4
        assert len(found) < 2 * len(plan(0))

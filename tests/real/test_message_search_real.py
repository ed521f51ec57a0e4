"""monitor.messages.search against real RocketMQ 4.9.4 and 5.5.0 brokers, with messages from the real C++ client.

A broker answers a key query with at most 64 messages (maxMsgsNumBatch), the newest, so a key with more has to be
searched in slices; the C++ producer sends them within a second or two, more than an answer's worth per second of
the index's time, so the search must also fall back to reading that second of the queues. A time-range scan must
give exactly the messages sent within the range: none from before it, none missed.
"""

from __future__ import annotations

import time

import pytest

from monitor.messages import search
from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from tests.sandbox.test_broker_messaging import run_client
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

QUEUES = 4
KEY = "BULK"
MANY = 200  # more than one answer holds


@pytest.fixture(scope="module", params=["4", "5"], ids=["4.9.4", "5.5.0"])
def real(request):
    return request.getfixturevalue(f"rocketmq{request.param}")


@pytest.fixture(scope="module")
def admin(real):
    client = MQAdmin(real.namesrv_addr, timeout=10.0)
    yield client
    client.close()


def produce(real, home, topic: str, specs: list[dict]) -> list[str]:
    """Send with the C++ producer; the ids its sends returned (UNIQ_KEY), in send order."""
    sent = run_client({"namesrv": real.namesrv_addr, "produce": {"group": f"pg_{topic}", "messages": specs}}, home)
    assert all(s["status"] == 0 for s in sent["sent"]), sent  # SEND_OK
    return [s["id"] for s in sent["sent"]]


@pytest.fixture(scope="module")
def topic(real, admin) -> str:
    name = "TopicSearchReal"
    config = b.TopicConfig(topic_name=name, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    admin.create_and_update_topic_config(real.broker("broker-a").addr, config)
    wait_for(lambda: admin.examine_topic_route_info(name).queue_datas, 30, f"route of {name}")
    return name


def specs(topic: str, count: int, keys: str, label: str) -> list[dict]:
    return [{"topic": topic, "body": f"{label} {n}", "keys": keys, "tags": "TagA"} for n in range(count)]


def test_a_key_with_more_messages_than_one_answer_holds_is_found_completely(real, admin, topic, tmp_path):
    ids = produce(real, tmp_path, topic, specs(topic, MANY, KEY, "bulk") + specs(topic, 20, "OTHER", "other"))
    bulk = ids[:MANY]
    one_answer = admin.query_message_on_broker(real.broker("broker-a").addr, topic, KEY)
    assert len(one_answer) < MANY  # what a single QUERY_MESSAGE gives
    found = list(search.by_key(admin, topic, KEY))
    assert sorted(m.uniq_key for m in found) == sorted(bulk)
    assert len({m.commit_log_offset for m in found}) == MANY
    (one,) = search.by_unique_key(admin, topic, bulk[123])
    assert one.body == b"bulk 123"


def test_a_time_range_scan_finds_exactly_what_was_sent_in_it(real, admin, topic, tmp_path):
    produce(real, tmp_path / "before", topic, specs(topic, 30, "EARLY", "early"))
    time.sleep(1.1)
    begin = int(time.time() * 1000)
    inside = produce(real, tmp_path / "inside", topic, specs(topic, 150, "RANGE", "range"))
    end = int(time.time() * 1000)
    time.sleep(1.1)
    produce(real, tmp_path / "after", topic, specs(topic, 30, "LATE", "late"))
    reports: list[search.Progress] = []
    found = list(search.by_time_range(admin, topic, begin, end, progress=reports.append))
    assert sorted(m.uniq_key for m in found) == sorted(inside)
    assert reports[-1] == search.Progress(1.0, len(inside))
    one_queue = list(search.by_time_range(admin, topic, begin, end, broker_name="broker-a", queue_id=1))
    assert {m.queue_id for m in one_queue} == {1}
    assert sorted(m.uniq_key for m in one_queue) == sorted(m.uniq_key for m in found if m.queue_id == 1)

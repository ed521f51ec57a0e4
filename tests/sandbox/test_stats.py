"""Specification of the sandbox's broker stats against RocketMQ 4.9.4 (BrokerStatsManager, StatsItem) and captures.

Time is controlled by hand: the tests call ``tick(now_ms)`` the way the broker's scheduler would, so every window
is a hand-computable figure. The capture scenario replays traffic that reproduces the real broker's
VIEW_BROKER_STATS_DATA bodies byte for byte, ~11 minutes after start as in the captures.
"""

import sys
import threading
import time
from collections.abc import Callable

import pytest

from monitor.remoting.body import BrokerStatsData, BrokerStatsItem
from monitor.remoting.codes import ResponseCode
from monitor.sandbox.stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_LATENCY,
    GROUP_GET_NUMS,
    QUEUE_PUT_NUMS,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    BrokerStatsManager,
    StatsNotFound,
    StatsSampler,
    StatsSnapshot,
    build_stats_key,
)
from tests.fixtures import captured

START_MS = 1_780_000_000_000
TOPIC, GROUP, CLUSTER = "TopicTest", "cg_test", "DefaultCluster"


class Timeline:
    """A broker's clock: starts the sampling schedule, then advances in 10 s steps, ticking at the end of each."""

    def __init__(self, stats: BrokerStatsManager, start_ms: int = START_MS):
        self.stats = stats
        self.now_ms = start_ms
        stats.tick(start_ms)

    def advance(self, seconds: int, traffic: Callable[[int], None] = lambda step: None) -> None:
        """``traffic(step)`` records what happens during each 10 s step, before that step's tick."""
        for step in range(seconds // 10):
            traffic(step)
            self.now_ms += 10_000
            self.stats.tick(self.now_ms)


def split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal integers."""
    quotient, remainder = divmod(total, parts)
    return [quotient + 1] * remainder + [quotient] * (parts - remainder)


def spread(events: list, steps: int) -> Callable[[int], list]:
    """The events falling in each of ``steps`` steps, in order."""
    return lambda step: events[step * len(events) // steps : (step + 1) * len(events) // steps]


def replay(stats: BrokerStatsManager, seconds: int, puts: list[int], pulls: list[tuple[int, int]], send_backs: int):
    """Traffic as the 4.9.4 processors record it: one SEND of one message, one PULL of n messages, one send-back."""
    steps = seconds // 10
    puts_in, pulls_in, backs_in = spread(puts, steps), spread(pulls, steps), spread([None] * send_backs, steps)

    def traffic(step: int) -> None:
        for size in puts_in(step):
            stats.inc_topic_put_nums(TOPIC, 1, 1)
            stats.inc_topic_put_size(TOPIC, size)
            stats.inc_broker_put_nums(1)
        for messages, size in pulls_in(step):
            stats.inc_group_get_nums(GROUP, TOPIC, messages)
            stats.inc_group_get_size(GROUP, TOPIC, size)
            stats.inc_broker_get_nums(messages)
        for _ in backs_in(step):
            stats.inc_send_back_nums(GROUP, TOPIC)

    return traffic


@pytest.fixture(scope="module")
def captured_broker() -> BrokerStatsManager:
    """The captured broker 11 minutes after start: 6292 messages (1,375,454 bytes) put and pulled in 2324 pulls with
    515 send-backs before the 10-minute sampling, then 590 messages of 206 bytes, pulled one by one, and 29
    send-backs in the last minute."""
    stats = BrokerStatsManager(CLUSTER)
    clock = Timeline(stats)
    first_pulls = list(zip(split(6292, 2324), split(1_375_454, 2324), strict=True))
    clock.advance(600, replay(stats, 600, split(1_375_454, 6292), first_pulls, 515))
    clock.advance(60, replay(stats, 60, [206] * 590, [(1, 206)] * 590, 29))
    return stats


# --- windows --------------------------------------------------------------------------------------------------------


def test_a_fresh_key_with_no_samples_answers_all_zeros():
    stats = BrokerStatsManager(CLUSTER)
    stats.inc_topic_put_nums(TOPIC, 5, 1)

    data = stats.view_stats_data(TOPIC_PUT_NUMS, TOPIC)

    assert data == BrokerStatsData(BrokerStatsItem(), BrokerStatsItem(), BrokerStatsItem())
    assert data.encode() == captured("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS_all_zero")["response"]["body_text"].encode()


def test_the_first_sampling_counts_everything_since_the_key_appeared_against_a_made_up_zero_one_period_back():
    stats = BrokerStatsManager(CLUSTER)
    stats.inc_topic_put_nums(TOPIC, 3, 1)
    clock = Timeline(stats)
    clock.advance(20, lambda step: stats.inc_topic_put_nums(TOPIC, 10, 1))

    # samples: (start-10s, 0, 0), (start, 1, 3), (start+10s, 2, 13), (start+20s, 3, 23)
    assert stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute() == StatsSnapshot(
        sum=23, tps=23 * 1000.0 / 30_000, avgpt=23 / 3, times=3
    )


def test_after_traffic_across_60_s_the_minute_window_covers_exactly_the_last_six_intervals():
    stats = BrokerStatsManager(CLUSTER)
    stats.inc_topic_put_nums(TOPIC, 3, 1)
    clock = Timeline(stats)
    clock.advance(60, lambda step: stats.inc_topic_put_nums(TOPIC, 10 * (step + 1), 2))

    minute = stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute()

    # 7 samples kept, start .. start+60s: the made-up zero and the 3 recorded before start have dropped out.
    assert minute == StatsSnapshot(sum=210, tps=3.5, avgpt=17.5, times=12)
    clock.advance(60)
    assert stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute() == StatsSnapshot(0, 0.0, 0.0, 0)


def test_the_hour_window_stays_zero_until_a_ten_minute_sampling_after_the_key_appeared():
    stats = BrokerStatsManager(CLUSTER)
    clock = Timeline(stats)  # the start's sampling finds no keys
    clock.advance(590, lambda step: stats.inc_group_get_nums(GROUP, TOPIC, 4))
    item = stats.get_stats_item(GROUP_GET_NUMS, build_stats_key(TOPIC, GROUP))

    assert item.get_stats_data_in_minute().sum == 24
    assert item.get_stats_data_in_hour() == StatsSnapshot()
    clock.advance(10, lambda step: stats.inc_group_get_nums(GROUP, TOPIC, 4))
    assert item.get_stats_data_in_hour() == StatsSnapshot(sum=240, tps=240 * 1000.0 / 600_000, avgpt=4.0, times=60)
    assert item.get_stats_data_in_day() == StatsSnapshot()


def test_the_day_window_samples_hourly_and_keeps_25_samples():
    stats = BrokerStatsManager(CLUSTER)
    clock = Timeline(stats)
    hours = 26
    clock.advance(hours * 3600, lambda step: stats.inc_topic_put_size(TOPIC, 100) if step % 360 == 0 else None)
    day = stats.get_stats_item(TOPIC_PUT_SIZE, TOPIC).get_stats_data_in_day()

    # 25 hourly samples span 24 hours, each hour holding one 100-byte put
    assert day == StatsSnapshot(sum=2400, tps=2400 * 1000.0 / (24 * 3_600_000), avgpt=100.0, times=24)


def test_late_ticks_run_each_due_sampling_once_and_keep_the_schedule_anchored_at_start():
    stats = BrokerStatsManager(CLUSTER)
    assert stats.next_tick_ms() is None
    stats.inc_topic_put_nums(TOPIC)
    stats.tick(START_MS)
    assert stats.next_tick_ms() == START_MS + 10_000

    stats.tick(START_MS + 5_000)  # nothing due
    stats.tick(START_MS + 35_000)  # three slots missed: one sample
    assert stats.next_tick_ms() == START_MS + 40_000

    stats.inc_topic_put_nums(TOPIC)
    stats.tick(START_MS + 40_000)
    # samples: start-10s (made up), start, start+35s, start+40s
    assert stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute() == StatsSnapshot(
        sum=2, tps=2 * 1000.0 / 50_000, avgpt=1.0, times=2
    )


def test_two_samplings_at_the_same_instant_give_java_infinity_written_as_null():
    stats = BrokerStatsManager(CLUSTER)
    stats.inc_topic_put_nums(TOPIC)
    for _ in range(8):
        stats.sample_minute(START_MS)
    stats.inc_topic_put_nums(TOPIC)
    stats.sample_minute(START_MS)

    assert stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute().tps == float("inf")
    assert b'"statsMinute":{"avgpt":1.0,"sum":1,"tps":null}' in stats.view_stats_data(TOPIC_PUT_NUMS, TOPIC).encode()


# --- captures -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS",
        "VIEW_BROKER_STATS_DATA_TOPIC_PUT_SIZE",
        "VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS",
        "VIEW_BROKER_STATS_DATA_GROUP_GET_SIZE",
        "VIEW_BROKER_STATS_DATA_SNDBCK_PUT_NUMS",
        "VIEW_BROKER_STATS_DATA_GROUP_GET_NUMS_mqadmin_statsAll",
    ],
)
def test_replayed_traffic_reproduces_the_captured_stats_body_byte_for_byte(captured_broker, name):
    exchange = captured(name)
    fields = exchange["request"]["header"]["extFields"]

    data = captured_broker.view_stats_data(fields["statsName"], fields["statsKey"])

    assert data.encode() == exchange["response"]["body_text"].encode()


def test_a_burst_older_than_a_minute_before_the_first_ten_minute_sampling_reproduces_the_all_zero_capture():
    stats = BrokerStatsManager(CLUSTER)
    clock = Timeline(stats)
    clock.advance(10, lambda step: [stats.inc_topic_put_nums(TOPIC) for _ in range(100)])
    clock.advance(90)

    body = stats.view_stats_data(TOPIC_PUT_NUMS, TOPIC).encode()

    assert body == captured("VIEW_BROKER_STATS_DATA_TOPIC_PUT_NUMS_all_zero")["response"]["body_text"].encode()


@pytest.mark.parametrize(
    "name", ["VIEW_BROKER_STATS_DATA_stats_not_exist", "VIEW_BROKER_STATS_DATA_group_key_wrong_order"]
)
def test_unknown_keys_and_group_first_keys_raise_the_brokers_exact_remark(captured_broker, name):
    exchange = captured(name)
    fields = exchange["request"]["header"]["extFields"]

    with pytest.raises(StatsNotFound) as raised:
        captured_broker.view_stats_data(fields["statsName"], fields["statsKey"])

    assert str(raised.value) == exchange["response"]["header"]["remark"]
    assert raised.value.response_code == ResponseCode.SYSTEM_ERROR == exchange["response"]["header"]["code"]


@pytest.mark.parametrize("stats_name", ["NO_SUCH_STATS", "GROUP_GET_FALL_SIZE", "GROUP_GET_FROM_DISK_NUMS"])
def test_names_outside_the_stats_table_or_never_fed_answer_not_exist(captured_broker, stats_name):
    with pytest.raises(StatsNotFound, match=rf"^The stats <{stats_name}> <TopicTest@cg_test> not exist$"):
        captured_broker.view_stats_data(stats_name, "TopicTest@cg_test")


# --- keys -----------------------------------------------------------------------------------------------------------


def test_broker_wide_counts_are_keyed_by_cluster_name_and_count_no_calls():
    stats = BrokerStatsManager(CLUSTER)
    clock = Timeline(stats)
    clock.advance(60, lambda step: (stats.inc_broker_put_nums(3), stats.inc_broker_get_nums(2)))

    assert stats.view_stats_data(BROKER_PUT_NUMS, CLUSTER).stats_minute == BrokerStatsItem(18, 0.3, 0.0)
    assert stats.view_stats_data(BROKER_GET_NUMS, CLUSTER).stats_minute == BrokerStatsItem(12, 0.2, 0.0)


def test_queue_and_latency_keys_follow_the_detail_stat_switch():
    detailed, plain = BrokerStatsManager(CLUSTER), BrokerStatsManager(CLUSTER, enable_queue_stat=False)
    for stats in (detailed, plain):
        stats.inc_queue_put_nums(TOPIC, 3)
        stats.inc_group_get_latency(GROUP, TOPIC, 3, 12)

    assert detailed.get_stats_item(QUEUE_PUT_NUMS, "TopicTest@3") is not None
    assert detailed.get_stats_item(GROUP_GET_LATENCY, "3@TopicTest@cg_test") is not None
    assert plain.get_stats_item(QUEUE_PUT_NUMS, "TopicTest@3") is None
    assert plain.get_stats_item(GROUP_GET_LATENCY, "TopicTest@cg_test") is not None


def test_deleting_a_topic_or_a_group_forgets_exactly_its_keys():
    stats = BrokerStatsManager(CLUSTER)
    for topic in ("TopicTest", "TopicOther"):
        stats.inc_topic_put_nums(topic)
        stats.inc_queue_put_nums(topic, 0)
        for group in ("cg_test", "cg_other"):
            stats.inc_group_get_nums(group, topic, 1)
            stats.inc_send_back_nums(group, topic)
            stats.inc_group_get_latency(group, topic, 0, 5)

    stats.on_topic_deleted("TopicTest")
    stats.on_group_deleted("cg_test")

    assert stats.get_stats_item(TOPIC_PUT_NUMS, "TopicTest") is None
    assert stats.get_stats_item(QUEUE_PUT_NUMS, "TopicTest@0") is None
    assert stats.get_stats_item(GROUP_GET_NUMS, "TopicTest@cg_other") is None
    assert stats.get_stats_item(GROUP_GET_LATENCY, "0@TopicTest@cg_other") is None
    assert stats.get_stats_item(SNDBCK_PUT_NUMS, "TopicOther@cg_test") is None
    assert stats.get_stats_item(GROUP_GET_LATENCY, "0@TopicOther@cg_test") is None
    assert stats.get_stats_item(TOPIC_PUT_NUMS, "TopicOther") is not None
    assert stats.get_stats_item(GROUP_GET_NUMS, "TopicOther@cg_other") is not None
    assert stats.get_stats_item(GROUP_GET_LATENCY, "0@TopicOther@cg_other") is not None


def test_consume_tps_is_the_groups_pull_tps_over_the_last_minute(captured_broker):
    assert captured_broker.tps_group_get_nums(GROUP, TOPIC) == 9.833333333333334
    assert captured_broker.tps_group_get_nums("cg_unknown", TOPIC) == 0.0


# --- concurrency and cost -------------------------------------------------------------------------------------------


def test_concurrent_increments_and_samplings_lose_nothing():
    stats = BrokerStatsManager(CLUSTER)
    stats.tick(START_MS)
    threads, per_thread = 8, 5000
    done = threading.Event()

    def record() -> None:
        for _ in range(per_thread):
            stats.inc_group_get_nums(GROUP, TOPIC, 2)

    def sample() -> None:
        now_ms = START_MS
        while not done.is_set():
            now_ms += 10_000
            stats.tick(now_ms)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=record) for _ in range(threads)]
        sampler = threading.Thread(target=sample)
        for thread in [*workers, sampler]:
            thread.start()
        for thread in workers:
            thread.join()
        done.set()
        sampler.join()
    finally:
        sys.setswitchinterval(interval)

    item = stats.get_stats_item(GROUP_GET_NUMS, build_stats_key(TOPIC, GROUP))
    assert (item.value, item.times) == (2 * threads * per_thread, threads * per_thread)


def test_the_sampler_thread_samples_at_once_and_stops_promptly():
    stats = BrokerStatsManager(CLUSTER)
    stats.inc_topic_put_nums(TOPIC, 10, 1)
    with StatsSampler(stats) as sampler:
        deadline = time.monotonic() + 2
        while stats.next_tick_ms() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        minute = stats.get_stats_item(TOPIC_PUT_NUMS, TOPIC).get_stats_data_in_minute()

    assert minute == StatsSnapshot(sum=10, tps=1.0, avgpt=10.0, times=1)
    assert not sampler.running

"""The sandbox broker's stats sampling over 10,000 topics and 10,000 topic@group keys (one tick runs the minute,
hour and day samplings), and the cost of one counter increment."""

import time

from monitor.sandbox.stats import BrokerStatsManager

KEYS = 10_000


def run() -> dict[str, float]:
    stats = BrokerStatsManager("DefaultCluster")
    for index in range(KEYS):
        stats.inc_topic_put_nums(f"topic-{index}")
        stats.inc_group_get_nums(f"group-{index % 100}", f"topic-{index}", 1)
    started = time.perf_counter()
    stats.tick(1_800_000_000_000)
    first_tick = time.perf_counter() - started
    increments = 200_000
    started = time.perf_counter()
    for _ in range(increments):
        stats.inc_topic_put_nums("topic-1")
    per_increment = (time.perf_counter() - started) / increments
    return {
        "sandbox_stats_first_tick_ms": first_tick * 1000,
        "sandbox_stats_increment_ns": per_increment * 1e9,
    }

"""Reading producers' reports back: per minute, the percentiles of all the sends a point covers (the group, a broker,
a client, a topic) come from the merged histograms and are within the histogram's error of the exact nearest-rank
percentiles of those sends; the maximum is exact; minutes nobody reported are gaps; exceptions add up per broker;
each client's last report is listed."""

import datetime as dt
import math
import random

import pytest

from stats.histogram import RELATIVE_ERROR, Histogram
from stats.models import ProducerMinute
from stats.queries.producers import group_latency, topic_latency
from stats.store.producers import store_producer_minutes

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 11, 22, 8, 0, tzinfo=dt.UTC)
CLUSTER = 3


def minute(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def exact(costs: list[float], q: float) -> float:
    ordered = sorted(costs)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def report(n, client, broker, costs, *, group="PID_ORDERS", topic="ORDERS", exceptions=None) -> ProducerMinute:
    histogram = Histogram()
    for cost in costs:
        histogram.record(cost)
    exceptions = exceptions or {}
    return ProducerMinute(
        cluster_id=CLUSTER,
        producer_group=group,
        topic=topic,
        client_id=client,
        client_addr=client.partition("@")[0],
        broker_name=broker,
        minute=minute(n),
        count=len(costs),
        exception_count=sum(exceptions.values()),
        exceptions=exceptions,
        histogram=histogram.to_dict(),
        max_ms=histogram.max_ms,
        updated_at=minute(n + 1),
    )


@pytest.fixture
def sends():
    """Minutes 0, 1 and 3 (2 unreported) of two clients on two brokers: broker-b slow, broker-a fast; the costs
    of every (minute, client, broker) by key."""
    rng = random.Random(11)
    costs = {}
    for n in (0, 1, 3):
        for client in ("10.0.0.1@100", "10.0.0.2@200"):
            costs[n, client, "broker-a"] = [rng.lognormvariate(0.5, 0.6) for _ in range(rng.randint(50, 300))]
            costs[n, client, "broker-b"] = [200 + rng.expovariate(1 / 40) for _ in range(rng.randint(5, 40))]
    rows = [
        report(n, client, broker, values, exceptions={"RemotingTimeoutException": 2} if broker == "broker-b" else {})
        for (n, client, broker), values in costs.items()
    ]
    store_producer_minutes(rows)
    return costs


def assert_close(shown: float, wanted: float) -> None:
    assert abs(shown - wanted) <= RELATIVE_ERROR * wanted + 1e-9, (shown, wanted)


def test_group_percentiles_per_minute_are_within_the_histogram_error_of_the_exact_ones(sends):
    latency = group_latency(CLUSTER, "PID_ORDERS", minute(0), minute(3))

    for index, n in enumerate(range(4)):
        everything = [cost for (m, _c, _b), values in sends.items() if m == n for cost in values]
        if not everything:
            gap = latency.total.p99[index][1], latency.total.max[index][1], latency.total.sends[index][1]
            assert gap == (None, None, None)
            continue
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            assert_close(getattr(latency.total, name)[index][1], exact(everything, q))
        assert latency.total.max[index][1] == max(everything)
        assert latency.total.sends[index][1] == len(everything)
        assert latency.total.exceptions[index][1] == 4


def test_per_broker_and_per_client_series_cover_only_their_own_sends(sends):
    latency = group_latency(CLUSTER, "PID_ORDERS", minute(0), minute(3))

    assert list(latency.by_broker) == ["broker-a", "broker-b"]
    assert list(latency.by_client) == ["10.0.0.1@100", "10.0.0.2@200"]
    slow = [cost for (m, _c, b), values in sends.items() if m == 1 and b == "broker-b" for cost in values]
    assert_close(latency.by_broker["broker-b"].p99[1][1], exact(slow, 0.99))
    assert latency.by_broker["broker-b"].p50[1][1] > 200 > latency.by_broker["broker-a"].max[1][1]
    one_client = [cost for (m, c, _b), values in sends.items() if m == 3 and c == "10.0.0.2@200" for cost in values]
    assert_close(latency.by_client["10.0.0.2@200"].p90[3][1], exact(one_client, 0.9))
    assert latency.by_client["10.0.0.2@200"].p90[2][1] is None  # minute 2: nobody reported


def test_exceptions_are_summed_per_broker_and_class_over_the_range(sends):
    latency = group_latency(CLUSTER, "PID_ORDERS", minute(0), minute(3))

    # two clients, three minutes, two timeouts each on broker-b; broker-a reported and failed nothing
    assert latency.exceptions == {"broker-a": {}, "broker-b": {"RemotingTimeoutException": 12}}
    assert [value for _m, value in latency.by_broker["broker-b"].exceptions] == [4, 4, None, 4]


def test_each_client_is_listed_with_its_last_reported_minute(sends):
    store_producer_minutes([report(0, "10.0.0.9@900", "broker-a", [3.0, 4.0])])

    clients = {
        client.client_id: client for client in group_latency(CLUSTER, "PID_ORDERS", minute(0), minute(3)).clients
    }

    assert clients["10.0.0.9@900"].minute == minute(0)
    assert (clients["10.0.0.9@900"].sends, clients["10.0.0.9@900"].max_ms) == (2, 4.0)
    latest = clients["10.0.0.1@100"]
    assert (latest.minute, latest.client_addr, latest.topics, latest.brokers) == (
        minute(3),
        "10.0.0.1",
        ["ORDERS"],
        ["broker-a", "broker-b"],
    )
    last_costs = sends[3, "10.0.0.1@100", "broker-a"] + sends[3, "10.0.0.1@100", "broker-b"]
    assert latest.sends == len(last_costs) and latest.exceptions == 2
    assert_close(latest.p99_ms, exact(last_costs, 0.99))


def test_a_topic_merges_every_producer_group_that_sends_to_it():
    group_a, group_b = [1.0] * 90 + [500.0] * 8 + [900.0] * 2, [2.0] * 100
    store_producer_minutes(
        [
            report(0, "10.0.0.1@1", "broker-a", group_a, group="PID_A"),
            report(0, "10.0.0.2@2", "broker-a", group_b, group="PID_B"),
            report(0, "10.0.0.3@3", "broker-a", [1000.0] * 10, group="PID_C", topic="OTHER"),
        ]
    )
    latency = topic_latency(CLUSTER, "ORDERS", minute(0), minute(0))

    assert latency.total.sends == [(minute(0), 200)]
    assert latency.total.max == [(minute(0), 900.0)]
    assert_close(latency.total.p50[0][1], exact(group_a + group_b, 0.5))  # 2.0: rank 100 of 90 ones, 100 twos, ...
    assert_close(latency.total.p99[0][1], exact(group_a + group_b, 0.99))  # 900.0: rank 198

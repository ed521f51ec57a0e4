"""One known hour of minute data (``HOUR``, cluster ``CLUSTER``), stored as the collector and the producer-report
ingestion store it, with the figures its rollups must have worked out by hand in the tests."""

import datetime as dt

from stats.histogram import Histogram
from stats.models import BrokerMinute, ClusterMinute, ConsumeMinute, ServerSample, TopicMinute
from stats.models.producers import ProducerMinute

HOUR = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
CLUSTER = 3
NOT_COLLECTED = {15, 16}  # the collection did not run: a gap for every entity
BROKER_DOWN = 30  # broker-a did not answer: the cluster's totals and its own figures are NULL
ORDERS_IDLE = 5  # orders stored nothing: no row of its own (a zero)
HOST = "10.0.0.1"


def minute(n: int) -> dt.datetime:
    return HOUR + dt.timedelta(minutes=n)


def collected() -> list[int]:
    return [n for n in range(60) if n not in NOT_COLLECTED]


def latencies(client: str, broker: str, n: int) -> list[float]:
    """The send latencies (ms) a client recorded through a broker in minute n: spread over three decades, so the
    percentiles of a merge differ from any average of per-minute percentiles."""
    base = 1.0 if client == "c1" else 25.0
    slow = 3.0 if broker == "broker-b" else 1.0
    return [base * slow * (1 + (n * 7 + i * 13) % 40) / 4 for i in range(10 + n)]


def histogram(client: str, broker: str, n: int) -> Histogram:
    recorded = Histogram()
    for value in latencies(client, broker, n):
        recorded.record(value)
    return recorded


PRODUCER_MINUTES = range(12)
PRODUCERS = [(client, broker) for client in ("c1", "c2") for broker in ("broker-a", "broker-b")]


def exceptions(client: str, broker: str, n: int) -> dict[str, int]:
    if client == "c2" and broker == "broker-b" and n % 3 == 0:
        return {"RemotingTimeoutException": 2, "MQBrokerException": 1}
    return {}


def store_hour(cluster_id: int = CLUSTER, hour: dt.datetime = HOUR) -> None:
    def at(n: int) -> dt.datetime:
        return hour + dt.timedelta(minutes=n)

    clusters, brokers, topics, consumes = [], [], [], []
    for n in collected():
        down = n == BROKER_DOWN
        clusters.append(
            ClusterMinute(
                cluster_id=cluster_id,
                minute=at(n),
                put_nums=None if down else 1000 + n,
                put_size=None if down else 5000,
                get_nums=None if down else 900,
                get_size=None if down else 4000,
                brokers=1,
                brokers_down=1 if down else 0,
            )
        )
        brokers.append(
            BrokerMinute(
                cluster_id=cluster_id,
                broker_name="broker-a",
                broker_id=0,
                minute=at(n),
                up=not down,
                put_nums=None if down else 1000 + n,
                put_size=None if down else 5000,
                get_nums=None if down else 900,
                get_size=None if down else 4000,
            )
        )
        if n != ORDERS_IDLE:
            topics.append(
                TopicMinute(
                    cluster_id=cluster_id,
                    topic="orders",
                    minute=at(n),
                    put_nums=None if down else 10,
                    put_size=None if down else 1000,
                )
            )
        if n < 10:
            topics.append(TopicMinute(cluster_id=cluster_id, topic="payments", minute=at(n), put_nums=n, put_size=n))
        if n < 30 or down:
            consumes.append(
                ConsumeMinute(
                    cluster_id=cluster_id,
                    group="billing",
                    topic="orders",
                    minute=at(n),
                    get_nums=None if down else 10,
                    get_size=None if down else 1000,
                    sndbck_nums=1 if n < 3 else 0,
                    lag=None if down else n,
                    lag_seconds=None if down else 2.0 * n,
                )
            )
    ClusterMinute.objects.bulk_create(clusters)
    BrokerMinute.objects.bulk_create(brokers)
    TopicMinute.objects.bulk_create(topics)
    ConsumeMinute.objects.bulk_create(consumes)
    ServerSample.objects.bulk_create(
        ServerSample(host=HOST, minute=at(n), cpu_percent=float(n), load1=n / 10, mem_total=8000, mem_used=1000 + n)
        for n in range(0, 60, 5)
    )
    ProducerMinute.objects.bulk_create(
        ProducerMinute(
            cluster_id=cluster_id,
            producer_group="checkout",
            topic="orders",
            client_id=client,
            client_addr="10.1.1.1",
            broker_name=broker,
            minute=at(n),
            count=10 + n,
            exception_count=sum(exceptions(client, broker, n).values()),
            exceptions=exceptions(client, broker, n),
            histogram=histogram(client, broker, n).to_dict(),
            max_ms=histogram(client, broker, n).max_ms,
            updated_at=at(n),
        )
        for n in PRODUCER_MINUTES
        for client, broker in PRODUCERS
    )


def _plain(value):
    if isinstance(value, float):
        return float(f"{value:.12g}")  # sums of floats added in another order differ in the last bits
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in sorted(value.items())}
    return value


def snapshot(*models) -> dict[str, list[tuple]]:
    """Every row of the models, without ids, sorted: what two runs must agree on."""
    from stats.models import ROLLUP_MODELS

    result = {}
    for model in models or ROLLUP_MODELS:
        names = [field.name for field in model._meta.concrete_fields if field.name != "id"]
        rows = [tuple(_plain(value) for value in row) for row in model.objects.values_list(*names)]
        result[model.__name__] = sorted(rows, key=repr)
    return result

"""Traffic profiles: which topics and groups an operator would create, and which clients then run.

Each profile is one situation a RocketMQ monitor must recognise, played by real C++ clients (see
:mod:`monitor.sandbox.traffic.worker`): steady traffic following a daily curve, a consumer that falls behind, one
whose callback hangs, one that fails messages until they go through %RETRY% to %DLQ%, a producer whose sends the
broker refuses, and a consumer so far behind that the master sends it to the slave. ``demo`` mixes them over a
few topics and groups, the way several applications share a cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

# A topic no application may send to (TopicValidator's not-allowed-send set): a 4.9.4 broker answers every send
# with NO_PERMISSION, so the C++ client's send_sync raises after its retries. It stands for any producer whose
# sends a broker refuses, without changing the cluster for everyone else. (The C++ client reports a send that
# failed on every retry as "No route info of this topic"; the broker's remark is in its log.)
FORBIDDEN_TOPIC = "SELF_TEST_TOPIC"
QUEUES_PER_MASTER = 4
# Messages a failing group retries before they go to its DLQ (4.9.4's default is 16, hours with real delays).
FAILING_RETRY_MAX_TIMES = 2
DEFAULT_RETRY_MAX_TIMES = 16


@dataclass(frozen=True)
class TrafficOptions:
    """``rate``: mean messages per second of a profile's main producer (the daily curve swings ``amplitude`` of
    it either way); ``day_seconds``: how long one day of the curve lasts (86400 follows the clock; less shows the
    whole curve in a short demo); ``backlog``: messages the slave-reading profiles write before pacing, so their
    consumer starts far enough behind to be sent to the slave."""

    rate: float = 10.0
    amplitude: float = 0.5
    day_seconds: float = 86400.0
    backlog: int = 500
    status_interval: float = 1.0

    def __post_init__(self):
        if not self.rate > 0:
            raise ValueError("rate must be positive")
        if not 0 <= self.amplitude <= 1:
            raise ValueError("amplitude must be between 0 and 1")
        if not self.day_seconds > 0:
            raise ValueError("day_seconds must be positive")
        if self.backlog < 0:
            raise ValueError("backlog must not be negative")


@dataclass
class Plan:
    """What a profile needs: topics (queue count on every master), subscription groups (retry max times), and
    the clients to run (worker specs without the cluster-specific fields the runner adds)."""

    topics: dict[str, int] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)
    clients: list[dict] = field(default_factory=list)
    needs_slaves: bool = False

    def __add__(self, other: Plan) -> Plan:
        return Plan(
            topics={**self.topics, **other.topics},
            groups={**self.groups, **other.groups},
            clients=self.clients + other.clients,
            needs_slaves=self.needs_slaves or other.needs_slaves,
        )


def producer(group: str, topic: str, rate: float, options: TrafficOptions, **extra) -> dict:
    return {
        "name": f"producer {group}",
        "role": "producer",
        "group": group,
        "topic": topic,
        "rate": rate,
        "amplitude": options.amplitude,
        "day_seconds": options.day_seconds,
        "body_bytes": 512,
        **extra,
    }


def consumer(group: str, topic: str, **extra) -> dict:
    return {"name": f"consumer {group}", "role": "consumer", "group": group, "topic": topic, "threads": 2, **extra}


def _fed(topic: str, producer_group: str, rate: float, options: TrafficOptions, **extra) -> Plan:
    """A topic with a producer on the daily curve."""
    return Plan(topics={topic: QUEUES_PER_MASTER}, clients=[producer(producer_group, topic, rate, options, **extra)])


def _group(group: str, topic: str, retry_max_times: int = DEFAULT_RETRY_MAX_TIMES, **extra) -> Plan:
    return Plan(groups={group: retry_max_times}, clients=[consumer(group, topic, **extra)])


def _slow(rate: float) -> dict:
    """A single-threaded callback that keeps up with a quarter of ``rate``."""
    return {"threads": 1, "delay": 4 / rate}


def steady(options: TrafficOptions) -> Plan:
    """A producer following the daily curve and a consumer that keeps up."""
    return _fed("TopicSteady", "pg_steady", options.rate, options) + _group("cg_steady", "TopicSteady")


def lagging_consumer(options: TrafficOptions) -> Plan:
    """A consumer whose callback is slow: it consumes a quarter of what is produced, so its lag keeps growing."""
    return _fed("TopicLagging", "pg_lagging", options.rate, options) + _group(
        "cg_lagging", "TopicLagging", **_slow(options.rate)
    )


def blocking_consumer(options: TrafficOptions) -> Plan:
    """A consumer whose callback never returns for about one message in ten: once both its threads are stuck it
    consumes nothing more, though it stays connected and keeps sending heartbeats, like a hung application."""
    return _fed("TopicBlocking", "pg_blocking", options.rate, options) + _group(
        "cg_blocking", "TopicBlocking", block_every=10
    )


def failing_consumer(options: TrafficOptions) -> Plan:
    """A consumer that answers RECONSUME_LATER for about one message in five, every time it sees it: those come
    back through %RETRY%cg_failing and, after FAILING_RETRY_MAX_TIMES retries, land in %DLQ%cg_failing."""
    return _fed("TopicFailing", "pg_failing", options.rate, options) + _group(
        "cg_failing", "TopicFailing", FAILING_RETRY_MAX_TIMES, fail_every=5
    )


def failing_producer(options: TrafficOptions) -> Plan:
    """A producer sending to a topic it is not allowed to: every send raises (the broker refuses it). It does not
    report to a portal (``"report": False``): no producer group can be registered for a system topic."""
    return Plan(clients=[producer("pg_forbidden", FORBIDDEN_TOPIC, max(options.rate / 5, 0.5), options, report=False)])


def slave_reader(options: TrafficOptions) -> Plan:
    """A slow consumer that starts a backlog behind: pulls that far behind are sent to the slave by the master
    (suggestWhichBrokerId), as long as the lag in commit-log bytes exceeds the brokers' suggest threshold."""
    plan = _fed("TopicSlaveRead", "pg_slave_read", options.rate, options, backlog=options.backlog, body_bytes=1024)
    plan += _group("cg_slave_reader", "TopicSlaveRead", **_slow(options.rate))
    plan.needs_slaves = True
    return plan


def demo(options: TrafficOptions) -> Plan:
    """Two applications and a broken one: orders (a backlog, then the daily curve) read by a fulfilment group
    that keeps up and an audit group that falls behind (and, on a cluster with slaves, reads from them);
    payments, read by a group that fails some and a notification group that hangs; and a misconfigured producer
    whose every send is refused."""
    rate = options.rate
    return (
        _fed("TopicOrders", "pg_orders", rate, options, backlog=options.backlog, body_bytes=1024)
        + _group("cg_orders_fulfil", "TopicOrders")
        + _group("cg_orders_audit", "TopicOrders", **_slow(rate))
        + _fed("TopicPayments", "pg_payments", rate / 2, options)
        + _group("cg_payments_ledger", "TopicPayments", FAILING_RETRY_MAX_TIMES, fail_every=5)
        + _group("cg_payments_notify", "TopicPayments", block_every=10)
        + failing_producer(options)
    )


PROFILES: dict[str, Callable[[TrafficOptions], Plan]] = {
    "steady": steady,
    "lagging-consumer": lagging_consumer,
    "blocking-consumer": blocking_consumer,
    "failing-consumer": failing_consumer,
    "failing-producer": failing_producer,
    "slave-reader": slave_reader,
    "demo": demo,
}


def plan_for(profile: str, options: TrafficOptions | None = None) -> Plan:
    try:
        build = PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown traffic profile {profile!r} (known: {', '.join(PROFILES)})") from None
    return build(options or TrafficOptions())

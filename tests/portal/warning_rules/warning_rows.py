"""Building stored stats for the warning-rule tests: minutes of a cluster written through the stats store
(:func:`stats.store.traffic.store_minute`, :func:`stats.store.health.store_probes`, ...), as the collector writes
them, and thresholds set through the thresholds service as an admin or owner would."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model

from portal.services.warnings.thresholds import set_default, set_override
from stats.models import (
    BlockedQueueMinute,
    ClientMinute,
    ClusterMinute,
    ConsumeMinute,
    GroupMinute,
    OffsetMovedEvent,
    QueueLagMinute,
    TopicMinute,
)
from stats.store.traffic import MinuteSamples, store_minute

T = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
NOW = T + dt.timedelta(seconds=20)


def minutes_before(at: dt.datetime, n: int) -> dt.datetime:
    return at - dt.timedelta(minutes=n)


def admin_user():
    user, _ = get_user_model().objects.get_or_create(username="rules-admin", defaults={"is_staff": True})
    return user


def default_threshold(kind: str, **params) -> None:
    set_default(kind, params, by=admin_user())


def override_threshold(kind: str, entry, **params) -> None:
    set_override(kind, entry, params, by=admin_user())


@dataclass
class Minute:
    """One collected minute of ``cluster_id``; add rows with the methods, then :meth:`store` it."""

    cluster_id: int
    at: dt.datetime
    samples: MinuteSamples = field(init=False)

    def __post_init__(self):
        self.samples = MinuteSamples(cluster=ClusterMinute(cluster_id=self.cluster_id, minute=self.at))

    def consume(self, group, topic, *, lag=0, lag_seconds=0.0, get_nums=0, sndbck=0) -> Minute:
        """``lag`` None: not read (a master down, as the minute's ClusterMinute then says)."""
        if lag is None:
            self.samples.cluster.brokers_down = 1
        self.samples.consumes.append(
            ConsumeMinute(
                cluster_id=self.cluster_id,
                group=group,
                topic=topic,
                minute=self.at,
                get_nums=get_nums,
                get_size=None if get_nums is None else get_nums * 100,
                slave_get_nums=0,
                consume_tps=None if get_nums is None else get_nums / 60,
                sndbck_nums=sndbck,
                lag=lag,
                lag_seconds=lag_seconds,
            )
        )
        return self

    def queue(self, group, topic, broker_name, queue_id, *, broker_offset, consumer_offset, client_id="") -> Minute:
        self.samples.queue_lags.append(
            QueueLagMinute(
                cluster_id=self.cluster_id,
                group=group,
                topic=topic,
                broker_name=broker_name,
                queue_id=queue_id,
                minute=self.at,
                broker_offset=broker_offset,
                consumer_offset=consumer_offset,
                lag=broker_offset - consumer_offset,
                client_id=client_id,
            )
        )
        return self

    def group(
        self, group, *, clients=1, model="CLUSTERING", consistent=True, blocked=0, dlq_nums=0, dlq_total=0
    ) -> Minute:
        self.samples.groups.append(
            GroupMinute(
                cluster_id=self.cluster_id,
                group=group,
                minute=self.at,
                clients=clients,
                message_model=model,
                consume_type="CONSUME_PASSIVELY",
                subscription_consistent=consistent,
                blocked_queues=blocked,
                dlq_nums=dlq_nums,
                dlq_total=dlq_total,
            )
        )
        return self

    def client(self, group, client_id, subscription) -> Minute:
        self.samples.clients.append(
            ClientMinute(
                cluster_id=self.cluster_id,
                group=group,
                client_id=client_id,
                minute=self.at,
                address=client_id.partition("@")[0] + ":50000",
                language="CPP",
                version=401,
                subscription=subscription,
            )
        )
        return self

    def blocked(self, group, topic, broker_name, queue_id, client_id, *, since, cached=32, lag=100) -> Minute:
        self.samples.blocked.append(
            BlockedQueueMinute(
                cluster_id=self.cluster_id,
                group=group,
                topic=topic,
                broker_name=broker_name,
                queue_id=queue_id,
                client_id=client_id,
                minute=self.at,
                last_consumed_at=since,
                cached_messages=cached,
                lag=lag,
            )
        )
        return self

    def topic(self, topic, put_nums) -> Minute:
        """``put_nums`` None: not read (a master down, as the minute's ClusterMinute then says)."""
        if put_nums is None:
            self.samples.cluster.brokers_down = 1
        self.samples.topics.append(
            TopicMinute(
                cluster_id=self.cluster_id,
                topic=topic,
                minute=self.at,
                put_nums=put_nums,
                put_size=None if put_nums is None else put_nums * 100,
            )
        )
        return self

    def offset_moved(self, group, topic, *, at, queue_offset, requested, new) -> Minute:
        self.samples.events.append(
            OffsetMovedEvent(
                cluster_id=self.cluster_id,
                broker_name="broker-a",
                queue_id=0,
                queue_offset=queue_offset,
                stored_at=at,
                group=group,
                topic=topic,
                event_broker_name="broker-a",
                event_queue_id=1,
                offset_request=requested,
                offset_new=new,
            )
        )
        return self

    def store(self) -> None:
        store_minute(self.samples)


def collected(cluster_id: int, *moments: dt.datetime) -> None:
    """Minutes collected with nothing to report."""
    for moment in moments:
        Minute(cluster_id, moment).store()

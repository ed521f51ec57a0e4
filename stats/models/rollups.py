"""Rollups of the minute data: 10-minute, hourly and daily aggregates written by the Spark jobs (``sparkjobs``).

Each row covers one window of its ``resolution`` starting at ``start`` (UTC; days are UTC days) and is keyed like
the minute data it sums (plain RocketMQ-named columns, no foreign keys). The jobs replace a window's rows as a
whole in one transaction (``sparkjobs/load.py``), so a window re-run never doubles anything.

The minute rules (:mod:`stats.models.traffic`) carry over: an entity without a minute row in a collected minute
had nothing to report and counts as zero; a NULL minute value is unknown and is left out of sums and averages
(averages are over the known minutes, zeros included). ``minutes`` on a row says how much of its window it covers:
for topics and consumer groups the minutes their cluster was collected in; for brokers their own rows; for the
cluster its complete minutes; for servers the samples read; for producers the minutes with a report. A window
without any data has no rows: a missing window is a gap.
"""

import datetime as dt

from django.db import models
from django.utils.translation import gettext_lazy as _


class Resolution(models.TextChoices):
    TEN_MINUTES = "10m", _("10 minutes")
    HOUR = "1h", _("1 hour")
    DAY = "1d", _("1 day")


RESOLUTION_LENGTH = {
    Resolution.TEN_MINUTES: dt.timedelta(minutes=10),
    Resolution.HOUR: dt.timedelta(hours=1),
    Resolution.DAY: dt.timedelta(days=1),
}


class Rollup(models.Model):
    resolution = models.CharField(max_length=3, choices=Resolution.choices)
    start = models.DateTimeField()
    minutes = models.IntegerField()

    class Meta:
        abstract = True

    @property
    def end(self) -> dt.datetime:
        return self.start + RESOLUTION_LENGTH[Resolution(self.resolution)]


class TopicRollup(Rollup):
    """A topic's production (TopicMinute summed)."""

    cluster_id = models.IntegerField()
    topic = models.CharField(max_length=255)
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "topic", "resolution", "start"], name="topicrollup_unique")
        ]
        indexes = [models.Index(fields=["resolution", "start"], name="topicrollup_window")]

    def __str__(self) -> str:
        return f"{self.topic} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


class ConsumeRollup(Rollup):
    """A consumer group's consumption of one topic (ConsumeMinute): messages served, sent back (failures), and its
    lag: the largest and the average (messages, and seconds the oldest waiting message had waited)."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)
    sndbck_nums = models.BigIntegerField(null=True)
    lag_max = models.BigIntegerField(null=True)
    lag_avg = models.FloatField(null=True)
    lag_seconds_max = models.FloatField(null=True)
    lag_seconds_avg = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "group", "topic", "resolution", "start"], name="consumerollup_unique"
            )
        ]
        indexes = [models.Index(fields=["resolution", "start"], name="consumerollup_window")]

    def __str__(self) -> str:
        return f"{self.group} on {self.topic} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


class BrokerRollup(Rollup):
    """One broker's traffic (BrokerMinute); ``minutes_down`` counts the minutes it did not answer."""

    cluster_id = models.IntegerField()
    broker_name = models.CharField(max_length=255)
    broker_id = models.IntegerField()
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)
    minutes_down = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "broker_name", "broker_id", "resolution", "start"], name="brokerrollup_unique"
            )
        ]
        indexes = [models.Index(fields=["resolution", "start"], name="brokerrollup_window")]

    def __str__(self) -> str:
        return f"{self.broker_name}:{self.broker_id} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


class ClusterRollup(Rollup):
    """A cluster's traffic (ClusterMinute). ``minutes`` counts the minutes with complete totals;
    ``collected_minutes`` every collected minute, and ``minutes_incomplete`` those where a broker was down."""

    cluster_id = models.IntegerField()
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)
    collected_minutes = models.IntegerField()
    minutes_incomplete = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "resolution", "start"], name="clusterrollup_unique")
        ]
        indexes = [models.Index(fields=["resolution", "start"], name="clusterrollup_window")]

    def __str__(self) -> str:
        return f"cluster {self.cluster_id} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


class ServerRollup(Rollup):
    """A broker host's server stats (ServerSample, five-minute slots): averages and peaks. ``minutes`` here counts
    the slots with a reading."""

    host = models.CharField(max_length=255)
    cpu_percent_avg = models.FloatField(null=True)
    cpu_percent_max = models.FloatField(null=True)
    cpu_iowait_percent_avg = models.FloatField(null=True)
    load1_avg = models.FloatField(null=True)
    load1_max = models.FloatField(null=True)
    mem_total = models.BigIntegerField(null=True)
    mem_used_avg = models.FloatField(null=True)
    mem_used_max = models.BigIntegerField(null=True)
    swap_used_max = models.BigIntegerField(null=True)
    net_in_bytes_per_s_avg = models.FloatField(null=True)
    net_in_bytes_per_s_max = models.FloatField(null=True)
    net_out_bytes_per_s_avg = models.FloatField(null=True)
    net_out_bytes_per_s_max = models.FloatField(null=True)
    disk_read_bytes_per_s_avg = models.FloatField(null=True)
    disk_write_bytes_per_s_avg = models.FloatField(null=True)
    disk_busy_percent_avg = models.FloatField(null=True)
    disk_busy_percent_max = models.FloatField(null=True)
    tcp_established_avg = models.FloatField(null=True)
    tcp_established_max = models.IntegerField(null=True)
    tcp_time_wait_max = models.IntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "resolution", "start"], name="serverrollup_unique")]
        indexes = [models.Index(fields=["resolution", "start"], name="serverrollup_window")]

    def __str__(self) -> str:
        return f"{self.host} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


class ProducerLatencyRollup(Rollup):
    """Send latency and failures of producers (ProducerMinute), with the SDK's histograms merged exactly (counts
    added per bucket) and the percentiles computed from the merged histogram, never averaged.

    A blank key column means "all": rows are kept at these grains (see ``LATENCY_GRAINS``): a producer group over
    all its topics, clients and brokers; a group on one topic; a topic over all its producer groups; a group per
    broker; a group per client. ``minutes`` counts the minutes with at least one report."""

    cluster_id = models.IntegerField()
    producer_group = models.CharField(max_length=255, blank=True)
    topic = models.CharField(max_length=255, blank=True)
    client_id = models.CharField(max_length=255, blank=True)
    broker_name = models.CharField(max_length=255, blank=True)
    count = models.BigIntegerField()
    exception_count = models.BigIntegerField()
    exceptions = models.JSONField(default=dict)
    histogram = models.JSONField()
    p50_ms = models.FloatField(null=True)
    p90_ms = models.FloatField(null=True)
    p99_ms = models.FloatField(null=True)
    max_ms = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "producer_group", "topic", "client_id", "broker_name", "resolution", "start"],
                name="producerlatencyrollup_unique",
            )
        ]
        indexes = [models.Index(fields=["resolution", "start"], name="producerlatencyrollup_window")]

    def __str__(self) -> str:
        who = self.producer_group or "*"
        return f"{who} on {self.topic or '*'} {self.resolution} {self.start:%Y-%m-%d %H:%M}"


# The key columns each ProducerLatencyRollup grain keeps (the others are blank, meaning "all").
LATENCY_GRAINS: dict[str, tuple[str, ...]] = {
    "group": ("producer_group",),
    "group_topic": ("producer_group", "topic"),
    "topic": ("topic",),
    "group_broker": ("producer_group", "broker_name"),
    "group_client": ("producer_group", "client_id"),
}

ROLLUP_MODELS = (TopicRollup, ConsumeRollup, BrokerRollup, ClusterRollup, ServerRollup, ProducerLatencyRollup)

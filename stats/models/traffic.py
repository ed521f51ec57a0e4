"""Per-minute traffic, consumer progress and client health of a cluster, as the collector reads them.

Every row is keyed by plain columns named as RocketMQ names things (``cluster_id`` is the portal Cluster's id) and
by ``minute``: the UTC minute the collection ran in. Traffic figures are the brokers' own last-minute windows at
that moment (BrokerStatsManager's ``statsMinute``), so a row holds about the sixty seconds before its minute's
collection. Each table is unique on (entity..., minute) and written with an upsert, so a minute collected twice
holds one row per entity.

What a row's absence means: a minute the cluster was collected in has a :class:`ClusterMinute` row; an entity
with nothing to report that minute (no traffic, no lag, no client) has no row of its own, and reads as zero. A
value that could not be read (its broker was down) is NULL: a gap, never 0. Readers in :mod:`stats.queries.traffic`
apply these rules.
"""

from django.db import models


class ClusterMinute(models.Model):
    """One collection of a cluster: its totals over every broker, and how the collection went. The totals are NULL
    when a broker could not be read (a partial sum would look like a drop in traffic)."""

    cluster_id = models.IntegerField()
    minute = models.DateTimeField()
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)
    brokers = models.IntegerField(default=0)
    brokers_down = models.IntegerField(default=0)
    requests = models.IntegerField(default=0)
    seconds = models.FloatField(null=True)
    # True for a minute ``manage.py demo`` generated (its week of history), never measured: charts and the API
    # label it, and a measured minute replaces it whole (stats.store.traffic.store_minute). Every row of the other
    # minute tables belongs to its cluster's minute, so this one flag labels them all.
    demo_history = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster_id", "minute"], name="clusterminute_unique")]
        indexes = [models.Index(fields=["minute"], name="clusterminute_minute")]

    def __str__(self) -> str:
        return f"cluster {self.cluster_id} {self.minute:%Y-%m-%d %H:%M}"


class BrokerMinute(models.Model):
    """One broker's totals: what its masters stored (put) and what it served to consumers (get), summed over its
    stats keys. ``up`` is whether it answered; when it did not, the figures are NULL. Slaves store nothing of their
    own, so their put figures are NULL."""

    cluster_id = models.IntegerField()
    broker_name = models.CharField(max_length=255)
    broker_id = models.IntegerField()
    minute = models.DateTimeField()
    up = models.BooleanField()
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "broker_name", "broker_id", "minute"], name="brokerminute_unique"
            )
        ]
        indexes = [models.Index(fields=["minute"], name="brokerminute_minute")]

    def __str__(self) -> str:
        return f"{self.broker_name}:{self.broker_id} {self.minute:%Y-%m-%d %H:%M}"


class TopicMinute(models.Model):
    """A topic's production: TOPIC_PUT_NUMS and TOPIC_PUT_SIZE summed over the masters that hold it."""

    cluster_id = models.IntegerField()
    topic = models.CharField(max_length=255)
    minute = models.DateTimeField()
    put_nums = models.BigIntegerField(null=True)
    put_size = models.BigIntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster_id", "topic", "minute"], name="topicminute_unique")]
        indexes = [models.Index(fields=["minute"], name="topicminute_minute")]

    def __str__(self) -> str:
        return f"{self.topic} {self.minute:%Y-%m-%d %H:%M}"


class ConsumeMinute(models.Model):
    """A consumer group's consumption of one topic (its retry topic is a topic of its own) and its progress.

    ``get_nums``/``get_size`` are GROUP_GET_NUMS/GROUP_GET_SIZE summed over every broker, master AND slave: a
    consumer far behind is sent to the slave, whose counts the master never sees; ``slave_get_nums`` is the
    slaves' part. ``consume_tps`` is the brokers' per-second rate of the same window, summed likewise.
    ``sndbck_nums`` counts messages the group sent back (SNDBCK_PUT_NUMS: retries, and dead letters once retried
    enough). ``lag`` is the messages stored but not yet consumed; ``lag_seconds`` how long the oldest of them has
    waited, measured from the store time of the last message consumed in each lagging queue (0 without lag, NULL
    when unknown: nothing consumed yet, or a broadcasting group, whose progress lives in its clients)."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    minute = models.DateTimeField()
    get_nums = models.BigIntegerField(null=True)
    get_size = models.BigIntegerField(null=True)
    slave_get_nums = models.BigIntegerField(null=True)
    consume_tps = models.FloatField(null=True)
    sndbck_nums = models.BigIntegerField(null=True)
    lag = models.BigIntegerField(null=True)
    lag_seconds = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "group", "topic", "minute"], name="consumeminute_unique")
        ]
        indexes = [models.Index(fields=["minute"], name="consumeminute_minute")]

    def __str__(self) -> str:
        return f"{self.group} on {self.topic} {self.minute:%Y-%m-%d %H:%M}"


class QueueLagMinute(models.Model):
    """One queue a group is behind on (queues without lag are not stored: the history stays as small as the
    trouble). For a broadcasting group the row is its furthest-behind client's, named in ``client_id`` (every
    client's own is in :class:`ClientQueueLagMinute`)."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    broker_name = models.CharField(max_length=255)
    queue_id = models.IntegerField()
    minute = models.DateTimeField()
    broker_offset = models.BigIntegerField()
    consumer_offset = models.BigIntegerField()
    lag = models.BigIntegerField()
    last_consumed_stored_at = models.DateTimeField(null=True)
    client_id = models.CharField(max_length=255, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "group", "topic", "broker_name", "queue_id", "minute"],
                name="queuelagminute_unique",
            )
        ]
        indexes = [models.Index(fields=["minute"], name="queuelagminute_minute")]

    def __str__(self) -> str:
        return f"{self.group} on {self.topic}/{self.broker_name}/{self.queue_id} {self.minute:%Y-%m-%d %H:%M}"


class ClientQueueLagMinute(models.Model):
    """One queue one client of a broadcasting group is behind on, by the client's own account: broadcasting
    consumers keep their offsets themselves, so every client has a lag of its own (:class:`QueueLagMinute` keeps, per
    queue, only the furthest-behind client's). Queues a client is not behind on are not stored: an online client
    that answered (:class:`ClientMinute` without ``error``) and has no row for a topic it subscribes to is not
    behind on it."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    broker_name = models.CharField(max_length=255)
    queue_id = models.IntegerField()
    client_id = models.CharField(max_length=255)
    minute = models.DateTimeField()
    broker_offset = models.BigIntegerField()
    consumer_offset = models.BigIntegerField()
    lag = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "group", "topic", "broker_name", "queue_id", "client_id", "minute"],
                name="clientqueuelagminute_unique",
            )
        ]
        indexes = [
            models.Index(fields=["minute"], name="clientqueuelagminute_minute"),
            models.Index(fields=["cluster_id", "group", "minute"], name="clientqueuelagminute_group"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.client_id} of {self.group} on {self.topic}/{self.broker_name}/{self.queue_id} "
            f"{self.minute:%Y-%m-%d %H:%M}"
        )


class GroupMinute(models.Model):
    """A consumer group's health: its online clients, whether they all subscribe alike, how many queues they are
    stuck on, and its dead letters (``dlq_nums`` new this minute, ``dlq_total`` ever). Stored for groups that are
    online or dead-lettered something; ``subscription_consistent`` and ``blocked_queues`` are NULL when the
    clients could not be asked."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    minute = models.DateTimeField()
    clients = models.IntegerField(null=True)
    message_model = models.CharField(max_length=32, blank=True)
    consume_type = models.CharField(max_length=32, blank=True)  # CONSUME_PASSIVELY is 17 characters
    subscription_consistent = models.BooleanField(null=True)
    blocked_queues = models.IntegerField(null=True)
    dlq_nums = models.BigIntegerField(null=True)
    dlq_total = models.BigIntegerField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster_id", "group", "minute"], name="groupminute_unique")]
        indexes = [models.Index(fields=["minute"], name="groupminute_minute")]

    def __str__(self) -> str:
        return f"{self.group} {self.minute:%Y-%m-%d %H:%M}"


class ClientMinute(models.Model):
    """One online consumer client of a group: its connection as the broker sees it, and the subscription it
    reports itself (``{topic: expression}``; empty when it did not answer) with each expression's type
    (``expression_types``, ``{topic: "TAG" | "SQL92"}``; empty in rows collected before it was kept)."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255)
    minute = models.DateTimeField()
    address = models.CharField(max_length=255)
    language = models.CharField(max_length=16, blank=True)
    version = models.IntegerField(null=True)
    subscription = models.JSONField(default=dict)
    expression_types = models.JSONField(default=dict)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "group", "client_id", "minute"], name="clientminute_unique")
        ]
        indexes = [models.Index(fields=["minute"], name="clientminute_minute")]

    def __str__(self) -> str:
        return f"{self.client_id} of {self.group} {self.minute:%Y-%m-%d %H:%M}"


class BlockedQueueMinute(models.Model):
    """A queue whose client has consumed nothing for longer than the threshold while messages wait for it
    (from the client's own running info)."""

    cluster_id = models.IntegerField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    broker_name = models.CharField(max_length=255)
    queue_id = models.IntegerField()
    client_id = models.CharField(max_length=255)
    minute = models.DateTimeField()
    last_consumed_at = models.DateTimeField(null=True)
    cached_messages = models.IntegerField()
    lag = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "group", "topic", "broker_name", "queue_id", "client_id", "minute"],
                name="blockedqueueminute_unique",
            )
        ]
        indexes = [models.Index(fields=["minute"], name="blockedqueueminute_minute")]

    def __str__(self) -> str:
        return f"{self.group} on {self.topic}/{self.broker_name}/{self.queue_id} {self.minute:%Y-%m-%d %H:%M}"


class OffsetMovedEvent(models.Model):
    """A consumer asked a broker for an offset outside a queue and was moved (RocketMQ writes one message per
    event to OFFSET_MOVED_EVENT). Keyed by where the event message itself is stored, so each is kept once."""

    cluster_id = models.IntegerField()
    broker_name = models.CharField(max_length=255)
    queue_id = models.IntegerField()
    queue_offset = models.BigIntegerField()
    stored_at = models.DateTimeField()
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    event_broker_name = models.CharField(max_length=255)
    event_queue_id = models.IntegerField()
    offset_request = models.BigIntegerField()
    offset_new = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "broker_name", "queue_id", "queue_offset"], name="offsetmovedevent_unique"
            )
        ]
        indexes = [models.Index(fields=["stored_at"], name="offsetmovedevent_stored_at")]

    def __str__(self) -> str:
        return f"{self.group} moved on {self.topic}/{self.event_broker_name}/{self.event_queue_id}"

"""What consumers report about their own consumption (the SDK's listener container in ``monitor/sdk``): per client,
consumer group and topic, one row a minute with the messages handed to the application's listener, how many of
them failed (by exception class), and the consume-time histogram (:mod:`stats.histogram`'s serialized form, the
same mergeable histogram producers report).

Like :class:`stats.models.ProducerMinute`, these rows come from the clients: a minute without a row means nobody
reported consumption then, and a report sent again replaces its row (unique on (cluster_id, consumer_group, topic,
client_id, minute), written with an upsert by :mod:`stats.store.consumers`).
"""

from django.db import models


class ConsumerClientMinute(models.Model):
    """One client's consumption of one topic in one minute. ``count`` is every message its listener was called
    with, failed ones included; ``failures`` maps exception class names to how many failed with each
    (``failure_count`` is their sum); ``histogram`` holds the listener's consume time; ``max_ms`` its maximum."""

    cluster_id = models.IntegerField()
    consumer_group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255)
    client_addr = models.CharField(max_length=64)
    minute = models.DateTimeField()
    count = models.BigIntegerField()
    failure_count = models.BigIntegerField()
    failures = models.JSONField(default=dict)
    histogram = models.JSONField()
    max_ms = models.FloatField(null=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "consumer_group", "topic", "client_id", "minute"],
                name="consumerclientminute_unique",
            )
        ]
        indexes = [
            models.Index(fields=["minute"], name="consumerclientminute_minute"),
            models.Index(fields=["cluster_id", "consumer_group", "minute"], name="consumerclientminute_group"),
        ]

    def __str__(self) -> str:
        return f"{self.client_id} of {self.consumer_group} on {self.topic} {self.minute:%Y-%m-%d %H:%M}"

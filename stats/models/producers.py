"""What producers report about their own sends (the SDK in ``monitor/sdk``): per client, producer group, topic and
target broker, one row a minute with the number of sends, the exceptions by class, and the send-latency histogram
(:mod:`stats.histogram`'s serialized form).

Unlike the collected tables (:mod:`stats.models.traffic`), these rows come from the clients: a minute without a row
means nobody reported a send then, so readers show it as a gap, not as zero. A report sent again (the SDK retries
after a lost answer) replaces its row, never adds to it: rows are unique on (cluster_id, producer_group, topic,
client_id, broker_name, minute) and written with an upsert (:mod:`stats.store.producers`).
"""

from django.db import models


class ProducerMinute(models.Model):
    """One client's sends of one minute to one topic through one broker. ``count`` is every send, failed ones
    included; ``exceptions`` maps exception class names to how many sends failed with each (``exception_count``
    is their sum); ``histogram`` holds the latency of the sends; ``max_ms`` is its exact maximum, kept as a column
    so the slowest minutes can be found without reading histograms."""

    cluster_id = models.IntegerField()
    producer_group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255)
    client_addr = models.CharField(max_length=64)
    broker_name = models.CharField(max_length=255)
    minute = models.DateTimeField()
    count = models.BigIntegerField()
    exception_count = models.BigIntegerField()
    exceptions = models.JSONField(default=dict)
    histogram = models.JSONField()
    max_ms = models.FloatField(null=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "producer_group", "topic", "client_id", "broker_name", "minute"],
                name="producerminute_unique",
            )
        ]
        indexes = [
            models.Index(fields=["minute"], name="producerminute_minute"),
            models.Index(fields=["cluster_id", "producer_group", "minute"], name="producerminute_group"),
            models.Index(fields=["cluster_id", "topic", "minute"], name="producerminute_topic"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.client_id} of {self.producer_group} on {self.topic}/{self.broker_name} {self.minute:%Y-%m-%d %H:%M}"
        )

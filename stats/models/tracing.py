"""What SDK clients report about the message trace they write (``monitor/sdk/tracing.py``): per client, group and
topic, one row a minute with the trace records written to the cluster's trace topic, those dropped because the
client's trace buffer was full, and those the trace topic refused (the send of the trace message failed).

Producers and consumers both trace, and a producer group may share its name with a consumer group, so a row says
which ``role`` reported it. Like :class:`stats.models.ProducerMinute` these rows come from the clients' own
per-minute reports: a minute without a row means the client did not trace then. A report sent again replaces its
row (unique on (cluster_id, role, group, topic, client_id, minute), written with an upsert by
:mod:`stats.store.tracing`).
"""

from django.db import models

PRODUCER = "producer"
CONSUMER = "consumer"


class TraceClientMinute(models.Model):
    """One client's trace records of one minute for one topic: ``written`` reached the trace topic, ``dropped``
    never left the client (its buffer was full), ``failed`` were sent and refused or lost."""

    cluster_id = models.IntegerField()
    role = models.CharField(max_length=16)  # PRODUCER or CONSUMER: which kind of group ``group`` is
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255)
    client_addr = models.CharField(max_length=64)
    minute = models.DateTimeField()
    written = models.BigIntegerField()
    dropped = models.BigIntegerField()
    failed = models.BigIntegerField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "role", "group", "topic", "client_id", "minute"],
                name="traceclientminute_unique",
            )
        ]
        indexes = [
            models.Index(fields=["minute"], name="traceclientminute_minute"),
            models.Index(fields=["cluster_id", "topic", "minute"], name="traceclientminute_topic"),
        ]

    def __str__(self) -> str:
        return f"{self.client_id} of {self.role} {self.group} on {self.topic} {self.minute:%Y-%m-%d %H:%M}"

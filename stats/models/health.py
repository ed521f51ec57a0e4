"""Per-minute probes: is each name server and broker of a cluster answering, how fast, and what a broker reports
about itself. Keyed like the traffic samples (see :mod:`stats.models.traffic`); a probe that failed keeps its
error and has NULL figures."""

from django.db import models


class NameServerProbe(models.Model):
    """GET_NAMESRV_CONFIG to one name server. ``latency_ms`` is the answering attempt's; ``attempts`` how many it
    took (or were made, when none answered)."""

    cluster_id = models.IntegerField()
    address = models.CharField(max_length=255)
    minute = models.DateTimeField()
    ok = models.BooleanField()
    latency_ms = models.FloatField(null=True)
    attempts = models.IntegerField()
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster_id", "address", "minute"], name="nameserverprobe_unique")
        ]
        indexes = [models.Index(fields=["minute"], name="nameserverprobe_minute")]

    def __str__(self) -> str:
        return f"{self.address} {self.minute:%Y-%m-%d %H:%M} {'ok' if self.ok else 'down'}"


class BrokerProbe(models.Model):
    """GET_BROKER_RUNTIME_INFO to one broker, and what it answered. ``listed`` is whether the name servers list
    the broker (a stopped broker drops out of their tables at once; it is still probed, and shows as down). Rates
    are the broker's last-10-seconds figures; ``role`` is its brokerRole setting."""

    cluster_id = models.IntegerField()
    broker_name = models.CharField(max_length=255)
    broker_id = models.IntegerField()
    minute = models.DateTimeField()
    address = models.CharField(max_length=255)
    listed = models.BooleanField()
    ok = models.BooleanField()
    latency_ms = models.FloatField(null=True)
    attempts = models.IntegerField()
    error = models.TextField(blank=True)
    version = models.CharField(max_length=64, blank=True)
    role = models.CharField(max_length=16, blank=True)
    runtime_seconds = models.BigIntegerField(null=True)
    put_tps = models.FloatField(null=True)
    get_tps = models.FloatField(null=True)
    msg_put_total_today = models.BigIntegerField(null=True)
    msg_get_total_today = models.BigIntegerField(null=True)
    commit_log_disk_ratio = models.FloatField(null=True)
    consume_queue_disk_ratio = models.FloatField(null=True)
    dispatch_behind_bytes = models.BigIntegerField(null=True)
    # Where the broker's commit log ends: a slave's distance to its master's is how far its replication is behind.
    commit_log_max_offset = models.BigIntegerField(null=True)
    put_latency99_ms = models.FloatField(null=True)
    send_queue_size = models.IntegerField(null=True)
    pull_queue_size = models.IntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "broker_name", "broker_id", "minute"], name="brokerprobe_unique"
            )
        ]
        indexes = [models.Index(fields=["minute"], name="brokerprobe_minute")]

    def __str__(self) -> str:
        return f"{self.broker_name}:{self.broker_id} {self.minute:%Y-%m-%d %H:%M} {'ok' if self.ok else 'down'}"

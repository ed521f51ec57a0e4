"""Server stats of broker hosts, one sample per host every five minutes.

A host is keyed by the address its brokers are registered with (no foreign key: a host's history outlives the
registry). ``minute`` is the start of the five-minute slot (UTC) the sample was taken in, so a collection run twice
in one slot updates one row. A value that could not be read is NULL, never 0. ``error`` says why the slot's latest
attempt failed ("" when it succeeded); the values stay those of the slot's latest successful reading, so a host that
could not be read at all has a row with only ``error`` set.
"""

import datetime as dt

from django.db import models

SERVER_SLOT = dt.timedelta(minutes=5)


def slot_start(moment: dt.datetime) -> dt.datetime:
    """The start (UTC) of the five-minute slot ``moment`` falls in: the ``minute`` a sample taken then is kept under."""
    slot_seconds = int(SERVER_SLOT.total_seconds())
    timestamp = int(moment.timestamp())
    return dt.datetime.fromtimestamp(timestamp - timestamp % slot_seconds, tz=dt.UTC)


class ServerSample(models.Model):
    host = models.CharField(max_length=255)
    minute = models.DateTimeField()
    # Share of the sampled second the CPUs were busy (everything but idle and I/O wait), and waiting for I/O.
    cpu_percent = models.FloatField(null=True)
    cpu_iowait_percent = models.FloatField(null=True)
    load1 = models.FloatField(null=True)
    load5 = models.FloatField(null=True)
    load15 = models.FloatField(null=True)
    # Bytes. Used memory is total minus available (what the kernel could hand out without swapping).
    mem_total = models.BigIntegerField(null=True)
    mem_used = models.BigIntegerField(null=True)
    swap_total = models.BigIntegerField(null=True)
    swap_used = models.BigIntegerField(null=True)
    # Physical interfaces (all but loopback when every interface is virtual, as in a container).
    net_in_bytes_per_s = models.FloatField(null=True)
    net_out_bytes_per_s = models.FloatField(null=True)
    # Whole physical disks (partitions and virtual devices would count the same bytes twice); busy = the busiest
    # disk's share of the second with I/O in flight, iostat's %util.
    disk_read_bytes_per_s = models.FloatField(null=True)
    disk_write_bytes_per_s = models.FloatField(null=True)
    disk_busy_percent = models.FloatField(null=True)
    # TCP sockets: established connections, sockets in TIME_WAIT, and all of them (listening and closing included).
    tcp_established = models.IntegerField(null=True)
    tcp_time_wait = models.IntegerField(null=True)
    tcp_total = models.IntegerField(null=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["host", "minute"], name="serversample_unique_host_minute")]

    def __str__(self) -> str:
        return f"{self.host} {self.minute:%Y-%m-%d %H:%M}"


class ServerDiskSample(models.Model):
    """Use of one mounted local file system (``df``), in bytes."""

    host = models.CharField(max_length=255)
    minute = models.DateTimeField()
    mount = models.CharField(max_length=1024)
    size = models.BigIntegerField()
    used = models.BigIntegerField()
    available = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "minute", "mount"], name="serverdisksample_unique_mount")
        ]

    def __str__(self) -> str:
        return f"{self.host} {self.mount} {self.minute:%Y-%m-%d %H:%M}"

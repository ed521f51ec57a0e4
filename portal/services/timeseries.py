"""The time-series API's series: a topic's, consumer group's, broker's, cluster's or server's stored figures over a
range, at a step the caller picks, read through the very ``stats`` readers the chart pages draw from (the charts'
resolution when no step is asked), so a series reads the same on a chart and from the API.

A step is a resolution the data is kept at: the minute data (``1m``; a server's readings are five-minute slots,
``5m``) or a Spark rollup (``10m``, ``1h``, ``1d``; buckets the rollup jobs have not written yet are aggregated
from the minutes as the jobs would, :mod:`stats.queries.source`). Each point is at the start of its minute or
bucket, None where nothing was collected. What a bucket's value is (an average per collected minute, a peak) is
the chart's (:mod:`stats.queries.traffic`). The figures keep the readers' units (``Line.unit``).

A range is refused (ValidationError keyed by the parameter at fault) when it ends before it starts or would take
more than :data:`MAX_POINTS` points per line at its step, so one request's cost is bounded whatever is asked.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models import Broker, Cluster, ConsumerGroup, Subscription, Topic
from stats.charts import Point
from stats.models import SERVER_SLOT, Resolution
from stats.queries.servers import server_series
from stats.queries.source import resolution_for
from stats.queries.traffic import broker_traffic, cluster_traffic, group_traffic, topic_traffic
from stats.store.servers import SERVER_METRICS

MINUTE = dt.timedelta(minutes=1)
# A line has at most this many points: a week of minutes (10,080 and the end minute).
MAX_POINTS = 7 * 24 * 60 + 1
# The range asked for when ``from`` is not given: the charts' default hour.
DEFAULT_SPAN = dt.timedelta(hours=1)
ROLLUPS = {
    Resolution.TEN_MINUTES: dt.timedelta(minutes=10),
    Resolution.HOUR: dt.timedelta(hours=1),
    Resolution.DAY: dt.timedelta(days=1),
}
# A step written as a number of seconds, minutes, hours or days ("600", "600s", "10m", "1h", "1d").
_STEP = re.compile(r"^(\d{1,9})([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

TOPIC, CONSUMER_GROUP, BROKER, CLUSTER, SERVER = "topic", "consumer_group", "broker", "cluster", "server"


@dataclass(frozen=True)
class Step:
    """A resolution to read at: ``resolution`` None is the minute data (``length`` a minute, or a server's slot)."""

    length: dt.timedelta
    resolution: Resolution | None

    @property
    def name(self) -> str:
        return str(self.resolution) if self.resolution else f"{int(self.length / MINUTE)}m"


def raw_step(kind: str) -> Step:
    """The minute data's step of a kind of subject: a minute, or a server's five-minute slot."""
    return Step(SERVER_SLOT if kind == SERVER else MINUTE, None)


def steps(kind: str) -> list[Step]:
    """Every step a subject of ``kind`` can be read at, finest first."""
    return [raw_step(kind), *(Step(length, resolution) for resolution, length in ROLLUPS.items())]


def parse_step(text: str, kind: str) -> Step:
    """``text`` (seconds, or a number with s/m/h/d) as one of the kind's :func:`steps`; ValidationError keyed
    ``step`` otherwise."""
    match = _STEP.match(text.strip().lower())
    length = dt.timedelta(seconds=int(match[1]) * _UNIT_SECONDS[match[2]]) if match else None
    for step in steps(kind):
        if step.length == length:
            return step
    names = ", ".join(step.name for step in steps(kind))
    raise ValidationError({"step": _("Use one of the steps the data is kept at: %(steps)s.") % {"steps": names}})


@dataclass(frozen=True)
class Window:
    since: dt.datetime
    until: dt.datetime
    step: Step


def window(
    kind: str, since: dt.datetime | None, until: dt.datetime | None, step: str | None, *, now: dt.datetime | None = None
) -> Window:
    """The range and step asked for: ``until`` defaults to now (to the minute), ``since`` to an hour before it,
    ``step`` to the charts' resolution for the range. ValidationError keyed by the parameter at fault: ``to`` when
    the range ends before it starts, ``step`` (or ``from`` when no step was named) when it takes too many points."""
    until = until or (now or timezone.now()).replace(second=0, microsecond=0)
    since = since or until - DEFAULT_SPAN
    if until <= since:
        raise ValidationError({"to": _("The range must end after it starts (from).")})
    if step:
        chosen = parse_step(step, kind)
    else:
        resolution = resolution_for(since, until)
        chosen = Step(ROLLUPS[resolution], resolution) if resolution else raw_step(kind)
    if (until - since) / chosen.length + 1 > MAX_POINTS:
        raise ValidationError(
            {
                "step" if step else "from": _(
                    "The range takes more than %(points)d points a line at this step: shorten it or take a longer step."
                )
                % {"points": MAX_POINTS}
            }
        )
    return Window(since, until, chosen)


@dataclass(frozen=True)
class Line:
    """One series: the figure (``metric``, as the stats readers name it), its unit, what tells it apart from the
    subject's other lines of the same figure (``labels``: a group's topic, a server's mount point) and its points."""

    metric: str
    unit: str
    points: list[Point]
    labels: dict[str, str] = field(default_factory=dict)


def topic_lines(topic: Topic, when: Window) -> list[Line]:
    """Messages (``put_nums``) and bytes (``put_size``) stored per minute (per collected minute of a bucket)."""
    traffic = topic_traffic(topic.cluster_id, topic.name, when.since, when.until, resolution=when.step.resolution)
    return [
        Line("put_nums", "messages/minute", traffic.put_nums),
        Line("put_size", "bytes/minute", traffic.put_size),
    ]


def group_lines(group: ConsumerGroup, when: Window) -> list[Line]:
    """Per topic (each the group consumed or lagged on in the range, and each it is registered as subscribed to):
    its consumption rate, its lag and the lag's age (a bucket's peak)."""
    subscribed = Subscription.objects.filter(consumer_group=group).values_list("topic__name", flat=True)
    by_topic = group_traffic(
        group.cluster_id, group.name, when.since, when.until, topics=subscribed, resolution=when.step.resolution
    )
    units = {"consume_tps": "messages/second", "lag": "messages", "lag_seconds": "seconds"}
    return [
        Line(metric, unit, getattr(series, metric), {"topic": topic})
        for topic, series in by_topic.items()
        for metric, unit in units.items()
    ]


def broker_lines(broker: Broker, when: Window) -> list[Line]:
    """Messages the broker stored (``put_nums``) and served (``get_nums``) per minute it answered."""
    traffic = broker_traffic(
        broker.cluster_id, broker.broker_name, broker.broker_id, when.since, when.until, resolution=when.step.resolution
    )
    return [
        Line("put_nums", "messages/minute", traffic.put_nums),
        Line("get_nums", "messages/minute", traffic.get_nums),
    ]


def cluster_lines(cluster: Cluster, when: Window) -> list[Line]:
    """The cluster's messages stored and served per complete minute, and its brokers down per collected minute."""
    traffic = cluster_traffic(cluster.pk, when.since, when.until, resolution=when.step.resolution)
    return [
        Line("put_nums", "messages/minute", traffic.put_nums),
        Line("get_nums", "messages/minute", traffic.get_nums),
        Line("brokers_down", "brokers", traffic.brokers_down),
    ]


def _server_unit(metric: str) -> str:
    if metric.endswith("_bytes_per_s"):
        return "bytes/second"
    if metric.endswith("_percent"):
        return "percent"
    if metric.startswith(("mem_", "swap_")):
        return "bytes"
    if metric.startswith("load"):
        return "load"
    return "sockets"


def server_lines(host: str, when: Window) -> list[Line]:
    """Every server figure (averaged over a bucket) and each file system's used share by mount point."""
    stats = server_series(host, when.since, when.until, resolution=when.step.resolution)
    lines = [Line(metric, _server_unit(metric), stats.metrics[metric]) for metric in SERVER_METRICS]
    lines += [
        Line("disk_used_percent", "percent", points, {"mount": mount})
        for mount, points in stats.disk_used_percent.items()
    ]
    return lines


def broker_hosts() -> set[str]:
    """The hosts server stats are kept for: the host part of the registered brokers' addresses."""
    return {broker.host for broker in Broker.objects.all()}


LINES = {
    TOPIC: topic_lines,
    CONSUMER_GROUP: group_lines,
    BROKER: broker_lines,
    CLUSTER: cluster_lines,
    SERVER: server_lines,
}

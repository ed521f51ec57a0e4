"""What the monitoring parts of the pages show: the time range a page is asked for (``?range=``), and each page's
charts, made of the ``stats`` queries' series by the one chart builder, in the viewer's time zone. Points of the
demo's generated history (``manage.py demo``) are drawn as series of their own, named "... (demo history)", so
nothing generated passes for measured."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.utils import timezone
from django.utils.translation import gettext as _

from portal.models import ConsumerGroup, WarningKind
from portal.services.warnings import summaries
from stats.charts import Chart, Point, Series, Span, time_series_chart
from stats.models import ConsumeMinute, Resolution
from stats.queries.health import ProbeHistory, broker_health, cluster_health
from stats.queries.history import demo_history_points
from stats.queries.producers import LatencySeries, ProducerLatency, group_latency, topic_latency
from stats.queries.servers import server_series
from stats.queries.source import resolution_for
from stats.queries.traffic import (
    broker_traffic,
    cluster_traffic,
    group_traffic,
    per_second,
    topic_consumers,
    topic_traffic,
)
from stats.ranges import RANGES, time_range

KIB = 1024
MIB = 1024 * 1024


@dataclass(frozen=True)
class Window:
    """The range a page charts: ``key`` as in :data:`stats.ranges.RANGES`, its bounds, and the choices to offer
    as (key, label) pairs."""

    key: str
    since: dt.datetime
    until: dt.datetime

    @property
    def choices(self) -> list[tuple[str, str]]:
        return [(key, label) for key, (_length, label) in RANGES.items()]

    @property
    def resolution(self) -> Resolution | None:
        """The rollup resolution the ``stats`` queries read this range at (None: the minute data)."""
        return resolution_for(self.since, self.until)


@dataclass(frozen=True)
class DrawnChart:
    """One chart of a page: its title (for the figure's label) and its plotly JSON (``stats/_chart.html``)."""

    title: str
    spec: str


def requested_window(request) -> Window:
    return Window(*time_range(request.GET.get("range")))


@dataclass(frozen=True)
class Consumer:
    """A consumer of a topic as the topic page lists it: by name, the registered group (None: seen consuming
    but not in the registry, or not visible) with its subscription, and its latest minute (None: nothing to
    consume and no lag, when the minute is known)."""

    name: str
    group: ConsumerGroup | None
    tag_expression: str
    now: ConsumeMinute | None


def topic_consumer_list(topic, subscriptions, groups) -> tuple[dt.datetime | None, list[Consumer]]:
    """The latest collected minute of the topic's cluster and every consumer of the topic: the registry's
    ``subscriptions`` of it, and any other group seen consuming it then (linked when ``groups``, the user's
    visible consumer groups, holds it)."""
    minute, seen = topic_consumers(topic.cluster_id, topic.name, timezone.now())
    consumers = {
        sub.consumer_group.name: Consumer(
            sub.consumer_group.name, sub.consumer_group, sub.tag_expression, seen.get(sub.consumer_group.name)
        )
        for sub in subscriptions
    }
    others = [name for name in seen if name not in consumers]
    registered = {group.name: group for group in groups.filter(cluster_id=topic.cluster_id, name__in=others)}
    for name in others:
        consumers[name] = Consumer(name, registered.get(name), "", seen[name])
    return minute, [consumers[name] for name in sorted(consumers)]


# What a chart's points are, for the note under its x axis: averages (counts, rates, server stats), peaks (lag),
# percentiles of the sends in each point (latency), or server samples (their five-minute slots).
AVERAGES, PEAKS, PERCENTILES, SAMPLES = "averages", "peaks", "percentiles", "samples"


def point_note(window: Window, points: str = AVERAGES) -> str:
    """What one point of a chart of ``window`` stands for, at the resolution its range is read at."""
    resolution = window.resolution
    if resolution is None:
        return _("5-minute samples") if points == SAMPLES else _("per minute")
    notes = {
        PEAKS: {
            Resolution.TEN_MINUTES: _("10-minute peaks"),
            Resolution.HOUR: _("hourly peaks"),
            Resolution.DAY: _("daily peaks"),
        },
        PERCENTILES: {
            Resolution.TEN_MINUTES: _("percentiles of each 10 minutes"),
            Resolution.HOUR: _("percentiles of each hour"),
            Resolution.DAY: _("percentiles of each day"),
        },
    }
    averages = {
        Resolution.TEN_MINUTES: _("10-minute averages"),
        Resolution.HOUR: _("hourly averages"),
        Resolution.DAY: _("daily averages"),
    }
    return notes.get(points, averages)[resolution]


def _draw(
    title: str,
    y_title: str,
    series: list[Series],
    window: Window,
    spans: Iterable[Span] = (),
    *,
    points: str = AVERAGES,
    generated: frozenset[dt.datetime] = frozenset(),
) -> DrawnChart:
    """One chart; ``generated``: its points that are demo history (:func:`labelled`)."""
    chart = Chart(
        title,
        y_title,
        labelled(series, generated),
        window.since,
        window.until,
        spans=tuple(spans),
        resolution=point_note(window, points),
    )
    return DrawnChart(title, time_series_chart(chart, timezone.get_current_timezone()))


def labelled(series: list[Series], generated: frozenset[dt.datetime]) -> list[Series]:
    """Each series whose points include some of ``generated`` (demo history) split in two: its measured points
    under its own name (left out when there are none) and the generated ones under "<name> (demo history)"."""
    if not generated:
        return series
    drawn = []
    for line in series:
        demo = [(moment, value if moment in generated else None) for moment, value in line.points]
        if all(value is None for _moment, value in demo):
            drawn.append(line)
            continue
        measured = [(moment, None if moment in generated else value) for moment, value in line.points]
        if any(value is not None for _moment, value in measured):
            drawn.append(Series(line.name, measured, line.kind))
        drawn.append(Series(_("%(name)s (demo history)") % {"name": line.name}, demo, line.kind))
    return drawn


def _scaled(points: Iterable[Point], divisor: float) -> list[Point]:
    return [(moment, None if value is None else value / divisor) for moment, value in points]


WARNING_COLOR = "rgba(255, 127, 14, 0.16)"  # warning periods in orange, outages in the builder's red


def warning_spans(warnings: Iterable) -> list[Span]:
    """Warning periods to shade (``portal.services.warnings.queries.in_range``): from opening to resolution (to the
    chart's end while open), the kind and the summary (in the viewer's language) on hover."""
    return [
        Span(
            warning.opened_at,
            warning.resolved_at,
            f"{warning.get_kind_display()}: {summaries.of_warning(warning)}",
            WARNING_COLOR,
        )
        for warning in warnings
    ]


def _outage_spans(name: str, history: ProbeHistory) -> list[Span]:
    return [
        Span(outage.start, outage.end, _("%(name)s down: %(error)s") % {"name": name, "error": outage.error})
        for outage in history.outages
    ]


def topic_charts(topic, window: Window, warnings: Iterable = ()) -> list[DrawnChart]:
    """Production of a topic: messages and bytes stored per minute, its ``warnings``' periods shaded."""
    traffic = topic_traffic(topic.cluster_id, topic.name, window.since, window.until)
    spans = warning_spans(warnings)
    demo = demo_history_points(topic.cluster_id, window.since, window.until)
    return [
        _draw(
            _("Messages produced per minute"),
            _("messages"),
            [Series(topic.name, traffic.put_nums)],
            window,
            spans,
            generated=demo,
        ),
        _draw(
            _("Size produced per minute"),
            _("KiB"),
            [Series(topic.name, _scaled(traffic.put_size, KIB))],
            window,
            spans,
            generated=demo,
        ),
    ]


def group_charts(group, topics: Iterable[str], window: Window, warnings: Iterable = ()) -> list[DrawnChart]:
    """Consumption of a group, one line per topic it consumes (its retry topic included): rate, lag, lag time,
    with its ``warnings``' periods shaded."""
    by_topic = group_traffic(group.cluster_id, group.name, window.since, window.until, topics=topics)
    spans = warning_spans(warnings)
    demo = demo_history_points(group.cluster_id, window.since, window.until)

    def lines(metric: str) -> list[Series]:
        return [Series(topic, getattr(series, metric)) for topic, series in by_topic.items()]

    return [
        _draw(_("Consumption TPS"), _("messages/s"), lines("consume_tps"), window, spans, generated=demo),
        _draw(_("Lag"), _("messages"), lines("lag"), window, spans, points=PEAKS, generated=demo),
        _draw(_("Lag time"), _("seconds"), lines("lag_seconds"), window, spans, points=PEAKS, generated=demo),
    ]


def broker_charts(broker, window: Window, warnings: Iterable = ()) -> list[DrawnChart]:
    """A broker's put/get TPS, and its probes' latency with its outages shaded; its ``warnings``' periods on
    both."""
    traffic = broker_traffic(broker.cluster_id, broker.broker_name, broker.broker_id, window.since, window.until)
    health = broker_health(broker.cluster_id, broker.broker_name, broker.broker_id, window.since, window.until)
    name = f"{broker.broker_name}[{broker.broker_id}]"
    tps = [Series(_("get"), per_second(traffic.get_nums))]
    if broker.is_master:  # a slave stores nothing of its own
        tps.insert(0, Series(_("put"), per_second(traffic.put_nums)))
    spans = warning_spans(warnings)
    demo = demo_history_points(broker.cluster_id, window.since, window.until)
    return [
        _draw(_("Put and get TPS"), _("messages/s"), tps, window, spans, generated=demo),
        _draw(
            _("Health: probe latency"),
            _("ms"),
            [Series(name, health.latency_ms)],
            window,
            [*_outage_spans(name, health), *spans],
        ),
    ]


def cluster_charts(cluster, window: Window, warnings: Iterable = ()) -> list[DrawnChart]:
    """A cluster's totals, its brokers down per minute, and every name server's and broker's probe latency with
    their outages (and the name servers' ``warnings``' periods) shaded."""
    traffic = cluster_traffic(cluster.pk, window.since, window.until)
    health = cluster_health(cluster.pk, window.since, window.until)
    tps = [Series(_("put"), per_second(traffic.put_nums)), Series(_("get"), per_second(traffic.get_nums))]
    outages = [span for name, history in health.items() for span in _outage_spans(name, history)]
    demo = demo_history_points(cluster.pk, window.since, window.until)
    down = [Series(_("down"), traffic.brokers_down, kind="bar")]
    return [
        _draw(_("Put and get TPS"), _("messages/s"), tps, window, generated=demo),
        _draw(_("Brokers down"), _("brokers"), down, window, generated=demo),
        _draw(
            _("Health: probe latency"),
            _("ms"),
            [Series(name, history.latency_ms) for name, history in health.items()],
            window,
            [*outages, *warning_spans(warnings)],
        ),
    ]


def server_charts(host: str, window: Window, warnings: Iterable = ()) -> list[DrawnChart]:
    """A host's CPU, load, memory, disks, network and TCP connections; slots that could not be read are shaded
    with their error, and each of its ``warnings``' periods on the chart of what it is about (CPU, load, ...)."""
    stats = server_series(host, window.since, window.until)
    metric = stats.metrics
    failed = [Span(slot, slot + stats.step, error) for slot, error in stats.errors]
    warned: dict[str, list] = {}
    for warning in warnings:
        warned.setdefault(warning.kind, []).append(warning)

    def spans(kind: str) -> list[Span]:
        return warning_spans(warned.get(kind, ()))

    def draw(*args) -> DrawnChart:
        return _draw(*args, points=SAMPLES)

    return [
        draw(
            _("CPU"),
            "%",
            [Series(_("busy"), metric["cpu_percent"]), Series(_("I/O wait"), metric["cpu_iowait_percent"])],
            window,
            [*failed, *spans(WarningKind.SERVER_CPU)],
        ),
        draw(
            _("Load"),
            _("load"),
            [Series(name, metric[name]) for name in ("load1", "load5", "load15")],
            window,
            spans(WarningKind.SERVER_LOAD),
        ),
        draw(
            _("Memory"),
            "MiB",
            [
                Series(_("used"), _scaled(metric["mem_used"], MIB)),
                Series(_("total"), _scaled(metric["mem_total"], MIB)),
                Series(_("swap used"), _scaled(metric["swap_used"], MIB)),
            ],
            window,
            spans(WarningKind.SERVER_MEMORY),
        ),
        draw(
            _("Disk use"),
            "%",
            [Series(mount, points) for mount, points in stats.disk_used_percent.items()],
            window,
            spans(WarningKind.SERVER_DISK),
        ),
        draw(
            _("Disk I/O"),
            "KiB/s",
            [
                Series(_("read"), _scaled(metric["disk_read_bytes_per_s"], KIB)),
                Series(_("write"), _scaled(metric["disk_write_bytes_per_s"], KIB)),
            ],
            window,
        ),
        draw(
            _("Network"),
            "KiB/s",
            [
                Series(_("in"), _scaled(metric["net_in_bytes_per_s"], KIB)),
                Series(_("out"), _scaled(metric["net_out_bytes_per_s"], KIB)),
            ],
            window,
        ),
        draw(
            _("TCP connections"),
            _("sockets"),
            [
                Series(_("established"), metric["tcp_established"]),
                Series(_("time wait"), metric["tcp_time_wait"]),
                Series(_("total"), metric["tcp_total"]),
            ],
            window,
            spans(WarningKind.SERVER_TCP),
        ),
    ]


# --- producers' reported sends (the SDK) ---------------------------------------------------------------------------

# The "p99 by client" chart draws this many clients (those with the most sends); the clients table lists them all.
CLIENT_LINES = 10


def _latency_lines(series: LatencySeries) -> list[Series]:
    return [
        Series("p50", series.p50),
        Series("p90", series.p90),
        Series("p99", series.p99),
        Series(_("max"), series.max),
    ]


def _sent(series: LatencySeries) -> int:
    return sum(value or 0 for _moment, value in series.sends)


@dataclass(frozen=True)
class ProducerMonitoring:
    """A producer group's reported sends on its page: the charts, what they were drawn from (the clients table and
    the exceptions per broker), and the client or broker the first chart is narrowed to (``?client=`` /
    ``?broker=``; empty: the whole group)."""

    charts: list[DrawnChart]
    latency: ProducerLatency
    client: str = ""
    broker: str = ""


def producer_group_monitoring(
    group, window: Window, *, client: str = "", broker: str = "", warnings: Iterable = ()
) -> ProducerMonitoring:
    """Send latency (p50/p90/p99/max) of the group, or of one of its clients or brokers; p99 per broker and per
    client; sends and exceptions per broker, with its ``warnings``' periods shaded."""
    latency = group_latency(group.cluster_id, group.name, window.since, window.until)
    client = client if client in latency.by_client else ""
    broker = broker if broker in latency.by_broker and not client else ""
    if client:
        title, selected = _("Send latency of client %(client)s") % {"client": client}, latency.by_client[client]
    elif broker:
        title, selected = _("Send latency to broker %(broker)s") % {"broker": broker}, latency.by_broker[broker]
    else:
        title, selected = _("Send latency"), latency.total
    busiest = sorted(latency.by_client.items(), key=lambda item: -_sent(item[1]))[:CLIENT_LINES]
    by_broker = latency.by_broker.items()
    charts = [
        _draw(title, "ms", _latency_lines(selected), window, points=PERCENTILES),
        _draw(
            _("Send latency p99 by broker"),
            "ms",
            [Series(name, s.p99) for name, s in by_broker],
            window,
            points=PERCENTILES,
        ),
        _draw(
            _("Send latency p99 by client"),
            "ms",
            [Series(name, s.p99) for name, s in sorted(busiest)],
            window,
            points=PERCENTILES,
        ),
        _draw(_("Sends per minute by broker"), _("sends"), [Series(name, s.sends) for name, s in by_broker], window),
        _draw(
            _("Failed sends per minute by broker"),
            _("sends"),
            [Series(name, s.exceptions, kind="bar") for name, s in by_broker],
            window,
            warning_spans(warnings),
        ),
    ]
    return ProducerMonitoring(charts, latency, client, broker)


def topic_producer_charts(topic, window: Window) -> list[DrawnChart]:
    """What the topic's producers report (beside its traffic): send latency over all of them, and failed sends per
    broker."""
    latency = topic_latency(topic.cluster_id, topic.name, window.since, window.until)
    return [
        _draw(_("Send latency"), "ms", _latency_lines(latency.total), window, points=PERCENTILES),
        _draw(
            _("Failed sends per minute by broker"),
            _("sends"),
            [Series(name, s.exceptions, kind="bar") for name, s in latency.by_broker.items()],
            window,
        ),
    ]

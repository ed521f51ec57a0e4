"""What the warning page shows of the figures a rule kept (``Warning.details``: the JSON the latest condition carried,
see ``portal/services/warnings/rules/*.py``): each figure as a labelled value in an ops engineer's units (messages,
seconds, %, bytes; yes/no; "—" for a value the rule could not know), each list of queues, clients or mounts as a table
whose columns are labelled, and the chart of the subject's series the warning is about, around its time, with its period
shaded. Python's repr of the JSON (``{'messages': 50}``, ``True``, ``None``) never reaches the page.

A key the labels below do not know (a rule added a figure) is still shown, its name made readable, so a new figure
is never lost, only unpolished."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass, field

from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format, number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.models import SubjectType, WarningKind
from portal.web import monitoring

NOTHING = "—"


# How a figure is written, by its key (the same key means the same thing in every rule).
Unit = enum.Enum("Unit", "TEXT NUMBER MESSAGES SECONDS MINUTES PERCENT BYTES PER_SECOND PER_MINUTE TIME RATIO")

LABELS: dict[str, tuple[str, Unit]] = {
    key: (label, unit)
    for key, label, unit in [
        ("minute", gettext_lazy("Judged at"), Unit.TIME),
        ("state", gettext_lazy("State"), Unit.TEXT),
        ("lag", gettext_lazy("Lag"), Unit.MESSAGES),
        ("lag_seconds", gettext_lazy("Lag time"), Unit.SECONDS),
        ("age_measured", gettext_lazy("Lag time measured"), Unit.TEXT),
        ("broadcasting", gettext_lazy("Broadcasting"), Unit.TEXT),
        ("clients", gettext_lazy("Clients"), Unit.NUMBER),
        ("trend_seconds", gettext_lazy("Trend over"), Unit.SECONDS),
        ("consumed_per_second", gettext_lazy("Consumed"), Unit.PER_SECOND),
        ("produced_per_second", gettext_lazy("Produced"), Unit.PER_SECOND),
        ("lag_change_per_minute", gettext_lazy("Lag change"), Unit.PER_MINUTE),
        ("pulled_last_minute", gettext_lazy("Pulled in the last minute"), Unit.MESSAGES),
        ("thresholds", gettext_lazy("Thresholds"), Unit.TEXT),
        ("messages", gettext_lazy("Messages"), Unit.MESSAGES),
        ("seconds", gettext_lazy("Time"), Unit.SECONDS),
        ("topics", gettext_lazy("Topics"), Unit.MESSAGES),
        ("queues", gettext_lazy("Queues"), Unit.TEXT),
        ("lagging_queues", gettext_lazy("Queues behind"), Unit.NUMBER),
        ("topic", gettext_lazy("Topic"), Unit.TEXT),
        ("broker_name", gettext_lazy("Broker"), Unit.TEXT),
        ("queue_id", gettext_lazy("Queue"), Unit.TEXT),
        ("consumer_offset", gettext_lazy("Consumer offset"), Unit.NUMBER),
        ("broker_offset", gettext_lazy("Broker offset"), Unit.NUMBER),
        ("client_id", gettext_lazy("Client id"), Unit.TEXT),
        ("measured_at", gettext_lazy("Read at"), Unit.TIME),
        ("threshold_seconds", gettext_lazy("Threshold"), Unit.SECONDS),
        ("blocked_seconds", gettext_lazy("Blocked for"), Unit.SECONDS),
        ("last_consumed_at", gettext_lazy("Last consumed"), Unit.TIME),
        ("cached_messages", gettext_lazy("Cached messages"), Unit.NUMBER),
        ("blocked_queues", gettext_lazy("Blocked queues"), Unit.NUMBER),
        ("events", gettext_lazy("Offset moves"), Unit.NUMBER),
        ("window_seconds", gettext_lazy("Window"), Unit.SECONDS),
        ("last_event_at", gettext_lazy("Last move"), Unit.TIME),
        ("offset_request", gettext_lazy("Requested offset"), Unit.NUMBER),
        ("offset_new", gettext_lazy("Moved to"), Unit.NUMBER),
        ("stored_at", gettext_lazy("When"), Unit.TIME),
        ("subscription", gettext_lazy("Subscription"), Unit.TEXT),
        ("error", gettext_lazy("Error"), Unit.TEXT),
        ("sent_back", gettext_lazy("Sent back for retry"), Unit.MESSAGES),
        ("sent_back_latest_minute", gettext_lazy("Sent back in the latest minute"), Unit.MESSAGES),
        ("minutes_covered", gettext_lazy("Minutes read"), Unit.MINUTES),
        ("threshold", gettext_lazy("Threshold"), Unit.NUMBER),
        ("dead_letters", gettext_lazy("Dead letters in the last hour"), Unit.MESSAGES),
        ("dead_letters_total", gettext_lazy("Dead letters in all"), Unit.MESSAGES),
        ("last_minute", gettext_lazy("Latest dead letter"), Unit.TIME),
        ("address", gettext_lazy("Address"), Unit.TEXT),
        ("down_since", gettext_lazy("Down since"), Unit.TIME),
        ("failed_rounds", gettext_lazy("Failed probes"), Unit.NUMBER),
        ("attempts", gettext_lazy("Attempts per probe"), Unit.NUMBER),
        ("latest_probe", gettext_lazy("Latest probe"), Unit.TIME),
        ("grace_seconds", gettext_lazy("Grace time"), Unit.SECONDS),
        ("all_down", gettext_lazy("Every name server down"), Unit.TEXT),
        ("broker_id", gettext_lazy("Broker id"), Unit.TEXT),
        ("listed", gettext_lazy("Listed by the name servers"), Unit.TEXT),
        ("behind_bytes", gettext_lazy("Behind its master"), Unit.BYTES),
        ("master_commit_log_max_offset", gettext_lazy("Master's commit log end"), Unit.NUMBER),
        ("slave_commit_log_max_offset", gettext_lazy("Slave's commit log end"), Unit.NUMBER),
        ("change_bytes_per_minute", gettext_lazy("Change a minute"), Unit.BYTES),
        ("threshold_bytes", gettext_lazy("Threshold"), Unit.BYTES),
        ("window_minutes", gettext_lazy("Window"), Unit.MINUTES),
        ("since", gettext_lazy("Since"), Unit.TIME),
        ("failed", gettext_lazy("Failed sends"), Unit.NUMBER),
        ("failed_messages", gettext_lazy("Failed messages"), Unit.MESSAGES),
        ("consumed", gettext_lazy("Messages consumed"), Unit.MESSAGES),
        ("sent", gettext_lazy("Sends"), Unit.NUMBER),
        ("exceptions", gettext_lazy("Exceptions"), Unit.NUMBER),
        ("brokers", gettext_lazy("Brokers"), Unit.TEXT),
        ("last_failure_minute", gettext_lazy("Latest failure"), Unit.TIME),
        ("trace_written", gettext_lazy("Trace records written"), Unit.NUMBER),
        ("trace_dropped", gettext_lazy("Trace records dropped"), Unit.NUMBER),
        ("trace_failed", gettext_lazy("Trace records not written"), Unit.NUMBER),
        ("losing_clients", gettext_lazy("Clients losing trace records"), Unit.TEXT),
        ("last_loss_minute", gettext_lazy("Latest loss"), Unit.TIME),
        ("producer_group", gettext_lazy("Producer group"), Unit.TEXT),
        ("consumer_group", gettext_lazy("Consumer group"), Unit.TEXT),
        ("recent_per_minute", gettext_lazy("Recent rate"), Unit.PER_MINUTE),
        ("recent_minutes", gettext_lazy("Recent minutes"), Unit.MINUTES),
        ("baseline_per_minute", gettext_lazy("Baseline rate"), Unit.PER_MINUTE),
        ("baseline_minutes", gettext_lazy("Baseline"), Unit.MINUTES),
        ("ratio", gettext_lazy("Recent to baseline"), Unit.RATIO),
        ("factor", gettext_lazy("Factor"), Unit.RATIO),
        ("min_per_minute", gettext_lazy("Minimum rate"), Unit.PER_MINUTE),
        ("min_baseline_per_minute", gettext_lazy("Minimum baseline rate"), Unit.PER_MINUTE),
        ("host", gettext_lazy("Server"), Unit.TEXT),
        ("cpu_percent", gettext_lazy("CPU busy"), Unit.PERCENT),
        ("cpu_iowait_percent", gettext_lazy("I/O wait"), Unit.PERCENT),
        ("threshold_percent", gettext_lazy("Threshold"), Unit.PERCENT),
        ("used_percent", gettext_lazy("Usage"), Unit.PERCENT),
        ("mem_used", gettext_lazy("Memory used"), Unit.BYTES),
        ("mem_total", gettext_lazy("Memory"), Unit.BYTES),
        ("swap_used", gettext_lazy("Swap used"), Unit.BYTES),
        ("mounts", gettext_lazy("Mounts"), Unit.TEXT),
        ("used", gettext_lazy("Used"), Unit.BYTES),
        ("available", gettext_lazy("Free"), Unit.BYTES),
        ("load1", gettext_lazy("Load (1 min)"), Unit.NUMBER),
        ("load5", gettext_lazy("Load (5 min)"), Unit.NUMBER),
        ("load15", gettext_lazy("Load (15 min)"), Unit.NUMBER),
        ("established", gettext_lazy("Established connections"), Unit.NUMBER),
        ("time_wait", gettext_lazy("In TIME_WAIT"), Unit.NUMBER),
        ("total", gettext_lazy("Sockets"), Unit.NUMBER),
    ]
}

# A mapping keyed by names (topic -> figures, mount -> figures, exception -> count): the headings of its name column
# and, when each name has one value, of the value column.
KEY_COLUMNS: dict[str, tuple[str, str]] = {
    "topics": (gettext_lazy("Topic"), gettext_lazy("Messages")),
    "mounts": (gettext_lazy("Mount"), ""),
    "exceptions": (gettext_lazy("Exception"), gettext_lazy("Failed sends")),
    "brokers": (gettext_lazy("Exception"), gettext_lazy("Brokers")),
    "failures": (gettext_lazy("Exception"), gettext_lazy("Failed messages")),
}


@dataclass(frozen=True)
class Figure:
    label: str
    value: str


@dataclass(frozen=True)
class Cell:
    """A heading or a value of a table; numbers are aligned right."""

    text: str
    numeric: bool = False


@dataclass(frozen=True)
class FigureTable:
    """A list of queues (clients, mounts, ...) as a table."""

    title: str
    columns: list[Cell]
    rows: list[list[Cell]]

    @property
    def texts(self) -> list[list[str]]:
        """The rows as plain text (what a reader sees)."""
        return [[cell.text for cell in row] for row in self.rows]


@dataclass(frozen=True)
class Figures:
    values: list[Figure] = field(default_factory=list)
    tables: list[FigureTable] = field(default_factory=list)


def label(key: str) -> str:
    return str(LABELS[key][0]) if key in LABELS else key.replace("_", " ").capitalize()


def _unit(key: str) -> Unit:
    return LABELS[key][1] if key in LABELS else Unit.TEXT


def _number(value: float, decimals: int = 2) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return number_format(int(value), force_grouping=True)
    return number_format(round(value, decimals), force_grouping=True)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 120:
        return _("%(n)s s") % {"n": seconds}
    minutes = seconds // 60
    if minutes < 120:
        return _("%(n)s min") % {"n": minutes}
    return _("%(h)s h %(m)s min") % {"h": minutes // 60, "m": minutes % 60}


def _moment(text: str) -> str:
    moment = parse_datetime(text)
    if moment is None:
        return text
    return date_format(timezone.localtime(moment), "Y-m-d H:i:s")


def _scalar(key: str, value) -> str:
    """One value as text in its key's unit."""
    if value is None or value == "":
        return NOTHING
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    unit = _unit(key)
    if isinstance(value, str):
        if unit == Unit.TIME:
            return _moment(value)
        return value.replace("_", " ") if key == "state" else value
    if not isinstance(value, int | float):
        return str(value)
    match unit:
        case Unit.MESSAGES:
            return _("%(n)s messages") % {"n": _number(value)}
        case Unit.SECONDS:
            return _duration(value)
        case Unit.MINUTES:
            return _duration(value * 60)
        case Unit.PERCENT:
            return f"{_number(value, 1)} %"
        case Unit.BYTES:
            return ("−" if value < 0 else "") + filesizeformat(abs(value))
        case Unit.PER_SECOND:
            return _("%(n)s/s") % {"n": _number(value)}
        case Unit.PER_MINUTE:
            return _("%(n)s a minute") % {"n": _number(value)}
        case Unit.RATIO:
            return f"× {_number(value, 3)}"
    return _number(value)


def _cell(key: str, value) -> str:
    """A value inside a table: lists joined, a mapping (a client's subscription) as "name: value" pairs."""
    if isinstance(value, list):
        return ", ".join(_cell(key, item) for item in value) or NOTHING
    if isinstance(value, dict):
        return "; ".join(f"{name}: {_cell(name, item)}" for name, item in value.items()) or NOTHING
    return _scalar(key, value)


def _is_numeric(key: str, values: list) -> bool:
    """Whether a column holds quantities (a queue or broker id is a name, though a number)."""
    if key in ("queue_id", "broker_id"):
        return False
    numbers = [v for v in values if v is not None]
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers) and bool(numbers)


def _table_of_rows(title: str, rows: list[dict]) -> FigureTable:
    """A list of dicts: one row each, the columns in the order the keys first appear."""
    keys = list(dict.fromkeys(key for row in rows for key in row))
    numeric = {key: _is_numeric(key, [row.get(key) for row in rows]) for key in keys}
    return FigureTable(
        title,
        [Cell(label(key), numeric[key]) for key in keys],
        [[Cell(_cell(key, row.get(key)), numeric[key]) for key in keys] for row in rows],
    )


def _table_by_name(key: str, mapping: dict) -> FigureTable:
    """A mapping of names: a column for the names, then the figures of each (or its one value)."""
    names, values_heading = KEY_COLUMNS.get(key, (_("Name"), label(key)))
    first = Cell(str(names))
    if all(isinstance(value, dict) for value in mapping.values()):
        table = _table_of_rows(label(key), list(mapping.values()))
        rows = [[Cell(name), *row] for name, row in zip(mapping, table.rows, strict=True)]
        return FigureTable(table.title, [first, *table.columns], rows)
    values = list(mapping.values())
    numeric = _is_numeric(key, values) and not any(isinstance(value, list) for value in values)
    rows = [[Cell(name), Cell(_cell(key, value), numeric)] for name, value in mapping.items()]
    return FigureTable(label(key), [first, Cell(str(values_heading), numeric)], rows)


def present(details: dict) -> Figures:
    """The figures of a warning's details: scalars and lists of scalars as labelled values, a mapping of known
    figures (the thresholds) as values labelled under its name, lists of dicts and mappings of names as tables."""
    figures = Figures()
    for key, value in details.items():
        if isinstance(value, list) and any(isinstance(item, dict) for item in value):
            figures.tables.append(_table_of_rows(label(key), [item for item in value if isinstance(item, dict)]))
        elif isinstance(value, dict) and value and all(name in LABELS for name in value):
            figures.values.extend(
                Figure(f"{label(key)}: {label(name)}", _cell(name, item)) for name, item in value.items()
            )
        elif isinstance(value, dict) and value:
            figures.tables.append(_table_by_name(key, value))
        else:
            figures.values.append(Figure(label(key), _cell(key, value)))
    return figures


# --- the chart ----------------------------------------------------------------------------------------------------

# The chart of its subject's page each kind is about (by its title there).
CHART_OF_KIND: dict[str, str] = {
    WarningKind.CONSUMER_LAG: gettext_lazy("Lag"),
    WarningKind.CLIENT_BLOCKED: gettext_lazy("Lag"),
    WarningKind.OFFSET_MOVED: gettext_lazy("Lag"),
    WarningKind.SUBSCRIPTION_MISMATCH: gettext_lazy("Consumption TPS"),
    WarningKind.CONSUME_FAILURES: gettext_lazy("Consumption TPS"),
    WarningKind.DEAD_LETTERS: gettext_lazy("Consumption TPS"),
    WarningKind.CLIENT_CONSUME_FAILURES: gettext_lazy("Consumption TPS"),
    WarningKind.PRODUCE_ERRORS: gettext_lazy("Failed sends per minute by broker"),
    # what the clients were tracing: a buffer overflows when sends outrun the trace writer
    WarningKind.TRACE_FAILURES: gettext_lazy("Messages produced per minute"),
    WarningKind.TRAFFIC_SURGE: gettext_lazy("Messages produced per minute"),
    WarningKind.TRAFFIC_DROP: gettext_lazy("Messages produced per minute"),
    WarningKind.NAMESERVER_DOWN: gettext_lazy("Health: probe latency"),
    WarningKind.BROKER_DOWN: gettext_lazy("Health: probe latency"),
    WarningKind.SLAVE_LAG: gettext_lazy("Health: probe latency"),
    WarningKind.SERVER_CPU: gettext_lazy("CPU"),
    WarningKind.SERVER_MEMORY: gettext_lazy("Memory"),
    WarningKind.SERVER_DISK: gettext_lazy("Disk use"),
    WarningKind.SERVER_LOAD: gettext_lazy("Load"),
    WarningKind.SERVER_TCP: gettext_lazy("TCP connections"),
}
# Charted before the warning opened and after it ended, to show what changed.
MARGIN = dt.timedelta(hours=1)


def window_around(warning, now: dt.datetime) -> monitoring.Window:
    until = min(now, (warning.resolved_at or now) + MARGIN)
    return monitoring.Window("", warning.opened_at - MARGIN, until)


def _subject_charts(warning, entry, window) -> list[monitoring.DrawnChart]:
    shaded = [warning]
    match warning.subject_type:
        case SubjectType.TOPIC if entry is not None:
            return monitoring.topic_charts(entry, window, shaded)
        case SubjectType.CONSUMER_GROUP if entry is not None:
            topics = entry.subscriptions.values_list("topic__name", flat=True)
            return monitoring.group_charts(entry, topics, window, shaded)
        case SubjectType.PRODUCER_GROUP if entry is not None:
            return monitoring.producer_group_monitoring(entry, window, warnings=shaded).charts
        case SubjectType.BROKER if warning.broker is not None:
            return monitoring.broker_charts(warning.broker, window, shaded)
        case SubjectType.SERVER:
            return monitoring.server_charts(warning.subject_name, window, shaded)
        case SubjectType.NAMESERVER:
            return monitoring.cluster_charts(warning.cluster, window, shaded)
    return []


def warning_charts(warning, entry, now: dt.datetime) -> list[monitoring.DrawnChart]:
    """The chart of what the warning is about (a group's lag, a server's CPU, ...) from an hour before it opened to
    an hour after it ended (or now), its period shaded; none when the subject has no page to take it from."""
    wanted = str(CHART_OF_KIND.get(warning.kind, ""))
    return [chart for chart in _subject_charts(warning, entry, window_around(warning, now)) if chart.title == wanted]

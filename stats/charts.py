"""The one chart builder: time series in, a plotly figure (as JSON for plotly.js) out.

Every chart of the product goes through :func:`time_series_chart`, so they all look and behave alike: times shown
in the viewer's zone, gaps drawn as gaps (a missing minute is ``None`` and the line breaks there instead of
dropping to zero), the requested range on the x axis even when data starts later, what one point stands for under
the x axis ("10-minute averages"; the ``stats`` queries bound a line to a few hundred points whatever the range),
and optional marked spans (e.g. warning periods) shaded with their reason on hover. The JSON carries nothing a line
does not need: no plotly template (about 7 KB a chart), marker sizes per point only where a lone point needs one.

Every text of a chart (title, axis title, legend names, hover labels) is shown as plain text: plotly.js reads tags
in them (``<a href=...>`` becomes a link, ``<b>`` bold), and the names come from outside (client ids, topic and
group names, host names, warning summaries), so they are HTML-escaped here (plotly.js shows entities as the
characters they stand for), once, for every chart.
"""

from __future__ import annotations

import datetime as dt
import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go
import plotly.io as pio

Point = tuple[dt.datetime, float | None]


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point]
    kind: str = "line"  # "line" or "bar"


@dataclass(frozen=True)
class Span:
    """A period to shade on the chart (a warning, a broker outage), with the reason shown on hover."""

    start: dt.datetime
    end: dt.datetime | None
    label: str
    color: str = "rgba(214, 39, 40, 0.12)"


@dataclass(frozen=True)
class Chart:
    title: str
    y_title: str
    series: Sequence[Series]
    since: dt.datetime
    until: dt.datetime
    spans: Sequence[Span] = field(default_factory=tuple)
    resolution: str = ""  # what one point stands for, shown under the x axis ("hourly averages")


# What the plotly_white template gave the charts, without sending the whole template with each one.
_WHITE = {
    "plot_bgcolor": "white",
    "paper_bgcolor": "white",
    "font": {"color": "#2a3f5f"},
    "colorway": ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3", "#FF6692", "#B6E880", "#FF97FF"],
}
_GRID = {"gridcolor": "#EBF0F8", "zerolinecolor": "#EBF0F8", "linecolor": "#EBF0F8", "automargin": True}


def _local(moment: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    return moment.astimezone(tz).replace(tzinfo=None)


LONE_POINT_SIZE = 6


def _lone_point_sizes(ys: list[float | None]) -> list[int] | int:
    """Marker sizes that show a value between two gaps as a dot (a line needs two neighbouring points, so it
    would not show at all: the first minute collected, a minute between outages) and no other; one size for the
    whole line when it has no lone point."""
    last = len(ys) - 1
    sizes = [
        LONE_POINT_SIZE if y is not None and (i == 0 or ys[i - 1] is None) and (i == last or ys[i + 1] is None) else 0
        for i, y in enumerate(ys)
    ]
    return sizes if any(sizes) else 0


def _text(value: str) -> str:
    """A chart text as plotly.js shows it literally (see the module's docstring)."""
    return html.escape(value, quote=False)


def figure(chart: Chart, tz: dt.tzinfo) -> go.Figure:
    fig = go.Figure()
    for series in chart.series:
        xs = [_local(moment, tz) for moment, _ in series.points]
        ys = [value for _, value in series.points]
        if series.kind == "bar":
            fig.add_trace(go.Bar(name=_text(series.name), x=xs, y=ys))
        else:
            fig.add_trace(
                go.Scatter(
                    name=_text(series.name),
                    x=xs,
                    y=ys,
                    mode="lines+markers",
                    marker={"size": _lone_point_sizes(ys)},
                    connectgaps=False,
                )
            )
    for span in chart.spans:
        end = span.end or chart.until
        fig.add_vrect(
            x0=_local(max(span.start, chart.since), tz),
            x1=_local(min(end, chart.until), tz),
            fillcolor=span.color,
            line_width=0,
            layer="below",
        )
        # An invisible trace carries the hover text, since shapes have none.
        fig.add_trace(
            go.Scatter(
                x=[_local(max(span.start, chart.since), tz)],
                y=[0],
                mode="markers",
                marker={"color": "rgba(214, 39, 40, 0.8)", "symbol": "triangle-up", "size": 9},
                name=_text(span.label),
                hovertext=[_text(span.label)],
                hoverinfo="text",
                showlegend=False,
            )
        )
    fig.update_layout(
        title={"text": _text(chart.title), "x": 0, "font": {"size": 14}},
        margin={"l": 50, "r": 10, "t": 36, "b": 30},
        height=280,
        hovermode="x unified",
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},  # beside the title
        yaxis={"title": {"text": _text(chart.y_title)}, "rangemode": "tozero", **_GRID},
        xaxis={
            "range": [_local(chart.since, tz), _local(chart.until, tz)],
            "type": "date",
            "title": {"text": _text(chart.resolution), "font": {"size": 11}, "standoff": 4},
            **_GRID,
        },
        template=None,
        **_WHITE,
    )
    return fig


# As Django's json_script: no "<", ">" or "&" in the JSON, so nothing in it can end or confuse its script element.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def time_series_chart(chart: Chart, tz: dt.tzinfo) -> str:
    """The chart as the JSON plotly.js takes (``Plotly.newPlot(div, spec.data, spec.layout)``), safe to embed in a
    ``<script type="application/json">`` element (``<``, ``>`` and ``&`` are escaped as JSON escapes)."""
    return pio.to_json(figure(chart, tz), validate=False).translate(_SCRIPT_SAFE)

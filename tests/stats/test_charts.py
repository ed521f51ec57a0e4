"""The one chart builder: gaps stay gaps, times are the viewer's, marked spans carry their reason."""

import datetime as dt
import json
import zoneinfo

from django.contrib.staticfiles import finders

from stats.charts import Chart, Series, Span, time_series_chart
from stats.ranges import DEFAULT_RANGE, time_range

UTC = dt.UTC
SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
T0 = dt.datetime(2026, 11, 22, 8, 0, tzinfo=UTC)


def minute(n: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def spec(chart: Chart, tz=UTC) -> dict:
    return json.loads(time_series_chart(chart, tz))


def test_a_missing_minute_is_drawn_as_a_gap_not_as_zero():
    chart = Chart("put", "msgs/min", [Series("TopicA", [(minute(0), 5), (minute(1), None), (minute(2), 7)])],
                  minute(0), minute(3))  # fmt: skip

    [trace] = spec(chart)["data"]

    assert trace["y"] == [5, None, 7]
    assert trace["connectgaps"] is False


def test_times_are_shown_in_the_viewers_time_zone_and_the_axis_covers_the_requested_range():
    chart = Chart("put", "msgs/min", [Series("TopicA", [(minute(10), 1)])], minute(0), minute(60))

    drawn = spec(chart, SHANGHAI)

    assert drawn["data"][0]["x"] == ["2026-11-22T16:10:00"]
    assert drawn["layout"]["xaxis"]["range"] == ["2026-11-22T16:00:00", "2026-11-22T17:00:00"]


def test_a_span_is_shaded_and_its_reason_shows_on_hover():
    chart = Chart(
        "lag", "messages", [Series("g", [(minute(0), 1)])], minute(0), minute(60),
        spans=[Span(minute(5), None, "lag over 10,000 since 08:05")],
    )  # fmt: skip

    drawn = spec(chart)

    [shape] = drawn["layout"]["shapes"]
    assert (shape["x0"], shape["x1"]) == ("2026-11-22T08:05:00", "2026-11-22T09:00:00")
    assert any(trace.get("hovertext") == ["lag over 10,000 since 08:05"] for trace in drawn["data"])


def test_a_label_cannot_end_the_embedding_script_element():
    chart = Chart("</script><b>x", "y", [Series("</script>", [(minute(0), 1)])], minute(0), minute(1))

    assert "</" not in time_series_chart(chart, UTC)


def test_every_text_from_outside_is_shown_as_text_not_read_as_plotly_markup():
    link = '<a href="https://evil.example/">10.0.0.9@1</a>'
    chart = Chart(f"Send latency of client {link}", "<b>ms</b>", [Series(link, [(minute(0), 1)])], minute(0),
                  minute(1), spans=[Span(minute(0), None, "lag of <i>GID</i> & more")])  # fmt: skip

    raw = time_series_chart(chart, UTC)
    drawn = json.loads(raw)

    assert not {"<", ">", "&"} & set(raw)
    escaped = '&lt;a href="https://evil.example/"&gt;10.0.0.9@1&lt;/a&gt;'
    assert drawn["data"][0]["name"] == escaped
    assert drawn["layout"]["title"]["text"] == f"Send latency of client {escaped}"
    assert drawn["layout"]["yaxis"]["title"]["text"] == "&lt;b&gt;ms&lt;/b&gt;"
    assert drawn["data"][1]["hovertext"] == ["lag of &lt;i&gt;GID&lt;/i&gt; &amp; more"]


def test_plotly_js_is_served_from_the_installed_package_not_a_cdn():
    path = finders.find("plotly/plotly.min.js")

    assert path is not None
    with open(path) as handle:
        assert "plotly.js v" in handle.read(200)


def test_unknown_ranges_fall_back_to_the_default_and_bounds_are_minute_aligned():
    now = dt.datetime(2026, 11, 22, 8, 30, 42, tzinfo=UTC)

    assert time_range("7d", now)[1:] == (dt.datetime(2026, 11, 15, 8, 30, tzinfo=UTC), minute(30))
    assert time_range("bogus", now)[0] == DEFAULT_RANGE


def test_a_value_between_two_gaps_is_drawn_as_a_dot_since_a_line_needs_two_points():
    points = [(minute(0), 5), (minute(1), None), (minute(2), 7), (minute(3), None), (minute(4), 1), (minute(5), 2)]
    chart = Chart("put", "msgs/min", [Series("TopicA", points)], minute(0), minute(5))

    [trace] = spec(chart)["data"]

    assert trace["marker"]["size"] == [6, 0, 6, 0, 0, 0]

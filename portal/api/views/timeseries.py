"""Time series (``GET /api/v1/<topics|consumer-groups|brokers|clusters>/{id}/series/`` and
``GET /api/v1/servers/{host}/series/``): a subject's stored figures over ``from``..``to`` at ``step``, as JSON or
as CSV (``?format=csv`` or ``Accept: text/csv``, streamed), read by :mod:`portal.services.timeseries` through the
chart pages' own readers.

Who sees what is the chart pages' rule: monitoring data needs a login (``access.can_see_monitoring``), topics and
groups are found through ``visible_to`` (invisible -> 404), a server only when it hosts a registered broker.
Errors are JSON whatever format was asked for: a client reading CSV still gets the parameter at fault."""

from __future__ import annotations

import csv
import datetime as dt
import re
from collections.abc import Iterator

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.errors import ServiceErrorsMixin
from portal.api.views.rankings import CanSeeMonitoring
from portal.models import Broker, Cluster, ConsumerGroup, Topic
from portal.services import timeseries
from portal.services.timeseries import Line, Window


class CSVRenderer(BaseRenderer):
    """Lets ``?format=csv`` and ``Accept: text/csv`` through content negotiation; the view streams the rows
    itself (:func:`csv_rows`), so this renders nothing but an empty body."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return b""


class RangeQuerySerializer(serializers.Serializer):
    to = serializers.DateTimeField(required=False, help_text=_("End of the range (ISO 8601); now if absent."))
    step = serializers.CharField(
        required=False,
        max_length=16,
        help_text=_(
            "Resolution: 1m (minute data; 5m for servers), 10m, 1h or 1d (the Spark rollups), or as seconds (600). "
            "Absent: what the chart of the range reads at (minutes up to 6 hours, then 10m, 1h, 1d)."
        ),
    )

    def get_fields(self):
        # "from" is a Python keyword, so it cannot be declared as an attribute.
        return {
            "from": serializers.DateTimeField(
                required=False, help_text=_("Start of the range (ISO 8601); an hour before the end if absent.")
            ),
            **super().get_fields(),
        }


class PointsField(serializers.ListField):
    """[time, value] pairs: the start of the minute or bucket (ISO 8601, UTC) and its value (null: a gap)."""

    child = serializers.ListField(child=serializers.JSONField(), min_length=2, max_length=2)


class LineSerializer(serializers.Serializer):
    metric = serializers.CharField(help_text=_("The figure, e.g. put_nums, lag, cpu_percent."))
    unit = serializers.CharField(help_text=_("e.g. messages/minute, seconds, bytes, percent."))
    labels = serializers.DictField(
        child=serializers.CharField(), help_text=_("What tells lines of one figure apart: topic, mount.")
    )
    points = PointsField()


# The JSON the view builds directly (json_body), described for the schema: a week of minutes is tens of thousands
# of points, too many to pass through serializer fields one by one.
class SeriesSerializer(serializers.Serializer):
    """A subject's series over a range at one step; every line has one point per minute or bucket of the range."""

    subject = serializers.DictField(help_text=_("kind, name and ids of what the series are about."))
    from_ = serializers.DateTimeField()
    to = serializers.DateTimeField()
    step = serializers.CharField(help_text=_("The resolution read: 1m, 5m, 10m, 1h or 1d."))
    step_seconds = serializers.IntegerField()
    series = LineSerializer(many=True)

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")
        return fields


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def json_body(subject: dict, when: Window, lines: list[Line]) -> dict:
    return {
        "subject": subject,
        "from": iso(when.since),
        "to": iso(when.until),
        "step": when.step.name,
        "step_seconds": int(when.step.length.total_seconds()),
        "series": [
            {
                "metric": line.metric,
                "unit": line.unit,
                "labels": line.labels,
                "points": [[iso(moment), value] for moment, value in line.points],
            }
            for line in lines
        ],
    }


class _Echo:
    """A file that hands back what is written to it, for ``csv.writer`` to format one row at a time."""

    def write(self, value: str) -> str:
        return value


def csv_rows(lines: list[Line]) -> Iterator[str]:
    """One row per point (gaps included, with an empty value): time, metric, unit, a column per label, value."""
    labels = sorted({key for line in lines for key in line.labels})
    writer = csv.writer(_Echo())
    yield writer.writerow(["time", "metric", "unit", *labels, "value"])
    for line in lines:
        head = [line.metric, line.unit, *(line.labels.get(key, "") for key in labels)]
        for moment, value in line.points:
            yield writer.writerow([iso(moment), *head, "" if value is None else value])


SERIES_RESPONSES = {
    (200, "application/json"): SeriesSerializer,
    (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="time,metric,unit,<labels>,value rows."),
    400: OpenApiResponse(description="A bad parameter, by name: from, to or step (too many points, unknown step)."),
    404: OpenApiResponse(description="No such subject, or not one you may see."),
}
FORMAT = OpenApiParameter("format", str, enum=["json", "csv"], description="csv: the same as Accept: text/csv.")


class SeriesView(ServiceErrorsMixin, APIView):
    """One kind of subject's series; subclasses name the kind and find the subject."""

    permission_classes = [IsAuthenticated, CanSeeMonitoring]
    renderer_classes = [JSONRenderer, CSVRenderer]
    kind = ""

    def subject(self, key) -> tuple[object, dict]:
        """The subject the URL names, as the service takes it, and how the answer describes it; Http404 when the
        user may not see it."""
        raise NotImplementedError

    def handle_exception(self, exc):
        if isinstance(getattr(self.request, "accepted_renderer", None), CSVRenderer):
            self.request.accepted_renderer, self.request.accepted_media_type = JSONRenderer(), "application/json"
        return super().handle_exception(exc)

    def series(self, request, key):
        subject, described = self.subject(key)
        query = RangeQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        when = timeseries.window(self.kind, params.get("from"), params.get("to"), params.get("step"))
        lines = timeseries.LINES[self.kind](subject, when)
        if isinstance(request.accepted_renderer, CSVRenderer):
            response = StreamingHttpResponse(csv_rows(lines), content_type="text/csv; charset=utf-8")
            name = re.sub(r"[^A-Za-z0-9._-]", "_", f"{self.kind}-{key}-{when.step.name}")
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
            return response
        return Response(json_body(described, when, lines))


def _registry_entry(entry) -> dict:
    return {"id": entry.pk, "name": entry.name, "cluster": entry.cluster_id}


RANGE = [RangeQuerySerializer, FORMAT]


class TopicSeriesView(SeriesView):
    kind = timeseries.TOPIC

    def subject(self, key):
        topic = get_object_or_404(Topic.objects.visible_to(self.request.user), pk=key)
        return topic, {"kind": self.kind, **_registry_entry(topic)}

    @extend_schema(parameters=RANGE, responses=SERIES_RESPONSES)
    def get(self, request, pk):
        """A topic's messages and bytes stored per minute (``put_nums``, ``put_size``)."""
        return self.series(request, pk)


class ConsumerGroupSeriesView(SeriesView):
    kind = timeseries.CONSUMER_GROUP

    def subject(self, key):
        group = get_object_or_404(ConsumerGroup.objects.visible_to(self.request.user), pk=key)
        return group, {"kind": self.kind, **_registry_entry(group)}

    @extend_schema(parameters=RANGE, responses=SERIES_RESPONSES)
    def get(self, request, pk):
        """Per topic the group consumes: its rate (``consume_tps``), lag and lag time (``lag_seconds``)."""
        return self.series(request, pk)


class BrokerSeriesView(SeriesView):
    kind = timeseries.BROKER

    def subject(self, key):
        broker = get_object_or_404(Broker.objects.all(), pk=key)
        described = {"broker_name": broker.broker_name, "broker_id": broker.broker_id, "cluster": broker.cluster_id}
        return broker, {"kind": self.kind, "id": broker.pk, **described}

    @extend_schema(parameters=RANGE, responses=SERIES_RESPONSES)
    def get(self, request, pk):
        """A broker's messages stored and served per minute (``put_nums``, ``get_nums``)."""
        return self.series(request, pk)


class ClusterSeriesView(SeriesView):
    kind = timeseries.CLUSTER

    def subject(self, key):
        cluster = get_object_or_404(Cluster.objects.all(), pk=key)
        return cluster, {"kind": self.kind, "id": cluster.pk, "name": cluster.name}

    @extend_schema(parameters=RANGE, responses=SERIES_RESPONSES)
    def get(self, request, pk):
        """A cluster's messages stored and served per minute and its brokers down."""
        return self.series(request, pk)


class ServerSeriesView(SeriesView):
    kind = timeseries.SERVER

    def subject(self, key):
        if key not in timeseries.broker_hosts():
            raise Http404(key)
        return key, {"kind": self.kind, "host": key}

    @extend_schema(parameters=RANGE, responses=SERIES_RESPONSES)
    def get(self, request, host):
        """A broker host's CPU, load, memory, network, disk and TCP figures, and each file system's use."""
        return self.series(request, host)

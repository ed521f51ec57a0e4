"""Accepting consumers' reports of their consumption (the SDK listener container's per-minute reports,
``monitor/sdk``): per client, consumer group and topic, the messages its listener was called with, the failures by
exception class, and the consume-time histogram.

A batch is checked whole before anything is stored, as every client report is (:mod:`portal.services.client_reports`);
here: the topic (one the token's consumer group is registered as subscribed to), the count, the failures and the
histogram. A valid batch is stored in one transaction of upserts, so a batch sent again changes nothing
(:mod:`stats.store.consumers`, and :mod:`stats.store.tracing` for the reports' trace counts).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.models import ConsumerToken, Topic
from portal.services.client_reports import MISSING, ReportChecker, check_trace, fields_of, reports_of, trace_row
from stats.models import ConsumerClientMinute, TraceClientMinute
from stats.models.tracing import CONSUMER
from stats.store.consumers import store_consumer_minutes
from stats.store.tracing import store_trace_minutes

REPORT_FIELDS = frozenset(
    {"minute", "client_id", "client_addr", "consumer_group", "topic", "count", "failures", "histogram"}
)


def accept(token: ConsumerToken, body: Any, *, now: dt.datetime | None = None) -> int:
    """Validate a batch ``{"reports": [...]}`` sent with ``token`` and store it; returns the number of reports."""
    reports = reports_of(body)
    checker = _BatchChecker(token.consumer_group, now or timezone.now())
    rows = [row for index, report in enumerate(reports) for row in checker.check(index, report)]
    checker.raise_problems()
    with transaction.atomic():
        store_consumer_minutes(row for row in rows if isinstance(row, ConsumerClientMinute))
        store_trace_minutes(row for row in rows if isinstance(row, TraceClientMinute))
    return len(reports)


class _BatchChecker(ReportChecker):
    group_field = "consumer_group"
    unknown_group = gettext_lazy("Unknown consumer group %(name)s.")
    foreign_group = gettext_lazy("This token reports for consumer group %(group)s only, not for %(others)s.")
    count_mismatch = gettext_lazy("count is %(count)d but the histogram holds %(recorded)d consumed messages.")
    too_many_failures = gettext_lazy("More failures than consumed messages.")

    def __init__(self, group, now: dt.datetime):
        super().__init__(group, now)
        self.group_topics = set(group.topics.values_list("name", flat=True))

    def check(self, index: int, report: Any) -> list[ConsumerClientMinute | TraceClientMinute]:
        if not isinstance(report, dict):
            self.error(index, "non_field_errors", _("A report must be an object."))
            return []
        self.fields(index, report, fields_of(report, REPORT_FIELDS))
        trace = check_trace(self, index, report.get("trace", MISSING))
        minute = self.minute(index, report.get("minute", MISSING))
        client_id = self.name(index, "client_id", report.get("client_id", MISSING))
        client_addr = self.address(index, report.get("client_addr", MISSING))
        group = self.check_group(index, report.get("consumer_group", MISSING))
        topic = self._topic(index, report.get("topic", MISSING))
        count = self.count(index, report.get("count", MISSING))
        failures = self.exceptions(index, "failures", report.get("failures", MISSING))
        checked = self.histogram(index, report, count, failures, "failures")
        if self.rejected(index) or checked is None:
            return []
        histogram, max_ms = checked
        consumed = ConsumerClientMinute(
            cluster_id=self.cluster_id,
            consumer_group=group,
            topic=topic,
            client_id=client_id,
            client_addr=client_addr,
            minute=minute,
            count=count,
            failure_count=sum(failures.values()),
            failures=failures,
            histogram=histogram,
            max_ms=max_ms,
            updated_at=self.now,
        )
        key = {"group": group, "topic": topic, "client_id": client_id, "client_addr": client_addr, "minute": minute}
        return [consumed, *trace_row(self, CONSUMER, trace, **key)]

    def _topic(self, index: int, value: Any) -> str | None:
        topic = self.name(index, "topic", value)
        if topic is None or topic in self.group_topics:
            return topic
        if self.exists(Topic, topic):
            message = _("Consumer group %(group)s is not registered as subscribed to topic %(topic)s.")
        else:
            message = _("Unknown topic %(topic)s.")
        self.error(index, "topic", message % {"topic": topic, "group": self.group.name})
        return None

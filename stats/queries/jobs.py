"""The Spark job runs (:mod:`stats.models.jobs`) as admins follow them: which windows failed and are still failed
(no successful run of the same job over the same window since)."""

from __future__ import annotations

import datetime as dt

from django.db.models import Exists, OuterRef, QuerySet

from stats.models import JobRun, JobState


def failures_since(moment: dt.datetime) -> QuerySet[JobRun]:
    """The runs that failed after starting at or after ``moment``, newest first, each with ``recovered``: whether
    a later run of the same job over the same window succeeded."""
    later_success = JobRun.objects.filter(
        job=OuterRef("job"),
        window_start=OuterRef("window_start"),
        window_end=OuterRef("window_end"),
        state=JobState.SUCCEEDED,
        started_at__gt=OuterRef("started_at"),
    )
    return (
        JobRun.objects.filter(state=JobState.FAILED, started_at__gte=moment)
        .annotate(recovered=Exists(later_success))
        .order_by("-started_at")
    )

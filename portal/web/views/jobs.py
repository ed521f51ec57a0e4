"""The admins' page of the Spark job runs (rollups and rankings, ``sparkjobs``): every run, newest first, with
its window, progress, where it ran and, for a failed run, its error; filters by job, state and start day.

Portal admins only (``access.can_administer``), like the other /manage/ pages."""

import datetime as dt

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from portal import access
from portal.filters import JobRunFilterSet
from portal.web.admin_views import allowed_if
from portal.web.paging import filtered_page
from stats.models import JobRun
from stats.queries.jobs import failures_since

# The failures listed above the runs: those of the last week, marked when the window has been run again since.
FAILURES_SHOWN_FOR = dt.timedelta(days=7)


@login_required
@require_safe
@allowed_if(access.can_administer)
def job_run_list(request):
    now = timezone.now()
    context = filtered_page(request, JobRunFilterSet, JobRun.objects.all())
    context.update(now=now, failures=failures_since(now - FAILURES_SHOWN_FOR))
    return render(request, "portal/admin/job_runs.html", context)

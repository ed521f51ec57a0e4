"""``python manage.py sparkjob JOB [--start ISO] [--end ISO] [--refresh] [--master URL]``: run a Spark job by hand
for any window, with a progress display.

Without ``--start`` it runs the latest closed window; with ``--start`` the window starting then; with ``--end`` too,
every window from ``--start`` up to ``--end``. Times are ISO 8601 (UTC unless they name a zone). The run is recorded
like a scheduled one (admins see it on the job-runs page) and holds the same lease.
"""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError, OutputWrapper
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from sparkjobs.config import check_master, spark_config
from sparkjobs.extract.export import CLOSE_GRACE
from sparkjobs.jobs import JOBS
from sparkjobs.jobs.runner import InvalidWindow, run_job
from stats.models import JobRun, JobState

BAR = 30


def _moment(text: str) -> dt.datetime:
    moment = parse_datetime(text)
    if moment is None:
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise CommandError(f"not an ISO 8601 time: {text!r}") from None
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=dt.UTC)


class ProgressDisplay:
    """One redrawn line on a terminal; elsewhere (logs, pipes) a line per step."""

    def __init__(self, stream: OutputWrapper) -> None:
        self.stream, self.tty, self.last = stream, stream.isatty(), None

    def __call__(self, run: JobRun) -> None:
        filled = int(run.progress * BAR)
        line = (
            f"{run.job} {run.window_start:%Y-%m-%d %H:%M} [{'#' * filled}{'.' * (BAR - filled)}] "
            f"{run.progress:4.0%} {run.step}"
        )
        if self.tty:
            self.stream.write(f"\r\x1b[K{line}", ending="\n" if run.state != JobState.RUNNING else "")
            self.stream.flush()
        elif (run.step, run.state) != self.last:
            self.stream.write(line)
        self.last = (run.step, run.state)


class Command(BaseCommand):
    help = "Run a Spark job (rollups, rankings) for a window, with a progress display."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "job", choices=sorted(JOBS), help="; ".join(f"{j.name}: {j.description}" for j in JOBS.values())
        )
        parser.add_argument("--start", type=_moment, help="the window's start (default: the latest closed window)")
        parser.add_argument("--end", type=_moment, help="run every window from --start up to this time")
        parser.add_argument(
            "--refresh", action="store_true", help="export the window's hours again (a late correction)"
        )
        parser.add_argument("--master", type=check_master, help="Spark master for this run (default: SPARK_MASTER)")

    def handle(self, *args, job: str, start, end, refresh: bool, master: str | None, **options) -> None:
        definition = JOBS[job]
        now = timezone.now()
        if start is None:
            if end is not None:
                raise CommandError("--end needs --start")
            start = definition.last_closed(now - CLOSE_GRACE)
        starts = [start]
        if end is not None:
            while starts[-1] + definition.period < end:
                starts.append(starts[-1] + definition.period)
        config = spark_config().with_master(master)
        display = ProgressDisplay(self.stdout)
        failed = 0
        for window in starts:
            try:
                run = run_job(job, window, config=config, refresh=refresh, now=now, display=display)
            except InvalidWindow as error:
                raise CommandError(str(error)) from None
            except Exception as error:
                failed += 1
                self.stderr.write(f"{job} {window:%Y-%m-%d %H:%M} failed: {type(error).__name__}: {error}")
                continue
            self.stdout.write(
                f"{job} {run.window_start:%Y-%m-%d %H:%M} succeeded in {run.duration.total_seconds():.1f} s: "
                f"{run.rows_read} rows read, {run.rows_written} written"
            )
        if failed:
            raise CommandError(f"{failed} of {len(starts)} window(s) failed (see the job runs)")

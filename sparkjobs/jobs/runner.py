"""Running a job for a window under a lease, recording the run (:class:`stats.models.JobRun`).

One run of a job and window at a time: claiming inserts a ``running`` row, and a partial unique constraint lets
only one such row exist, so a second claim (another worker, a hand run) fails with :class:`JobAlreadyRunning`. A
running row whose process is gone stops blocking: its lease (renewed at every step) expired, or its worker is a
process of this host that no longer exists; the next claim marks it failed. Every run ends succeeded, or failed
with the error kept for the admins' job-runs page; a failed window is simply run again (extracted partitions are
kept, so it resumes where it stopped; its results replace the window's, so nothing is doubled).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from pyspark.sql import SparkSession

from sparkjobs.config import SparkConfig, spark_config
from sparkjobs.extract.export import CLOSE_GRACE, check_closed
from sparkjobs.extract.lake import Lake
from sparkjobs.jobs import JOBS, Job
from sparkjobs.jobs.base import JobContext
from sparkjobs.session import spark_session
from stats.models import JobRun, JobState

# A running run renews its lease at every step; one that stops renewing this long is taken for dead.
LEASE = dt.timedelta(minutes=15)
# Progress is written to the run's row at most this often (every step change is written).
PROGRESS_INTERVAL_SECONDS = 1.0
ERROR_CHARS = 20_000

Display = Callable[[JobRun], None]


class JobAlreadyRunning(RuntimeError):
    pass


class InvalidWindow(ValueError):
    """Not a window the job can run: not aligned on its period, or not closed yet."""


class LeaseLost(RuntimeError):
    pass


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _gone(worker: str) -> bool:
    """Whether ``worker`` was a process of this host that has since ended."""
    host, _, pid = worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def claim(job: Job, start: dt.datetime, end: dt.datetime, *, master: str) -> JobRun:
    """A new running run of the job and window, or JobAlreadyRunning (after retiring a dead holder's run)."""
    now = timezone.now()
    with transaction.atomic():
        for stale in JobRun.objects.select_for_update().filter(
            job=job.name, window_start=start, window_end=end, state=JobState.RUNNING
        ):
            if stale.lease_expires_at <= now:
                reason = f"lease expired at {stale.lease_expires_at.isoformat()}: its worker stopped without finishing"
            elif _gone(stale.worker):
                reason = f"its worker {stale.worker} is gone"
            else:
                continue
            stale.state, stale.finished_at, stale.error = JobState.FAILED, now, f"Abandoned: {reason}."
            stale.save(update_fields=["state", "finished_at", "error"])
        try:
            with transaction.atomic():
                return JobRun.objects.create(
                    job=job.name,
                    window_start=start,
                    window_end=end,
                    state=JobState.RUNNING,
                    worker=worker_name(),
                    master=master,
                    step="starting",
                    started_at=now,
                    lease_expires_at=now + LEASE,
                )
        except IntegrityError:
            running = JobRun.objects.filter(
                job=job.name, window_start=start, window_end=end, state=JobState.RUNNING
            ).first()
            holder = f" by {running.worker} since {running.started_at.isoformat()}" if running else ""
            raise JobAlreadyRunning(f"{job.name} for {start:%Y-%m-%d %H:%M} is already running{holder}") from None


@dataclass
class _Reporter:
    run: JobRun
    display: Display | None
    written_at: float = 0.0

    def __call__(self, fraction: float, step: str) -> None:
        run = self.run
        changed = step != run.step
        run.progress, run.step = min(max(fraction, 0.0), 1.0), step[:255]
        if self.display is not None:
            self.display(run)
        if not changed and time.monotonic() - self.written_at < PROGRESS_INTERVAL_SECONDS:
            return
        self.written_at = time.monotonic()
        run.lease_expires_at = timezone.now() + LEASE
        renewed = JobRun.objects.filter(pk=run.pk, state=JobState.RUNNING).update(
            progress=run.progress, step=run.step, lease_expires_at=run.lease_expires_at
        )
        if not renewed:
            raise LeaseLost(f"run {run.pk} of {run.job} was taken over (its lease had expired)")


def run_job(
    name: str,
    start: dt.datetime,
    *,
    config: SparkConfig | None = None,
    spark: SparkSession | None = None,
    refresh: bool = False,
    now: dt.datetime | None = None,
    display: Display | None = None,
) -> JobRun:
    """Run job ``name`` for the window starting at ``start``; returns the finished run. Raises the job's error
    (after recording it on the run), or before claiming anything JobAlreadyRunning or InvalidWindow."""
    job = JOBS[name]
    config = config or spark_config()
    now = now or timezone.now()
    try:
        start, end = job.window_of(start)
        check_closed(end, now)
    except ValueError as error:
        raise InvalidWindow(str(error)) from None
    run = claim(job, start, end, master=config.master)
    reporter = _Reporter(run, display)
    try:
        reporter(0.0, "starting Spark")
        session = spark or spark_session(config)
        context = JobContext(
            spark=session, lake=Lake(config.lake_uri), start=start, end=end, now=now, refresh=refresh, report=reporter
        )
        outcome = job.run(context)
    except BaseException as error:
        run.state, run.finished_at = JobState.FAILED, timezone.now()
        run.error = _describe(error)
        JobRun.objects.filter(pk=run.pk, state=JobState.RUNNING).update(
            state=run.state, finished_at=run.finished_at, error=run.error, progress=run.progress, step=run.step
        )
        if display is not None:
            display(run)
        raise
    run.state, run.finished_at, run.progress, run.step = JobState.SUCCEEDED, timezone.now(), 1.0, "done"
    run.rows_read, run.rows_written = outcome.rows_read, outcome.rows_written
    JobRun.objects.filter(pk=run.pk).update(
        state=run.state,
        finished_at=run.finished_at,
        progress=run.progress,
        step=run.step,
        rows_read=run.rows_read,
        rows_written=run.rows_written,
    )
    if display is not None:
        display(run)
    return run


def _describe(error: BaseException) -> str:
    """What went wrong, for an admin: the exception and where (a Spark error's JVM stack is cut short)."""
    text = "".join(traceback.format_exception(error))
    if len(text) > ERROR_CHARS:
        text = text[: ERROR_CHARS // 2] + "\n...\n" + text[-ERROR_CHARS // 2 :]
    return text


def due_windows(name: str, now: dt.datetime, lookback: dt.timedelta) -> list[dt.datetime]:
    """Closed windows of the job within ``lookback`` that have no succeeded (or running) run, oldest first: what a
    scheduled run does, so a window missed while workers were down is caught up."""
    job = JOBS[name]
    latest = job.last_closed(now - CLOSE_GRACE)
    starts = []
    start = latest
    while start > latest - lookback:
        starts.append(start)
        start -= job.period
    done = set(
        JobRun.objects.filter(job=name, window_start__in=starts)
        .filter(Q(state=JobState.SUCCEEDED) | Q(state=JobState.RUNNING, lease_expires_at__gt=now))
        .values_list("window_start", flat=True)
    )
    return sorted(start for start in starts if start not in done)


class JobsFailed(RuntimeError):
    pass


def run_scheduled(names: list[str], *, lookback: dt.timedelta, now: dt.datetime | None = None) -> list[JobRun]:
    """What the beat schedule runs: every due window of each job in turn (:func:`due_windows`), oldest first. A
    window already running elsewhere is left to that run; a failing window does not stop the others, and the
    failures are raised together at the end (each is recorded on its run)."""
    now = now or timezone.now()
    runs, failures = [], []
    for name in names:
        for start in due_windows(name, now, lookback):
            try:
                runs.append(run_job(name, start, now=now))
            except JobAlreadyRunning:
                continue
            except Exception as error:
                failures.append(f"{name} {start:%Y-%m-%d %H:%M}: {type(error).__name__}: {error}")
    if failures:
        raise JobsFailed("; ".join(failures))
    return runs

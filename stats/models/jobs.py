"""Runs of the Spark jobs (``sparkjobs``): one row per attempt, so failures stay visible to admins.

A run holds a lease: at most one run of a job for a window is ``running`` at a time (a partial unique constraint,
so two workers racing for it cannot both win). A running run renews ``lease_expires_at`` as it makes progress; a
run whose lease expired (its process died) is marked failed by the next claim of the same job and window.
"""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class JobState(models.TextChoices):
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Succeeded")
    FAILED = "failed", _("Failed")


class JobRun(models.Model):
    job = models.CharField(max_length=64)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.RUNNING)
    # 0..1, and what the run is doing now (e.g. "extract topic_minute 2026-11-22 07:00").
    progress = models.FloatField(default=0)
    step = models.CharField(max_length=255, blank=True)
    error = models.TextField(blank=True)
    # Where it runs (host and process id) and on which Spark master.
    worker = models.CharField(max_length=255, blank=True)
    master = models.CharField(max_length=255, blank=True)
    rows_read = models.BigIntegerField(null=True)
    rows_written = models.BigIntegerField(null=True)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    lease_expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["job", "window_start", "window_end"],
                condition=Q(state="running"),
                name="jobrun_one_running",
            )
        ]
        indexes = [
            models.Index(fields=["job", "window_start"], name="jobrun_window"),
            models.Index(fields=["state", "started_at"], name="jobrun_state"),
        ]
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.job} {self.window_start:%Y-%m-%d %H:%M} {self.state}"

    @property
    def duration(self):
        return None if self.finished_at is None else self.finished_at - self.started_at

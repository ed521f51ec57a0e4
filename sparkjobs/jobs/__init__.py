"""Jobs: each wires Extract, Transform and Load for one window (an hour or a day) and runs under a
:class:`stats.models.JobRun` lease (:mod:`sparkjobs.jobs.runner`). The registry of jobs is :data:`JOBS`."""

from sparkjobs.jobs.base import Job
from sparkjobs.jobs.rankings import RANKINGS
from sparkjobs.jobs.rollups import DAILY, HOURLY

JOBS: dict[str, Job] = {job.name: job for job in (HOURLY, DAILY, RANKINGS)}

__all__ = ["JOBS", "Job"]

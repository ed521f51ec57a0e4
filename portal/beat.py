"""The one list of periodic tasks. Settings pass the intervals in (``CELERY_BEAT_SCHEDULE =
beat_schedule(...)``), so every interval stays an environment-driven setting next to the others.

Every entry expires after one interval: when workers fall behind, a queued run that a newer one already replaces
is dropped instead of repeating the same work.
"""

from celery.schedules import crontab

# Server stats are sampled in five-minute slots (stats.models.SERVER_SLOT); running at each slot's start (UTC, the
# Celery time zone) puts every run in a slot of its own.
SERVER_STATS_EXPIRES_SECONDS = 300.0
# Per-minute collection: the fan-out (the portal's, chaining each cluster's collection with its warning evaluation)
# runs at the start of every minute (its tasks expire when the minute ends);
# retention runs every quarter of an hour and works off any backlog in bounded batches.
COLLECT_EXPIRES_SECONDS = 60.0
RETENTION_EXPIRES_SECONDS = 900.0
# Spark jobs (sparkjobs.tasks): the hourly rollups five minutes after each hour closes (its last minute collected
# and the export's grace over), the daily rollups and rankings twenty minutes after each UTC day closes. Each run
# catches up any window missed before, so a queued run that waited a whole period is dropped.
SPARK_HOURLY_EXPIRES_SECONDS = 3600.0
SPARK_DAILY_EXPIRES_SECONDS = 86400.0
# The Spark data's retention (rollups, rankings, job runs, lake partitions) once a day, away from the jobs' runs.
SPARK_RETENTION_EXPIRES_SECONDS = 86400.0


def beat_schedule(*, registry_sync_seconds: int) -> dict[str, dict]:
    return {
        "sync-all-registries": {
            "task": "portal.tasks.sync_all_registries",
            "schedule": float(registry_sync_seconds),
            "options": {"expires": float(registry_sync_seconds)},
        },
        "collect-all-server-stats": {
            "task": "monitor.tasks.servers.collect_all_server_stats",
            "schedule": crontab(minute="*/5"),
            "options": {"expires": SERVER_STATS_EXPIRES_SECONDS},
        },
        "collect-all-clusters": {
            "task": "portal.tasks.collect_all_clusters",
            "schedule": crontab(minute="*"),
            "options": {"expires": COLLECT_EXPIRES_SECONDS},
        },
        "delete-expired-minutes": {
            "task": "monitor.tasks.traffic.delete_expired_minutes",
            "schedule": crontab(minute="7-59/15"),
            "options": {"expires": RETENTION_EXPIRES_SECONDS},
        },
        "spark-hourly-rollups": {
            "task": "sparkjobs.tasks.run_hourly_rollups",
            "schedule": crontab(minute=5),
            "options": {"expires": SPARK_HOURLY_EXPIRES_SECONDS},
        },
        "spark-daily-jobs": {
            "task": "sparkjobs.tasks.run_daily_jobs",
            "schedule": crontab(minute=20, hour=0),
            "options": {"expires": SPARK_DAILY_EXPIRES_SECONDS},
        },
        "spark-delete-expired-data": {
            "task": "sparkjobs.tasks.delete_expired_spark_data",
            "schedule": crontab(minute=40, hour=3),
            "options": {"expires": SPARK_RETENTION_EXPIRES_SECONDS},
        },
    }

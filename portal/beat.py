"""The one list of periodic tasks. Settings pass the intervals in (``CELERY_BEAT_SCHEDULE =
beat_schedule(...)``), so every interval stays an environment-driven setting next to the others.

Every entry expires after one interval: when workers fall behind, a queued run that a newer one already replaces
is dropped instead of repeating the same work.
"""


def beat_schedule(*, registry_sync_seconds: int) -> dict[str, dict]:
    return {
        "sync-all-registries": {
            "task": "portal.tasks.sync_all_registries",
            "schedule": float(registry_sync_seconds),
            "options": {"expires": float(registry_sync_seconds)},
        },
    }

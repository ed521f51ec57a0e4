"""The Celery application: configuration from Django settings (``CELERY_*``), tasks from each app's ``tasks.py``.

Run a worker with ``celery -A portal worker`` and the scheduler with ``celery -A portal beat``; the periodic
tasks are listed in :mod:`portal.beat`.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("mqcloud")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# The Celery app is created with the project, so that ``@shared_task`` binds to it in every process.
from portal.celery import app as celery_app

__all__ = ["celery_app"]

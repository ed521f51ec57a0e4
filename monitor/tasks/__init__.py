"""Celery tasks of monitoring, one module per kind of collection. Celery's autodiscovery imports ``monitor.tasks``
only, so this package imports each module."""

from monitor.tasks import servers, traffic

__all__ = ["servers", "traffic"]

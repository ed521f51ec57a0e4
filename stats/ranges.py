"""The time ranges every chart page offers, and the one function that turns a request's ``?range=`` into bounds."""

import datetime as dt

from django.utils import timezone
from django.utils.translation import gettext_lazy as _

RANGES = {
    "1h": (dt.timedelta(hours=1), _("last hour")),
    "6h": (dt.timedelta(hours=6), _("6 hours")),
    "1d": (dt.timedelta(days=1), _("day")),
    "7d": (dt.timedelta(days=7), _("7 days")),
}
DEFAULT_RANGE = "1h"


def time_range(key: str | None, now: dt.datetime | None = None) -> tuple[str, dt.datetime, dt.datetime]:
    """(range key, since, until) for ``key``, falling back to the default for anything unknown; minute-aligned."""
    key = key if key in RANGES else DEFAULT_RANGE
    until = (now or timezone.now()).replace(second=0, microsecond=0)
    return key, until - RANGES[key][0], until

"""The words every warning summary is built from, per language: counts grouped by thousands, "N things" in the
forms a language counts them in, spans, rates, sizes, lists cut after a few items, times of day in the reader's time
zone, and sentences joined the way the language joins them. The family modules word their figures with these alone,
so a number reads the same in every summary."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext_lazy, pgettext

# Items a list names before "and N more".
LISTED = 3


def count(value: float) -> str:
    """12345 -> "12,345"; 2.5 -> "2.5" (grouped by thousands in both languages)."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def counted(forms, value: float) -> str:
    """ "N things", ``forms`` one of the ngettext_lazy pairs below (a fraction is plural in English)."""
    return forms % {"n": int(value) if float(value).is_integer() else 2, "count": count(value)}


# "N things", each in the forms a language counts them in.
CLIENT_ONLINE = ngettext_lazy("%(count)s client online", "%(count)s clients online", "n")
QUEUE = ngettext_lazy("%(count)s queue", "%(count)s queues", "n")
CLIENT = ngettext_lazy("%(count)s client", "%(count)s clients", "n")
TIME = ngettext_lazy("%(count)s time", "%(count)s times", "n")
MESSAGE = ngettext_lazy("%(count)s message", "%(count)s messages", "n")
SEND = ngettext_lazy("%(count)s send", "%(count)s sends", "n")
MINUTE = ngettext_lazy("%(count)s minute", "%(count)s minutes", "n")
PROBE_ROUND = ngettext_lazy("%(count)s probe round", "%(count)s probe rounds", "n")
QUICK_ATTEMPT = ngettext_lazy("%(count)s quick attempt", "%(count)s quick attempts", "n")


def duration(seconds: float) -> str:
    """A span for people: "45 s", "6 min 40 s", "2 h 5 min", "3 d 4 h" (in Chinese "6 分 40 秒")."""
    seconds = round(seconds)
    if seconds < 60:
        return _("%(seconds)s s") % {"seconds": seconds}
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        if secs:
            return _("%(minutes)s min %(seconds)s s") % {"minutes": minutes, "seconds": secs}
        return _("%(minutes)s min") % {"minutes": minutes}
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        if minutes:
            return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": minutes}
        return _("%(hours)s h") % {"hours": hours}
    days, hours = divmod(hours, 24)
    if hours:
        return _("%(days)s d %(hours)s h") % {"days": days, "hours": hours}
    return _("%(days)s d") % {"days": days}


def rate(per_second: float) -> str:
    """Messages per second: "12.5/s" (below 10 with one decimal)."""
    value = f"{per_second:,.1f}" if per_second < 10 else f"{per_second:,.0f}"
    return _("%(value)s/s") % {"value": value}


def size(value: float) -> str:
    """Bytes for people: "512 B", "3.2 MiB" (unit symbols are the same in every language)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def listing(items: list[str], limit: int = LISTED, total: int | None = None) -> str:
    """ "a, b and c"; beyond ``limit``: "a, b, c and 4 more" (``total``: how many there are, when ``items`` holds
    only the first of them)."""
    total = len(items) if total is None else max(total, len(items))
    separator = pgettext("list separator", ", ")
    if total > limit:
        return _("%(items)s and %(more)s more") % {"items": separator.join(items[:limit]), "more": total - limit}
    if len(items) <= 1:
        return "".join(items)
    return _("%(items)s and %(last)s") % {"items": separator.join(items[:-1]), "last": items[-1]}


def clock(iso: str, seconds: bool = False) -> str:
    """A stored instant as a time of day in the active time zone, with the zone: "09:58 UTC"."""
    moment = timezone.localtime(dt.datetime.fromisoformat(iso))
    return moment.strftime("%H:%M:%S %Z" if seconds else "%H:%M %Z")


def join_sentences(*parts: str) -> str:
    """Sentences one after the other (Chinese sets none of the space English puts between them)."""
    separator = "" if (translation.get_language() or "").startswith("zh") else " "
    return separator.join(part for part in parts if part)


def full_stop() -> str:
    return pgettext("end of a sentence", ".")


def where(broker_name: str, queue_id: int) -> str:
    return f"{broker_name}/{queue_id}"

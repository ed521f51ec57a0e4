"""In-app notifications: what the header's notification center shows each user."""

from __future__ import annotations

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone, translation

from portal.models import Notification, UserProfile


def language_of(user) -> str:
    """The language the user picked (Django's default for users who never did)."""
    language = UserProfile.objects.filter(user=user).values_list("language", flat=True).first()
    return language or settings.LANGUAGE_CODE


def notify(user, title, body="", link: str = "") -> Notification:
    """Store a notification for ``user``. ``title`` and ``body`` may be lazy translations (``gettext_lazy``,
    ``format_lazy``): they are rendered in the recipient's language, not in the language of whoever caused it."""
    with translation.override(language_of(user)):
        return Notification.objects.create(user=user, title=str(title)[:300], body=str(body), link=link)


def _unread(user) -> QuerySet[Notification]:
    return Notification.objects.filter(user=user, read_at__isnull=True)


def unread_count(user) -> int:
    if not (user and user.is_authenticated):
        return 0
    return _unread(user).count()


def mark_read(user, ids=None) -> int:
    """Mark the user's notifications ``ids`` (all of them for None) read; returns how many changed. Ids of other
    users' notifications are ignored."""
    unread = _unread(user)
    if ids is not None:
        unread = unread.filter(pk__in=list(ids))
    return unread.update(read_at=timezone.now())

"""Message searches and the per-message items of long message operations.

A search runs in the background (a Celery task streams the wire client's results into hits), so it has a state,
a progress and a cancel flag the task polls between slices. Hits keep what a result list shows, never a body: a
body is read from the broker when a permitted user opens the message. ``(search, broker_name, commit_log_offset)``
is unique, so a search run again after its worker died writes each message once.

A long operation (a resend of many messages, the re-delivery of a time range) is an approved application with one
``MessageOperationItem`` per message. Each item's ``uniq_key`` is derived from the application and the item's
index, so a run that died between sending and recording can ask the broker whether that message was already sent
instead of sending it twice.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.applications import Application
from portal.models.cluster import Cluster
from portal.models.people import is_portal_admin
from portal.models.registry import Topic


class SearchKind(models.TextChoices):
    KEY = "key", _("message key")
    UNIQUE_KEY = "unique_key", _("message id (UNIQ_KEY)")
    MSG_ID = "msg_id", _("message id")
    QUEUE_OFFSET = "queue_offset", _("queue and offset")
    TIME_RANGE = "time_range", _("store-time range")


class SearchState(models.TextChoices):
    QUEUED = "queued", _("queued")
    RUNNING = "running", _("running")
    DONE = "done", _("done")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


FINISHED_SEARCH_STATES = frozenset({SearchState.DONE, SearchState.FAILED, SearchState.CANCELLED})


class MessageSearchQuerySet(models.QuerySet):
    def visible_to(self, user) -> MessageSearchQuerySet:
        """A search is its requester's (portal admins see all)."""
        if is_portal_admin(user):
            return self
        if not (user and user.is_authenticated and user.is_active):
            return self.none()
        return self.filter(requested_by=user)


class MessageSearch(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="message_searches")
    topic = models.ForeignKey(Topic, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    topic_name = models.CharField(_("topic"), max_length=255)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="message_searches"
    )
    kind = models.CharField(_("search by"), max_length=16, choices=SearchKind.choices)
    key = models.CharField(_("key or message id"), max_length=255, blank=True)
    broker_name = models.CharField(_("broker name"), max_length=255, blank=True)
    queue_id = models.IntegerField(_("queue id"), null=True, blank=True)
    queue_offset = models.BigIntegerField(_("queue offset"), null=True, blank=True)
    begin_time = models.DateTimeField(_("from"), null=True, blank=True)
    end_time = models.DateTimeField(_("to"), null=True, blank=True)
    state = models.CharField(_("state"), max_length=16, choices=SearchState.choices, default=SearchState.QUEUED)
    progress = models.FloatField(_("progress"), default=0.0)
    found = models.PositiveIntegerField(_("messages found"), default=0)
    note = models.CharField(_("searching"), max_length=255, blank=True)
    error = models.TextField(_("error"), blank=True)
    cancel_requested = models.BooleanField(_("cancel requested"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    objects = MessageSearchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("message search")
        verbose_name_plural = _("message searches")

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.key} @ {self.topic_name}".strip()

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_SEARCH_STATES


class MessageSearchHit(models.Model):
    """One message a search found, as its list shows it (no body)."""

    search = models.ForeignKey(MessageSearch, on_delete=models.CASCADE, related_name="hits")
    broker_name = models.CharField(_("broker name"), max_length=255)
    queue_id = models.IntegerField(_("queue id"))
    queue_offset = models.BigIntegerField(_("queue offset"))
    commit_log_offset = models.BigIntegerField(_("commit-log offset"))
    offset_msg_id = models.CharField(_("offset message id"), max_length=64)
    uniq_key = models.CharField(_("message id (UNIQ_KEY)"), max_length=128, blank=True)
    keys = models.CharField(_("keys"), max_length=1024, blank=True)
    tags = models.CharField(_("tags"), max_length=255, blank=True)
    store_time = models.DateTimeField(_("stored at"))
    born_time = models.DateTimeField(_("born at"))
    store_host = models.CharField(_("store host"), max_length=64)
    born_host = models.CharField(_("born host"), max_length=64)
    body_size = models.PositiveIntegerField(_("body size"))
    reconsume_times = models.IntegerField(_("reconsume times"), default=0)

    class Meta:
        ordering = ["store_time", "broker_name", "commit_log_offset"]
        constraints = [
            models.UniqueConstraint(
                fields=["search", "broker_name", "commit_log_offset"], name="messagesearchhit_unique_message"
            )
        ]
        verbose_name = _("message found")
        verbose_name_plural = _("messages found")

    def __str__(self) -> str:
        return self.offset_msg_id


class OperationItemState(models.TextChoices):
    PENDING = "pending", _("pending")
    SENDING = "sending", _("sending")
    SENT = "sent", _("sent")
    FAILED = "failed", _("failed")


class MessageOperationItem(models.Model):
    """One message of a long message operation: where it comes from, where it goes, under which deterministic
    UNIQ_KEY, and whether it went. ``sending`` is written before the send, so an item found ``sending`` by a later
    run is one whose outcome is unknown: the broker is asked for its UNIQ_KEY before it is sent again."""

    application = models.ForeignKey(Application, on_delete=models.CASCADE, related_name="message_items")
    index = models.PositiveIntegerField(_("index"))
    source_id = models.CharField(_("source message id"), max_length=64)
    target_topic = models.CharField(_("target topic"), max_length=255)
    uniq_key = models.CharField(_("UNIQ_KEY of the copy"), max_length=32)
    state = models.CharField(
        _("state"), max_length=16, choices=OperationItemState.choices, default=OperationItemState.PENDING
    )
    sent_msg_id = models.CharField(_("offset message id of the copy"), max_length=64, blank=True)
    error = models.TextField(_("error"), blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["application", "index"]
        constraints = [
            models.UniqueConstraint(fields=["application", "index"], name="messageoperationitem_unique_index")
        ]
        verbose_name = _("message operation item")
        verbose_name_plural = _("message operation items")

    def __str__(self) -> str:
        return f"#{self.application_id}/{self.index} {self.source_id} -> {self.target_topic}"

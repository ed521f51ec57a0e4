"""Applications: the only way a business team changes what exists on a cluster.

An application is PENDING until a portal admin approves or rejects it (or the applicant cancels it). Approval acts
on the cluster through the wire client and records the result in one transaction; if the cluster call fails the
application stays PENDING with ``last_error`` set, and approving again is safe. The service in
``portal.services.applications`` is the only code that changes ``state``.
"""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models.cluster import Cluster
from portal.models.people import Team, is_portal_admin, team_ids
from portal.models.registry import ConsumerGroup, ProducerGroup, Topic

# How long an approval may hold its claim before another may take over (far above the few request timeouts an
# approval's cluster calls take).
CLAIM_TIMEOUT = datetime.timedelta(minutes=5)


class ApplicationKind(models.TextChoices):
    TOPIC_CREATE = "topic_create", _("new topic")
    TOPIC_CHANGE = "topic_change", _("topic change")
    TOPIC_DELETE = "topic_delete", _("topic deletion")
    CONSUMER_GROUP_CREATE = "consumer_group_create", _("new consumer group")
    CONSUMER_GROUP_DELETE = "consumer_group_delete", _("consumer group deletion")
    PRODUCER_GROUP_CREATE = "producer_group_create", _("new producer group")
    PRODUCER_GROUP_DELETE = "producer_group_delete", _("producer group deletion")
    TOPIC_ASSOCIATION = "topic_association", _("association with a topic")
    MESSAGE_RESEND = "message_resend", _("message resend")
    DEAD_LETTER_RESEND = "dead_letter_resend", _("dead-letter resend")
    REDELIVER_RANGE = "redeliver_range", _("re-delivery of a time range")
    OFFSET_RESET = "offset_reset", _("consumer offset reset")
    SKIP_RETRY_BACKLOG = "skip_retry_backlog", _("skip of the retry backlog")
    GROUP_PAUSE = "group_pause", _("consumer group pause")
    GROUP_RESUME = "group_resume", _("consumer group resume")
    GROUP_SETTINGS = "group_settings", _("consumer group settings")


class ApplicationState(models.TextChoices):
    PENDING = "pending", _("pending")
    APPROVED = "approved", _("approved")
    REJECTED = "rejected", _("rejected")
    CANCELLED = "cancelled", _("cancelled")


class ApplicationQuerySet(models.QuerySet):
    def visible_to(self, user) -> ApplicationQuerySet:
        if is_portal_admin(user):
            return self
        if not (user and user.is_authenticated and user.is_active):
            return self.none()
        decidable_associations = Q(
            kind=ApplicationKind.TOPIC_ASSOCIATION, topic__team_id__in=team_ids(user, admin_only=True)
        )
        return self.filter(Q(applicant=user) | Q(team_id__in=team_ids(user)) | decidable_associations)

    def decidable_by(self, user) -> ApplicationQuerySet:
        pending = self.filter(state=ApplicationState.PENDING)
        if is_portal_admin(user):
            return pending
        return pending.filter(
            kind=ApplicationKind.TOPIC_ASSOCIATION, topic__team_id__in=team_ids(user, admin_only=True)
        )


class Application(models.Model):
    """``payload`` holds what was asked for, per kind (validated and normalized by the service when submitted):

    - topic_create: ``{"name", "queue_nums", "ordered", "trace_enabled", "description"}``, plus
      ``"consumer_groups": [{"name", "message_model", "description", "tag_expression"}]`` when groups subscribed to
      the new topic are asked for with it (created by the same approval)
    - topic_change: ``{"name", "queue_nums", "trace_enabled"}`` (the changed keys only, besides the name)
    - consumer_group_create: ``{"name", "message_model", "description",
      "subscriptions": [{"topic_id", "tag_expression"}]}``
    - producer_group_create: ``{"name", "description", "topic_ids": [...]}``
    - topic_association: ``{"name", "role": "producer" | "consumer"}``
    - *_delete: ``{"name"}``
    - message_resend (target: the topic): ``{"msg_ids": [offset message ids], "to": "origin" | "retry",
      "group": name}`` (``group`` when ``to`` is retry)
    - dead_letter_resend (target: the consumer group): ``{"msg_ids": [offset ids of %DLQ% entries], "to"}``
    - redeliver_range (target: the consumer group): ``{"topic", "begin", "end"}`` (ISO times)
    - offset_reset (target: the consumer group): ``{"topic", "when": ISO time | "newest", "queue": null |
      {"broker_name", "queue_id"}}``
    - skip_retry_backlog, group_pause, group_resume: ``{}`` (target: the consumer group)
    - group_settings: the changed keys of ``retry_queue_nums``, ``retry_max_times``, ``consume_broadcast_enable``,
      ``which_broker_when_consume_slowly``, ``broker_id`` (target: the consumer group)

    An operation on messages or a consumer group keeps what its approval did in ``payload["outcome"]``.

    The target of a change, deletion or association is the ``topic`` / ``consumer_group`` / ``producer_group``
    foreign key; a creation fills it in when approved. ``"name"`` is the target's name, so an application still names
    it after the target is deleted (the foreign key is then empty).

    ``claim_token``/``claimed_at`` mark an approval in progress: approving claims the row with a conditional
    ``UPDATE ... WHERE state = pending AND not claimed`` before it acts on the cluster, so a second approval (or a
    rejection, or a cancellation) of the same application finds it claimed and does nothing. The claim is a committed
    row state rather than a held row lock, because the cluster call must not run inside a database transaction, and it
    works the same on SQLite (which has no ``SELECT ... FOR UPDATE``) and PostgreSQL. A claim older than
    ``CLAIM_TIMEOUT`` is considered abandoned (the approving process died) and may be taken over.
    """

    kind = models.CharField(_("kind"), max_length=32, choices=ApplicationKind.choices)
    state = models.CharField(
        _("state"), max_length=16, choices=ApplicationState.choices, default=ApplicationState.PENDING
    )
    applicant = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="applications", verbose_name=_("applicant")
    )
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="applications", verbose_name=_("team"))
    cluster = models.ForeignKey(
        Cluster, on_delete=models.PROTECT, related_name="applications", verbose_name=_("cluster")
    )
    payload = models.JSONField(_("request"), default=dict, blank=True)
    reason = models.TextField(_("reason"), blank=True, help_text=_("Why the applicant needs this."))
    topic = models.ForeignKey(Topic, on_delete=models.SET_NULL, null=True, blank=True, related_name="applications")
    consumer_group = models.ForeignKey(
        ConsumerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="applications"
    )
    producer_group = models.ForeignKey(
        ProducerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="applications"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="decided_applications",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    decision_reason = models.TextField(_("decision reason"), blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    attempts = models.PositiveIntegerField(_("approval attempts"), default=0)
    claim_token = models.CharField(_("approval in progress"), max_length=32, blank=True, editable=False)
    claimed_at = models.DateTimeField(_("approval started at"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = ApplicationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["state", "created_at"])]
        verbose_name = _("application")
        verbose_name_plural = _("applications")

    def __str__(self) -> str:
        return f"#{self.pk} {self.get_kind_display()} ({self.get_state_display()})"

    def get_absolute_url(self) -> str:
        return reverse("application-detail", args=[self.pk])

    @property
    def subject_name(self) -> str:
        """The name the application is about: the new name for a creation, the target's name otherwise."""
        target = self.topic or self.consumer_group or self.producer_group
        return target.name if target else str(self.payload.get("name", ""))

    @property
    def requested_consumer_groups(self) -> list[dict]:
        """The consumer groups a new topic's application asks for with it (none for other kinds)."""
        return self.payload.get("consumer_groups", []) if self.kind == ApplicationKind.TOPIC_CREATE else []

    @property
    def is_pending(self) -> bool:
        return self.state == ApplicationState.PENDING

    @property
    def is_processing(self) -> bool:
        """An approval is acting on the cluster right now (see the class docstring)."""
        return bool(self.claim_token) and timezone.now() < self.claimed_at + CLAIM_TIMEOUT

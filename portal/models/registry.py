"""Topics, consumer groups and producer groups as the registry knows them.

A registry entry is created by an approved application or imported from a cluster by the sync. Imported entries
have no team (unowned) until a portal admin adopts them; entries the sync no longer finds on the cluster are
flagged ``missing`` rather than deleted, so their history and ownership survive until someone decides.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.cluster import Cluster
from portal.models.people import Team, is_portal_admin, team_ids
from portal.models.validation import (
    validate_group_name,
    validate_queue_nums,
    validate_tag_expression,
    validate_topic_name,
)


class RegistryQuerySet(models.QuerySet):
    """Shared by topics, consumer groups and producer groups."""

    def visible_to(self, user) -> RegistryQuerySet:
        if self.model._meta.model_name == "topic" or (user and user.is_authenticated and user.is_active):
            return self
        return self.none()

    def editable_by(self, user) -> RegistryQuerySet:
        if is_portal_admin(user):
            return self
        return self.filter(team_id__in=team_ids(user))

    def owned_by(self, user) -> RegistryQuerySet:
        """What the user's teams own (the dashboard's "my topics"), whatever the user's admin powers."""
        return self.filter(team_id__in=team_ids(user))


class RegistryState(models.TextChoices):
    ACTIVE = "active", _("active")
    MISSING = "missing", _("missing from the cluster")


class Origin(models.TextChoices):
    APPLIED = "applied", _("applied for")
    IMPORTED = "imported", _("imported from the cluster")


class RegistryEntry(models.Model):
    """What topics and groups share: a cluster, a name unique on it, an owning team, and the sync's bookkeeping."""

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="+")
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="+", verbose_name=_("owning team")
    )
    description = models.TextField(_("description"), blank=True)
    state = models.CharField(_("state"), max_length=16, choices=RegistryState.choices, default=RegistryState.ACTIVE)
    origin = models.CharField(_("origin"), max_length=16, choices=Origin.choices, default=Origin.APPLIED)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    missing_since = models.DateTimeField(_("missing since"), null=True, blank=True)

    objects = RegistryQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_owned(self) -> bool:
        return self.team_id is not None

    def clean_fields(self, exclude=None):
        """Field checks plus RocketMQ's naming rules (``name_rules``), all reported together, keyed by field. New
        names get the portal's stricter charset; imported ones only the broker's."""
        errors: dict = {}
        try:
            super().clean_fields(exclude)
        except ValidationError as error:
            errors = error.update_error_dict(errors)
        if "name" not in (exclude or ()) and "name" not in errors:
            try:
                self.name_rules(self.name, new=self.origin == Origin.APPLIED)
            except ValidationError as error:
                errors["name"] = error.error_list
        if errors:
            raise ValidationError(errors)


class Topic(RegistryEntry):
    name = models.CharField(_("name"), max_length=127)
    queue_nums = models.PositiveIntegerField(_("queue count"), default=8, validators=[validate_queue_nums])
    ordered = models.BooleanField(_("ordered"), default=False)
    trace_enabled = models.BooleanField(_("trace enabled"), default=False)

    class Meta(RegistryEntry.Meta):
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="topic_unique_name")]
        indexes = [models.Index(fields=["team", "name"])]
        verbose_name = _("topic")
        verbose_name_plural = _("topics")

    name_rules = staticmethod(validate_topic_name)


class MessageModel(models.TextChoices):
    CLUSTERING = "CLUSTERING", _("clustering")
    BROADCASTING = "BROADCASTING", _("broadcasting")


class ConsumerGroup(RegistryEntry):
    name = models.CharField(_("name"), max_length=255)
    message_model = models.CharField(
        _("message model"), max_length=16, choices=MessageModel.choices, default=MessageModel.CLUSTERING
    )
    topics = models.ManyToManyField(Topic, through="Subscription", related_name="consumer_groups")
    # Applied by the SDK's consumers (monitor/sdk), which read it from the portal every minute; other clients ignore it.
    consume_throttle_tps = models.PositiveIntegerField(
        _("consumption throttle (messages per second)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "At most this many messages per second for the whole group, shared by its SDK consumers; "
            "empty for no limit. Clients without the SDK are not throttled."
        ),
    )

    class Meta(RegistryEntry.Meta):
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="consumergroup_unique_name")]
        indexes = [models.Index(fields=["team", "name"])]
        verbose_name = _("consumer group")
        verbose_name_plural = _("consumer groups")

    name_rules = staticmethod(validate_group_name)

    @property
    def broadcasting(self) -> bool:
        return self.message_model == MessageModel.BROADCASTING


class Subscription(models.Model):
    """A consumer group's subscription to one topic, with RocketMQ's tag expression (``*`` or ``TagA || TagB``)."""

    consumer_group = models.ForeignKey(ConsumerGroup, on_delete=models.CASCADE, related_name="subscriptions")
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="subscriptions")
    tag_expression = models.CharField(
        _("tag expression"), max_length=1024, default="*", validators=[validate_tag_expression]
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["consumer_group", "topic"], name="subscription_unique")]
        verbose_name = _("subscription")
        verbose_name_plural = _("subscriptions")

    def __str__(self) -> str:
        return f"{self.consumer_group} <- {self.topic} ({self.tag_expression})"


class ProducerGroup(RegistryEntry):
    """Producer groups live only in clients on the RocketMQ side; the registry records who produces to what."""

    name = models.CharField(_("name"), max_length=255)
    topics = models.ManyToManyField(Topic, related_name="producer_groups", blank=True)

    class Meta(RegistryEntry.Meta):
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="producergroup_unique_name")]
        verbose_name = _("producer group")
        verbose_name_plural = _("producer groups")

    name_rules = staticmethod(validate_group_name)


class AssociationRole(models.TextChoices):
    PRODUCER = "producer", _("producer")
    CONSUMER = "consumer", _("consumer")


class TopicAssociation(models.Model):
    """A user of another team producing to or consuming from a topic: they see its traffic and get its warnings."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="associations")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="topic_associations")
    role = models.CharField(_("role"), max_length=16, choices=AssociationRole.choices)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["topic", "user", "role"], name="association_unique")]
        verbose_name = _("topic association")
        verbose_name_plural = _("topic associations")

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.topic}"

"""Warnings: conditions the rules (``portal/services/warnings/rules/``) find in the collected data, their lifecycle,
and who hears about them through which channel.

A ``Warning`` is one problem of one subject (a consumer group lagging, a broker down) from the moment its condition
starts until it ends. Every transition — fired, repeated, resolved — is a ``WarningEvent`` row with the condition
snapshot that caused it; notifications are sent for events, never from a raw threshold check. Each attempt to tell a
user through a channel is a ``Delivery`` row. At most one warning per (cluster, kind, subject) is open at a time (a
partial unique constraint), which is also what keeps two concurrent evaluations from opening it twice.

Subjects are named the way RocketMQ names them and stored as plain (type, name) pairs so a warning outlives registry
changes; the nullable foreign keys link it to the registry row when there is one, for the pages' lists:

=============== ============================== ==================================================================
subject type    subject name                   kinds
=============== ============================== ==================================================================
topic           topic name                     traffic_surge, traffic_drop, trace_failures
consumer_group  consumer group name            consumer_lag, client_blocked, offset_moved, subscription_mismatch,
                                               consume_failures, dead_letters
producer_group  producer group name            produce_errors
nameserver      name server address host:port  nameserver_down
broker          broker name, or name@id for    broker_down, slave_lag (``broker-a@1``: the slave)
                one instance ("broker-a@1")
server          host name or IP (as SSH'd)     server_cpu, server_memory, server_disk, server_load, server_tcp
=============== ============================== ==================================================================
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from portal.models.cluster import Broker, Cluster
from portal.models.crypto import EncryptedTextField
from portal.models.registry import ConsumerGroup, ProducerGroup, Topic

# The vocabulary lives in warning_kinds (shared with the rules' parameters); most of the portal reads it from here.
from portal.models.warning_kinds import CLUSTER_SUBJECT_TYPES as CLUSTER_SUBJECT_TYPES
from portal.models.warning_kinds import KIND_SUBJECT as KIND_SUBJECT
from portal.models.warning_kinds import Severity, SubjectType, ThresholdScope, WarningKind
from portal.models.warning_kinds import is_cluster_kind as is_cluster_kind
from portal.models.warning_params import validate_threshold


class WarningThreshold(models.Model):
    """Parameters of one kind's rule: the default (set by portal admins; overrides the built-in defaults in
    ``portal/models/warning_params.py``) or an override for one topic or group (set by its owning team).
    ``params`` holds only the keys that differ; validation per kind lives in the thresholds service and runs from
    ``clean()``."""

    kind = models.CharField(_("warning type"), max_length=32, choices=WarningKind.choices)
    scope = models.CharField(_("scope"), max_length=16, choices=ThresholdScope.choices, default=ThresholdScope.DEFAULT)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, null=True, blank=True, related_name="warning_thresholds")
    consumer_group = models.ForeignKey(
        ConsumerGroup, on_delete=models.CASCADE, null=True, blank=True, related_name="warning_thresholds"
    )
    producer_group = models.ForeignKey(
        ProducerGroup, on_delete=models.CASCADE, null=True, blank=True, related_name="warning_thresholds"
    )
    params = models.JSONField(_("parameters"), default=dict, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind"], condition=Q(scope="default"), name="warningthreshold_unique_default"
            ),
            models.UniqueConstraint(
                fields=["kind", "topic"], condition=Q(scope="topic"), name="warningthreshold_unique_topic"
            ),
            models.UniqueConstraint(
                fields=["kind", "consumer_group"],
                condition=Q(scope="consumer_group"),
                name="warningthreshold_unique_consumer_group",
            ),
            models.UniqueConstraint(
                fields=["kind", "producer_group"],
                condition=Q(scope="producer_group"),
                name="warningthreshold_unique_producer_group",
            ),
        ]
        verbose_name = _("warning threshold")
        verbose_name_plural = _("warning thresholds")

    def __str__(self) -> str:
        target = self.target
        return f"{self.kind} ({target})" if target is not None else f"{self.kind} (default)"

    @property
    def target(self):
        return {
            ThresholdScope.TOPIC: self.topic,
            ThresholdScope.CONSUMER_GROUP: self.consumer_group,
            ThresholdScope.PRODUCER_GROUP: self.producer_group,
        }.get(self.scope)

    def clean(self):
        validate_threshold(self)


class WarningState(models.TextChoices):
    OPEN = "open", _("open")
    RESOLVED = "resolved", _("resolved")


class Warning(models.Model):
    """One problem of one subject, open from its condition's start until its end (the domain's word; it shadows
    Python's builtin ``Warning`` wherever imported, which the portal never uses)."""

    kind = models.CharField(_("warning type"), max_length=32, choices=WarningKind.choices)
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="warnings")
    subject_type = models.CharField(_("subject type"), max_length=16, choices=SubjectType.choices)
    subject_name = models.CharField(_("subject"), max_length=255)
    topic = models.ForeignKey(Topic, on_delete=models.SET_NULL, null=True, blank=True, related_name="warnings")
    consumer_group = models.ForeignKey(
        ConsumerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="warnings"
    )
    producer_group = models.ForeignKey(
        ProducerGroup, on_delete=models.SET_NULL, null=True, blank=True, related_name="warnings"
    )
    broker = models.ForeignKey(Broker, on_delete=models.SET_NULL, null=True, blank=True, related_name="warnings")
    host = models.CharField(_("server"), max_length=255, blank=True)
    severity = models.CharField(_("severity"), max_length=16, choices=Severity.choices, default=Severity.WARNING)
    state = models.CharField(_("state"), max_length=16, choices=WarningState.choices, default=WarningState.OPEN)
    opened_at = models.DateTimeField(_("opened at"))
    last_seen_at = models.DateTimeField(_("last seen at"))
    last_notified_at = models.DateTimeField(_("last notified at"))
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    acknowledged_at = models.DateTimeField(_("acknowledged at"), null=True, blank=True)
    summary = models.TextField(_("summary"))
    details = models.JSONField(_("details"), default=dict, blank=True)

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "kind", "subject_type", "subject_name"],
                condition=Q(state="open"),
                name="warning_one_open_per_subject",
            ),
        ]
        indexes = [
            models.Index(fields=["cluster", "state", "kind"]),
            models.Index(fields=["cluster", "-opened_at"]),
            models.Index(fields=["topic", "-opened_at"]),
            models.Index(fields=["consumer_group", "-opened_at"]),
            models.Index(fields=["producer_group", "-opened_at"]),
            models.Index(fields=["broker", "-opened_at"]),
            models.Index(fields=["host", "-opened_at"]),
            models.Index(fields=["state", "-opened_at"]),
        ]
        verbose_name = _("warning")
        verbose_name_plural = _("warnings")

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.subject_name}"

    @property
    def is_open(self) -> bool:
        return self.state == WarningState.OPEN


class Transition(models.TextChoices):
    FIRED = "fired", _("fired")
    REPEATED = "repeated", _("repeated")
    RESOLVED = "resolved", _("resolved")


class WarningEvent(models.Model):
    """One transition of a warning, with the condition as the rules saw it (``snapshot``: summary, details,
    severity; for ``resolved`` the last one seen). Deliveries are made for events."""

    warning = models.ForeignKey(Warning, on_delete=models.CASCADE, related_name="events")
    transition = models.CharField(_("transition"), max_length=16, choices=Transition.choices)
    at = models.DateTimeField(_("at"))
    summary = models.TextField(_("summary"))
    snapshot = models.JSONField(_("snapshot"), default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["warning", "-at"]), models.Index(fields=["-at"])]
        verbose_name = _("warning event")
        verbose_name_plural = _("warning events")

    def __str__(self) -> str:
        return f"{self.warning} {self.transition} at {self.at:%Y-%m-%d %H:%M}"


class ChannelKind(models.TextChoices):
    IN_APP = "in_app", _("in-app notification")
    EMAIL = "email", _("e-mail")
    DINGTALK = "dingtalk", _("DingTalk robot")
    WECOM = "wecom", _("WeCom robot")
    SLACK = "slack", _("Slack incoming webhook")
    WEBHOOK = "webhook", _("generic JSON webhook")
    ALERTMANAGER = "alertmanager", _("Prometheus Alertmanager")


class Channel(models.Model):
    """A way to reach one user. ``config`` is a JSON object stored encrypted (webhook URLs carry tokens); its keys
    per kind are validated by the transport classes in ``portal/services/warnings/channels/``. Every user has an
    in-app and an e-mail channel created on first need (the defaults); webhooks are added by the user."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warning_channels")
    kind = models.CharField(_("kind"), max_length=16, choices=ChannelKind.choices)
    name = models.CharField(_("name"), max_length=100)
    config = EncryptedTextField(_("configuration"), blank=True, default="")
    enabled = models.BooleanField(_("enabled"), default=True)
    last_error = models.TextField(_("last error"), blank=True)
    last_error_at = models.DateTimeField(_("last error at"), null=True, blank=True)
    last_success_at = models.DateTimeField(_("last success at"), null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(_("consecutive failures"), default=0)
    disabled_at = models.DateTimeField(_("disabled at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["owner", "kind", "name"]
        constraints = [
            # One built-in in-app channel per user (it has nothing to configure).
            models.UniqueConstraint(fields=["owner"], condition=Q(kind="in_app"), name="channel_one_in_app"),
        ]
        verbose_name = _("channel")
        verbose_name_plural = _("channels")

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class WarningSubscription(models.Model):
    """A user's choice for one kind: the channels to use. No row = the defaults (see
    ``portal/services/warnings/recipients.py``); a row with no channels = do not tell me about this kind."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warning_subscriptions")
    kind = models.CharField(_("warning type"), max_length=32, choices=WarningKind.choices)
    channels = models.ManyToManyField(Channel, blank=True, related_name="subscriptions")
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["user", "kind"]
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="warningsubscription_unique_kind")]
        verbose_name = _("warning subscription")
        verbose_name_plural = _("warning subscriptions")

    def __str__(self) -> str:
        return f"{self.user} / {self.kind}"


class Mute(models.Model):
    """A user silencing one subject (a topic or a group, any subject type) of a cluster until a time; ``kind``
    blank = every kind."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warning_mutes")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    subject_type = models.CharField(_("subject type"), max_length=16, choices=SubjectType.choices)
    subject_name = models.CharField(_("subject"), max_length=255)
    kind = models.CharField(_("warning type"), max_length=32, choices=WarningKind.choices, blank=True)
    until = models.DateTimeField(_("muted until"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["-until"]
        indexes = [models.Index(fields=["cluster", "subject_type", "subject_name", "until"])]
        verbose_name = _("mute")
        verbose_name_plural = _("mutes")

    def __str__(self) -> str:
        return f"{self.user} mutes {self.subject_name} until {self.until:%Y-%m-%d %H:%M}"


class DeliveryStatus(models.TextChoices):
    SENDING = "sending", _("sending")
    SENT = "sent", _("sent")
    FAILED = "failed", _("failed")
    SKIPPED = "skipped", _("skipped")


class Delivery(models.Model):
    """One attempt to tell ``user`` about ``event`` through ``channel``. An attempt first inserts a ``sending`` row;
    the partial unique constraint on (event, user, channel) over sending/sent rows is the claim, so a retried or
    duplicated task never sends twice (failed attempts do not block a retry). ``skipped`` records a channel that
    was disabled when the event came."""

    event = models.ForeignKey(WarningEvent, on_delete=models.CASCADE, related_name="deliveries")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="warning_deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries")
    channel_kind = models.CharField(_("channel kind"), max_length=16, choices=ChannelKind.choices)
    status = models.CharField(_("status"), max_length=16, choices=DeliveryStatus.choices)
    error = models.TextField(_("error"), blank=True)
    attempted_at = models.DateTimeField(_("attempted at"))

    class Meta:
        ordering = ["-attempted_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["event", "user", "channel"],
                condition=Q(status__in=["sending", "sent"]),
                name="delivery_once_per_channel",
            ),
        ]
        indexes = [models.Index(fields=["user", "-attempted_at"]), models.Index(fields=["event", "user"])]
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")

    def __str__(self) -> str:
        return f"{self.event} -> {self.user} via {self.channel_kind}: {self.status}"

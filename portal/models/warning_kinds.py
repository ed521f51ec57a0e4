"""The warnings' vocabulary: the kinds of warning, the subjects they are raised for, their severities and the
scopes a threshold can have. Plain choices with no model behind them, so the models, the rules
(``portal/services/warnings/rules/``) and the thresholds' parameters (``warning_params.py``) share them without
importing each other; ``portal/models/warnings.py`` explains the kinds per subject."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class WarningKind(models.TextChoices):
    CONSUMER_LAG = "consumer_lag", _("consumer lag")
    CLIENT_BLOCKED = "client_blocked", _("consumer client blocked")
    OFFSET_MOVED = "offset_moved", _("consumer offset error (OFFSET_MOVED_EVENT)")
    SUBSCRIPTION_MISMATCH = "subscription_mismatch", _("inconsistent subscriptions in a consumer group")
    CONSUME_FAILURES = "consume_failures", _("consume failures (messages sent back for retry)")
    DEAD_LETTERS = "dead_letters", _("messages reaching the dead letter queue")
    CLIENT_CONSUME_FAILURES = "client_consume_failures", _("consume failures reported by SDK consumers")
    PRODUCE_ERRORS = "produce_errors", _("produce errors")
    TRAFFIC_SURGE = "traffic_surge", _("topic traffic surge")
    TRAFFIC_DROP = "traffic_drop", _("topic traffic drop")
    TRACE_FAILURES = "trace_failures", _("message trace records dropped or not written")
    NAMESERVER_DOWN = "nameserver_down", _("name server down")
    BROKER_DOWN = "broker_down", _("broker down")
    SLAVE_LAG = "slave_lag", _("slave falling behind its master")
    SERVER_CPU = "server_cpu", _("server CPU usage")
    SERVER_MEMORY = "server_memory", _("server memory usage")
    SERVER_DISK = "server_disk", _("server disk usage")
    SERVER_LOAD = "server_load", _("server load")
    SERVER_TCP = "server_tcp", _("server TCP connections")


class SubjectType(models.TextChoices):
    TOPIC = "topic", _("topic")
    CONSUMER_GROUP = "consumer_group", _("consumer group")
    PRODUCER_GROUP = "producer_group", _("producer group")
    NAMESERVER = "nameserver", _("name server")
    BROKER = "broker", _("broker")
    SERVER = "server", _("server")


# The subject type each kind is raised for (see the module docstring). Topic, group and producer kinds go to the
# subject's owners and associated users; the cluster-level ones (name server, broker, server) to portal admins.
KIND_SUBJECT: dict[str, str] = {
    WarningKind.CONSUMER_LAG: SubjectType.CONSUMER_GROUP,
    WarningKind.CLIENT_BLOCKED: SubjectType.CONSUMER_GROUP,
    WarningKind.OFFSET_MOVED: SubjectType.CONSUMER_GROUP,
    WarningKind.SUBSCRIPTION_MISMATCH: SubjectType.CONSUMER_GROUP,
    WarningKind.CONSUME_FAILURES: SubjectType.CONSUMER_GROUP,
    WarningKind.DEAD_LETTERS: SubjectType.CONSUMER_GROUP,
    WarningKind.CLIENT_CONSUME_FAILURES: SubjectType.CONSUMER_GROUP,
    WarningKind.PRODUCE_ERRORS: SubjectType.PRODUCER_GROUP,
    WarningKind.TRAFFIC_SURGE: SubjectType.TOPIC,
    WarningKind.TRAFFIC_DROP: SubjectType.TOPIC,
    WarningKind.TRACE_FAILURES: SubjectType.TOPIC,
    WarningKind.NAMESERVER_DOWN: SubjectType.NAMESERVER,
    WarningKind.BROKER_DOWN: SubjectType.BROKER,
    WarningKind.SLAVE_LAG: SubjectType.BROKER,
    WarningKind.SERVER_CPU: SubjectType.SERVER,
    WarningKind.SERVER_MEMORY: SubjectType.SERVER,
    WarningKind.SERVER_DISK: SubjectType.SERVER,
    WarningKind.SERVER_LOAD: SubjectType.SERVER,
    WarningKind.SERVER_TCP: SubjectType.SERVER,
}
CLUSTER_SUBJECT_TYPES = frozenset({SubjectType.NAMESERVER, SubjectType.BROKER, SubjectType.SERVER})


def is_cluster_kind(kind: str) -> bool:
    """Whether warnings of ``kind`` concern the cluster's machinery (admins hear them) rather than a team's entry."""
    return KIND_SUBJECT[kind] in CLUSTER_SUBJECT_TYPES


class Severity(models.TextChoices):
    INFO = "info", _("info")
    WARNING = "warning", _("warning")
    CRITICAL = "critical", _("critical")


class ThresholdScope(models.TextChoices):
    DEFAULT = "default", _("default (all subjects)")
    TOPIC = "topic", _("topic")
    CONSUMER_GROUP = "consumer_group", _("consumer group")
    PRODUCER_GROUP = "producer_group", _("producer group")

"""Serializers of the message API. Input serializers only shape a request (types, bounds that fit the database and
the wire: 64-bit offsets, printable text) for a service, which validates the rest and decides who may ask; output
serializers render what the services return."""

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal.api.serializers import VisiblePrimaryKeyRelatedField
from portal.inputs import (
    MAX_BODY_LENGTH,
    MAX_BROKER_NAME_LENGTH,
    MAX_ID,
    MAX_KEY_LENGTH,
    MAX_QUEUE_ID,
    MAX_SEARCH_KEY_LENGTH,
    is_printable,
)
from portal.models import ApplicationKind, Cluster, ConsumerGroup, MessageSearch, MessageSearchHit, SearchKind, Topic


def _printable(value: str) -> str:
    if not is_printable(value):
        raise serializers.ValidationError(_("Control characters are not allowed."))
    return value


class TextField(serializers.CharField):
    def __init__(self, **kwargs):
        kwargs.setdefault("validators", []).append(_printable)
        super().__init__(**kwargs)


class SearchRequestSerializer(serializers.Serializer):
    """A search to start; which fields a kind needs is the service's to check (400 naming them)."""

    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.all())
    topic = TextField(max_length=255, help_text=_("A topic name (also %RETRY%group and %DLQ%group)."))
    kind = serializers.ChoiceField(choices=SearchKind.choices)
    key = TextField(max_length=MAX_SEARCH_KEY_LENGTH, required=False, allow_blank=True, default="")
    broker_name = TextField(max_length=MAX_BROKER_NAME_LENGTH, required=False, allow_blank=True, default="")
    queue_id = serializers.IntegerField(min_value=0, max_value=MAX_QUEUE_ID, required=False, allow_null=True)
    queue_offset = serializers.IntegerField(min_value=0, max_value=MAX_ID, required=False, allow_null=True)
    begin = serializers.DateTimeField(required=False, allow_null=True)
    end = serializers.DateTimeField(required=False, allow_null=True)


class SearchSerializer(serializers.ModelSerializer):
    """A search with its progress: ``progress`` 0..1, ``found`` so far, ``finished`` once done, failed or
    cancelled."""

    finished = serializers.BooleanField(source="is_finished", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)

    class Meta:
        model = MessageSearch
        fields = [
            "id",
            "cluster",
            "cluster_name",
            "topic_name",
            "kind",
            "key",
            "broker_name",
            "queue_id",
            "queue_offset",
            "begin_time",
            "end_time",
            "state",
            "progress",
            "found",
            "note",
            "error",
            "finished",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class HitSerializer(serializers.ModelSerializer):
    class Meta:
        model = MessageSearchHit
        fields = [
            "broker_name",
            "queue_id",
            "queue_offset",
            "commit_log_offset",
            "offset_msg_id",
            "uniq_key",
            "keys",
            "tags",
            "store_time",
            "born_time",
            "store_host",
            "born_host",
            "body_size",
            "reconsume_times",
        ]
        read_only_fields = fields


class BodySerializer(serializers.Serializer):
    text = serializers.CharField(allow_null=True, help_text=_("The body as UTF-8 text; null when it is not."))
    json = serializers.CharField(allow_null=True, help_text=_("The body as indented JSON; null when it is not JSON."))
    hex = serializers.CharField()


class MessageSerializer(serializers.Serializer):
    """A message: ``fields`` named as Java's MessageExt JSON (properties included), the body three ways when the
    user may see bodies (``body_visible``), else ``body`` null."""

    fields = serializers.DictField(help_text=_("Every field of the message but the body, named as in MessageExt."))
    body_visible = serializers.BooleanField()
    body = BodySerializer(allow_null=True)


class TrackSerializer(serializers.Serializer):
    consumer_group = serializers.CharField()
    track_type = serializers.CharField(
        help_text=_("CONSUMED, CONSUMED_BUT_FILTERED, NOT_CONSUME_YET, NOT_ONLINE, UNKNOWN")
    )
    exception_desc = serializers.CharField(allow_null=True, allow_blank=True)


class ResendSerializer(serializers.Serializer):
    to = serializers.ChoiceField(choices=["origin", "retry"])
    group = TextField(max_length=255, required=False, allow_blank=True, default="")
    reason = TextField(max_length=1000, required=False, allow_blank=True, default="")


class DeadLetterResendSerializer(serializers.Serializer):
    msg_ids = serializers.ListField(
        child=serializers.RegexField(r"^[0-9A-Fa-f]{32}(?:[0-9A-Fa-f]{24})?$"), min_length=1, max_length=1000
    )
    to = serializers.ChoiceField(choices=["origin", "retry"])
    reason = TextField(max_length=1000, required=False, allow_blank=True, default="")


class DeadLetterSerializer(serializers.Serializer):
    topic = serializers.CharField()
    msg_id = serializers.CharField()
    original_topic = serializers.CharField(allow_null=True)
    original_msg_id = serializers.CharField(allow_null=True)
    keys = serializers.CharField(allow_null=True, allow_blank=True)
    reconsume_times = serializers.IntegerField()
    stored_at = serializers.DateTimeField()


class QueueSerializer(serializers.Serializer):
    broker_name = TextField(max_length=MAX_BROKER_NAME_LENGTH)
    queue_id = serializers.IntegerField(min_value=0, max_value=MAX_QUEUE_ID)


class ResetRequestSerializer(serializers.Serializer):
    """Where to move the group's offsets on a topic: ``when`` a time (ISO 8601) or ``"newest"``; one queue or all."""

    topic = TextField(max_length=255)
    when = serializers.CharField(max_length=64, help_text=_('An ISO 8601 time, or "newest" (skip the backlog).'))
    queue = QueueSerializer(required=False, allow_null=True, default=None)

    def validate_when(self, value):
        if value == "newest":
            return value
        parsed = serializers.DateTimeField().to_internal_value(value)
        return parsed


class QueueResetSerializer(serializers.Serializer):
    broker_name = serializers.CharField()
    queue_id = serializers.IntegerField()
    min_offset = serializers.IntegerField()
    max_offset = serializers.IntegerField()
    current_offset = serializers.IntegerField()
    target_offset = serializers.IntegerField()


# The operations the API asks for, and what each is about.
GROUP_KINDS = [
    ApplicationKind.DEAD_LETTER_RESEND,
    ApplicationKind.REDELIVER_RANGE,
    ApplicationKind.OFFSET_RESET,
    ApplicationKind.SKIP_RETRY_BACKLOG,
    ApplicationKind.GROUP_PAUSE,
    ApplicationKind.GROUP_RESUME,
    ApplicationKind.GROUP_SETTINGS,
]
OPERATION_KINDS = [ApplicationKind.MESSAGE_RESEND, *GROUP_KINDS]


class OperationSerializer(serializers.Serializer):
    """A message or consumer-group operation: filed as an application, or carried out at once for a portal admin.
    ``payload`` per kind as the Application model documents it; ``topic`` for message_resend, ``consumer_group``
    for the others."""

    kind = serializers.ChoiceField(
        choices=ApplicationKind.choices, help_text=_("One of: %s.") % ", ".join(OPERATION_KINDS)
    )
    topic = VisiblePrimaryKeyRelatedField(queryset=Topic.objects.all(), required=False, allow_null=True)
    consumer_group = VisiblePrimaryKeyRelatedField(
        queryset=ConsumerGroup.objects.all(), required=False, allow_null=True
    )
    payload = serializers.JSONField()
    reason = TextField(max_length=1000, required=False, allow_blank=True, default="")

    def validate_kind(self, value):
        if value not in OPERATION_KINDS:
            raise serializers.ValidationError(_("Not a message or consumer-group operation."))
        return value

    def validate(self, data):
        needs = "topic" if data["kind"] == ApplicationKind.MESSAGE_RESEND else "consumer_group"
        if not data.get(needs):
            raise serializers.ValidationError({needs: _("Choose what the operation is about.")})
        if not isinstance(data["payload"], dict):
            raise serializers.ValidationError({"payload": _("An object.")})
        return data


class TestMessageSerializer(serializers.Serializer):
    body = serializers.CharField(max_length=MAX_BODY_LENGTH, trim_whitespace=False)
    tags = TextField(max_length=MAX_KEY_LENGTH, required=False, allow_blank=True, default="")
    keys = serializers.ListField(
        child=TextField(max_length=MAX_KEY_LENGTH), required=False, default=list, max_length=32
    )


class SendResultSerializer(serializers.Serializer):
    msg_id = serializers.CharField()
    offset_msg_id = serializers.CharField()
    broker_name = serializers.CharField()
    queue_id = serializers.IntegerField()
    queue_offset = serializers.IntegerField()


class ExportRequestSerializer(serializers.Serializer):
    begin = serializers.DateTimeField()
    end = serializers.DateTimeField()
    output = serializers.ChoiceField(
        choices=["jsonl", "csv"], default="jsonl", help_text=_("JSON lines or CSV (not `format`: DRF takes that one).")
    )

    def validate(self, data):
        if data["begin"] > data["end"]:
            raise serializers.ValidationError({"end": _("The end comes before the beginning.")})
        return data

"""Serializers of warnings, channels, subscriptions and mutes. Output serializers render; input serializers only
shape a request (types, known ids, one's own channels) for the warning services, which validate the rest."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.models import Channel, ChannelKind, Cluster, Delivery, Mute, SubjectType, Warning, WarningEvent, WarningKind
from portal.services.warnings import channels, summaries

SUMMARY_HELP = _(
    "Worded from details in the language of the request (signed in to the portal: the user's own; with a token: "
    "Accept-Language, else English); details holds the figures themselves."
)


class WarningSerializer(serializers.ModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    acknowledged_by = serializers.CharField(source="acknowledged_by.username", read_only=True, allow_null=True)
    summary = serializers.SerializerMethodField(help_text=SUMMARY_HELP)

    class Meta:
        model = Warning
        fields = [
            "id",
            "kind",
            "state",
            "severity",
            "cluster",
            "cluster_name",
            "subject_type",
            "subject_name",
            "topic",
            "consumer_group",
            "producer_group",
            "broker",
            "host",
            "summary",
            "details",
            "opened_at",
            "last_seen_at",
            "last_notified_at",
            "resolved_at",
            "acknowledged_by",
            "acknowledged_at",
        ]
        read_only_fields = fields

    def get_summary(self, warning) -> str:
        return summaries.of_warning(warning)


class WarningEventSerializer(serializers.ModelSerializer):
    summary = serializers.SerializerMethodField(help_text=SUMMARY_HELP)

    class Meta:
        model = WarningEvent
        fields = ["id", "transition", "at", "summary", "snapshot"]
        read_only_fields = fields

    def get_summary(self, event) -> str:
        return summaries.of_event(event)


class DeliverySerializer(serializers.ModelSerializer):
    event = serializers.PrimaryKeyRelatedField(read_only=True)
    user = serializers.CharField(source="user.username", read_only=True)
    channel_name = serializers.CharField(source="channel.name", read_only=True, allow_null=True)

    class Meta:
        model = Delivery
        fields = ["id", "event", "user", "channel", "channel_name", "channel_kind", "status", "error", "attempted_at"]
        read_only_fields = fields


class WarningDetailSerializer(WarningSerializer):
    """A warning with its events and the deliveries the requesting user may see (their own; everyone's for portal
    admins), as the view passes them in the context."""

    events = WarningEventSerializer(many=True, read_only=True)
    deliveries = serializers.SerializerMethodField()

    class Meta(WarningSerializer.Meta):
        fields = [*WarningSerializer.Meta.fields, "events", "deliveries"]
        read_only_fields = fields

    @extend_schema_field(DeliverySerializer(many=True))
    def get_deliveries(self, warning) -> list[dict]:
        return DeliverySerializer(self.context["deliveries"], many=True).data


class ChannelSerializer(serializers.ModelSerializer):
    """A channel as shown back: ``sends_to`` is what may be shown of its settings (an address, a webhook's host;
    never its token or secret)."""

    sends_to = serializers.SerializerMethodField()

    class Meta:
        model = Channel
        fields = [
            "id",
            "kind",
            "name",
            "sends_to",
            "enabled",
            "last_error",
            "last_error_at",
            "last_success_at",
            "consecutive_failures",
            "disabled_at",
            "created_at",
        ]
        read_only_fields = fields

    def get_sends_to(self, channel) -> str:
        return channels.describe(channel)


class ChannelConfigSerializer(serializers.Serializer):
    """A channel's settings, by kind: ``address`` (e-mail; blank: the account's), ``url`` (webhooks), ``secret``
    (DingTalk signing, generic webhook HMAC). Written only, never shown back."""

    address = serializers.CharField(required=False, allow_blank=True)
    url = serializers.CharField(required=False, allow_blank=True)
    secret = serializers.CharField(required=False, allow_blank=True)


class ChannelCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=[choice for choice in ChannelKind.choices if choice[0] != ChannelKind.IN_APP]
    )
    name = serializers.CharField(max_length=100)
    config = ChannelConfigSerializer()


class ChannelUpdateSerializer(serializers.Serializer):
    """Everything optional: a left-out config key (or a blank secret) keeps its stored value."""

    name = serializers.CharField(max_length=100, required=False)
    enabled = serializers.BooleanField(required=False)
    config = ChannelConfigSerializer(required=False)


class OwnChannelField(serializers.PrimaryKeyRelatedField):
    """One of the requesting user's channels; anyone else's id is "does not exist"."""

    def get_queryset(self):
        return super().get_queryset().filter(owner=self.context["request"].user)


class WarningSubscriptionSerializer(serializers.Serializer):
    """One warning type's channels for the requesting user; ``default``: they never chose (in-app and e-mail)."""

    kind = serializers.ChoiceField(choices=WarningKind.choices, read_only=True)
    channels = OwnChannelField(many=True, queryset=Channel.objects.all())
    default = serializers.BooleanField(read_only=True)


class MuteSerializer(serializers.ModelSerializer):
    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.all())
    subject_type = serializers.ChoiceField(choices=SubjectType.choices)
    kind = serializers.ChoiceField(
        choices=WarningKind.choices, required=False, allow_blank=True, help_text=_("Blank: every type.")
    )

    class Meta:
        model = Mute
        fields = ["id", "cluster", "subject_type", "subject_name", "kind", "until", "created_at"]
        read_only_fields = ["id", "created_at"]

"""Serializers of the registry, clusters and people. Output serializers are read-only renderings; input serializers
only shape a request (types, known ids) for a service, which validates the rest with the model's own rules."""

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal.inputs import MAX_ID
from portal.models import (
    AuditEntry,
    Broker,
    Cluster,
    ConsumerGroup,
    Membership,
    Notification,
    ProducerGroup,
    Subscription,
    Team,
    TeamRole,
    Topic,
)
from portal.services.subscriptions import Difference


class VisiblePrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """A registry id the requesting user may see (``visible_to``); any other id is "does not exist"."""

    def get_queryset(self):
        return super().get_queryset().visible_to(self.context["request"].user)


class BrokerSerializer(serializers.ModelSerializer):
    class Meta:
        model = Broker
        fields = [
            "id",
            "cluster",
            "cluster_name",
            "broker_name",
            "broker_id",
            "address",
            "role",
            "version",
            "present",
            "last_seen_at",
        ]
        read_only_fields = fields


class ClusterSerializer(serializers.ModelSerializer):
    """The ACL keys are never shown back; ``acl_enabled`` says whether the portal signs its requests."""

    name_servers = serializers.SlugRelatedField(many=True, read_only=True, slug_field="address")
    acl_enabled = serializers.BooleanField(read_only=True)
    brokers = BrokerSerializer(many=True, read_only=True)

    class Meta:
        model = Cluster
        fields = [
            "id",
            "name",
            "description",
            "name_servers",
            "acl_enabled",
            "trace_topic",
            "created_at",
            "last_synced_at",
            "last_sync_error",
            "brokers",
        ]
        read_only_fields = fields


class ClusterRegistrationSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True, default="")
    namesrv_addrs = serializers.ListField(child=serializers.CharField(), help_text=_("host:port of each name server"))
    acl_access_key = serializers.CharField(required=False, allow_blank=True, default="")
    acl_secret_key = serializers.CharField(required=False, allow_blank=True, default="", write_only=True)
    trace_topic = serializers.CharField(required=False)


class ClusterUpdateSerializer(serializers.Serializer):
    """Only the fields sent change. Leaving out ``acl_secret_key`` keeps the stored secret; a new name-server list
    or new credentials are checked by discovering the brokers again."""

    name = serializers.CharField(required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    namesrv_addrs = serializers.ListField(child=serializers.CharField(), required=False)
    acl_access_key = serializers.CharField(required=False, allow_blank=True)
    acl_secret_key = serializers.CharField(required=False, allow_blank=True, write_only=True)
    trace_topic = serializers.CharField(required=False)


class RegistryEntrySerializer(serializers.ModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True, allow_null=True)

    common_fields = [
        "id",
        "name",
        "cluster",
        "cluster_name",
        "team",
        "team_name",
        "description",
        "state",
        "origin",
        "created_at",
        "updated_at",
        "missing_since",
    ]


class TopicSerializer(RegistryEntrySerializer):
    class Meta:
        model = Topic
        fields = [*RegistryEntrySerializer.common_fields, "queue_nums", "ordered", "trace_enabled"]
        read_only_fields = fields


class SubscriptionSerializer(serializers.ModelSerializer):
    topic_name = serializers.CharField(source="topic.name", read_only=True)

    class Meta:
        model = Subscription
        fields = ["topic", "topic_name", "tag_expression"]
        read_only_fields = fields


class ConsumerGroupSerializer(RegistryEntrySerializer):
    subscriptions = SubscriptionSerializer(many=True, read_only=True)

    class Meta:
        model = ConsumerGroup
        fields = [*RegistryEntrySerializer.common_fields, "message_model", "subscriptions"]
        read_only_fields = fields


class ReportedSubscriptionSerializer(serializers.Serializer):
    expression = serializers.CharField()
    expression_type = serializers.CharField(help_text=_("TAG or SQL92; empty for minutes collected before it was kept"))
    clients = serializers.ListField(child=serializers.CharField(), help_text=_("the client ids reporting it"))


class TopicSubscriptionCheckSerializer(serializers.Serializer):
    topic = serializers.CharField()
    topic_id = serializers.IntegerField(allow_null=True, help_text=_("the registry's topic of this name, if any"))
    registered_expression = serializers.CharField(source="registered", allow_null=True)
    reported = ReportedSubscriptionSerializer(many=True)
    not_subscribing = serializers.ListField(
        child=serializers.CharField(), help_text=_("answering clients that leave out a topic others subscribe")
    )
    differences = serializers.ListField(child=serializers.ChoiceField(choices=Difference.choices))


class SubscriptionCheckSerializer(serializers.Serializer):
    minute = serializers.DateTimeField(
        allow_null=True, help_text=_("the collected minute the clients reported in; null: no recent collection")
    )
    clients = serializers.ListField(child=serializers.CharField(), help_text=_("the online clients"))
    unanswered = serializers.ListField(
        child=serializers.CharField(), help_text=_("online clients that did not report their subscription")
    )
    inconsistent = serializers.BooleanField(help_text=_("the clients do not all subscribe alike"))
    differs = serializers.BooleanField(help_text=_("any difference between the registry and the clients"))
    topics = TopicSubscriptionCheckSerializer(many=True)
    group_topics = serializers.ListField(
        child=serializers.CharField(), help_text=_("retry and dead-letter topics the clients subscribe")
    )


class ConsumerGroupDetailSerializer(ConsumerGroupSerializer):
    """A group with its registered subscriptions judged against what its clients report (set by the view)."""

    subscription_check = SubscriptionCheckSerializer(read_only=True)

    class Meta(ConsumerGroupSerializer.Meta):
        fields = [*ConsumerGroupSerializer.Meta.fields, "subscription_check"]
        read_only_fields = fields


class TopicRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Topic
        fields = ["id", "name"]
        read_only_fields = fields


class ProducerGroupSerializer(RegistryEntrySerializer):
    topics = TopicRefSerializer(many=True, read_only=True)

    class Meta:
        model = ProducerGroup
        fields = [*RegistryEntrySerializer.common_fields, "topics"]
        read_only_fields = fields


class DescriptionSerializer(serializers.Serializer):
    description = serializers.CharField(allow_blank=True)


class AdoptionSerializer(serializers.Serializer):
    team = serializers.PrimaryKeyRelatedField(queryset=Team.objects.all())


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "name", "description", "created_at"]
        read_only_fields = ["id", "created_at"]
        # Uniqueness is the service's to check (with the model's own message), not a second query here.
        extra_kwargs = {"name": {"validators": []}}


class MembershipSerializer(serializers.ModelSerializer):
    username = serializers.SlugRelatedField(
        source="user", slug_field="username", queryset=get_user_model().objects.filter(is_active=True)
    )
    role = serializers.ChoiceField(choices=TeamRole.choices, default=TeamRole.MEMBER)

    class Meta:
        model = Membership
        fields = ["username", "role", "joined_at"]
        read_only_fields = ["joined_at"]


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "created_at",
            "actor_name",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "cluster",
            "before",
            "after",
            "note",
        ]
        read_only_fields = fields


class NotificationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Notification
        fields = ["id", "title", "body", "link", "created_at", "read_at"]
        read_only_fields = fields


class MarkReadSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        allow_null=True,
        default=None,
        help_text=_("The notifications to mark read; omit to mark all of them."),
    )

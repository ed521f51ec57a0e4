"""Serializers of applications. The input serializer checks only types and that the ids exist and are visible;
``portal.services.applications.submit`` validates the payload per kind and decides whether the user may apply."""

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal.api.serializers import VisiblePrimaryKeyRelatedField
from portal.inputs import validate_storable_json
from portal.models import (
    Application,
    ApplicationKind,
    Cluster,
    ConsumerGroup,
    MessageModel,
    ProducerGroup,
    Team,
    Topic,
)


class TopicGroupSerializer(serializers.Serializer):
    """A consumer group asked for with a new topic, subscribed to it (``payload.consumer_groups`` of a
    ``topic_create``)."""

    name = serializers.CharField(help_text=_("The consumer group's name, as a consumer-group application takes it."))
    message_model = serializers.ChoiceField(choices=MessageModel.choices, default=MessageModel.CLUSTERING)
    tag_expression = serializers.CharField(default="*", help_text=_("The group's subscription to the new topic."))
    description = serializers.CharField(allow_blank=True, default="")


class ApplicationSerializer(serializers.ModelSerializer):
    applicant = serializers.CharField(source="applicant.username", read_only=True)
    consumer_groups = TopicGroupSerializer(
        source="requested_consumer_groups",
        many=True,
        read_only=True,
        help_text=_("The consumer groups a topic_create creates with the topic when approved (empty otherwise)."),
    )
    team_name = serializers.CharField(source="team.name", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, allow_null=True)

    class Meta:
        model = Application
        fields = [
            "id",
            "kind",
            "state",
            "subject_name",
            "applicant",
            "team",
            "team_name",
            "cluster",
            "cluster_name",
            "payload",
            "consumer_groups",
            "reason",
            "topic",
            "consumer_group",
            "producer_group",
            "decided_by",
            "decided_at",
            "decision_reason",
            "last_error",
            "attempts",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class ApplicationSubmissionSerializer(serializers.Serializer):
    """What ``submit`` takes. ``payload`` depends on ``kind`` (see the Application model); its field errors come
    back nested under ``payload``."""

    kind = serializers.ChoiceField(choices=ApplicationKind.choices)
    team = serializers.PrimaryKeyRelatedField(queryset=Team.objects.all())
    cluster = serializers.PrimaryKeyRelatedField(
        queryset=Cluster.objects.all(),
        required=False,
        allow_null=True,
        default=None,
        help_text=_("Defaults to the target's"),
    )
    payload = serializers.DictField(
        required=False,
        default=dict,
        validators=[validate_storable_json],
        help_text=_(
            "What is asked for, per kind (e.g. topic_create: name, queue_nums, ordered, trace_enabled, description, "
            "and optionally consumer_groups, a list of {name, message_model, tag_expression, description} created "
            "with the topic by the same approval)."
        ),
    )
    reason = serializers.CharField(required=False, allow_blank=True, default="")
    topic = VisiblePrimaryKeyRelatedField(queryset=Topic.objects.all(), required=False, allow_null=True, default=None)
    consumer_group = VisiblePrimaryKeyRelatedField(
        queryset=ConsumerGroup.objects.all(), required=False, allow_null=True, default=None
    )
    producer_group = VisiblePrimaryKeyRelatedField(
        queryset=ProducerGroup.objects.all(), required=False, allow_null=True, default=None
    )


class DecisionSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")

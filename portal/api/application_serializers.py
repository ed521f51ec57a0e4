"""Serializers of applications. The input serializer checks only types and that the ids exist and are visible;
``portal.services.applications.submit`` validates the payload per kind and decides whether the user may apply."""

import dataclasses

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.serializers import VisiblePrimaryKeyRelatedField
from portal.inputs import validate_storable_json
from portal.models import (
    Application,
    ApplicationKind,
    Cluster,
    ConsumerGroup,
    MessageModel,
    MessageOperationItem,
    ProducerGroup,
    Team,
    Topic,
)
from portal.services.applications.messages import ITEM_KINDS
from portal.services.messages.operations import operation_progress


class TopicGroupSerializer(serializers.Serializer):
    """A consumer group asked for with a new topic, subscribed to it (``payload.consumer_groups`` of a
    ``topic_create``)."""

    name = serializers.CharField(help_text=_("The consumer group's name, as a consumer-group application takes it."))
    message_model = serializers.ChoiceField(choices=MessageModel.choices, default=MessageModel.CLUSTERING)
    tag_expression = serializers.CharField(default="*", help_text=_("The group's subscription to the new topic."))
    description = serializers.CharField(allow_blank=True, default="")


class OperationProgressSerializer(serializers.Serializer):
    """How far a message operation is: its messages sent, failed (tried again by a run again), and still to go."""

    total = serializers.IntegerField()
    sent = serializers.IntegerField()
    failed = serializers.IntegerField()
    pending = serializers.IntegerField(help_text=_("Not sent yet, or being sent."))


class OperationItemSerializer(serializers.ModelSerializer):
    """One message of a message operation: the source (offset message id), where its copy goes, under which
    UNIQ_KEY, and whether it went (``sent_msg_id``: the copy's offset message id)."""

    class Meta:
        model = MessageOperationItem
        fields = ["index", "source_id", "target_topic", "uniq_key", "state", "sent_msg_id", "error", "updated_at"]
        read_only_fields = fields


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
    operation_progress = serializers.SerializerMethodField(
        help_text=_(
            "For a message operation (message_resend, dead_letter_resend, redeliver_range): how many of its messages "
            "were sent, failed, or are still to go (all 0 until approved); null for other kinds. The messages "
            "themselves: /applications/{id}/items/. The outcome of any operation is payload.outcome."
        )
    )

    @extend_schema_field(OperationProgressSerializer(allow_null=True))
    def get_operation_progress(self, application) -> dict | None:
        if application.kind not in ITEM_KINDS:
            return None
        return dataclasses.asdict(operation_progress(application))

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
            "operation_progress",
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

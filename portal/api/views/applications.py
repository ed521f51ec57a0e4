"""Applications: submitted, approved, rejected and cancelled through ``portal.services.applications``, which decides
who may do what and validates the payload. Each user sees the applications ``visible_to`` them."""

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated

from portal.api.application_serializers import (
    ApplicationSerializer,
    ApplicationSubmissionSerializer,
    DecisionSerializer,
    OperationItemSerializer,
)
from portal.api.errors import field_errors
from portal.api.views.base import ServiceViewSet
from portal.filters import ApplicationFilterSet
from portal.models import Application
from portal.services import applications
from portal.services.messages import operations

TOPIC_WITH_GROUPS = OpenApiExample(
    "A new topic with two consumer groups",
    request_only=True,
    value={
        "kind": "topic_create",
        "team": 1,
        "cluster": 1,
        "reason": "order events for billing and audit",
        "payload": {
            "name": "ORDER_EVENTS",
            "queue_nums": 8,
            "consumer_groups": [
                {"name": "GID_BILLING", "tag_expression": "paid || refunded"},
                {"name": "GID_AUDIT", "message_model": "BROADCASTING"},
            ],
        },
    },
)

DECISION_RESPONSES = {
    200: ApplicationSerializer,
    409: OpenApiResponse(description="The application is no longer pending."),
}


class ApplicationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    queryset = Application.objects.select_related(
        "applicant", "team", "cluster", "decided_by", "topic", "consumer_group", "producer_group"
    )
    serializer_class = ApplicationSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = ApplicationFilterSet
    ordering_fields = ["created_at", "updated_at", "state", "kind"]

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)

    def validation_error_body(self, error):
        """Errors of the submission's own fields stay at the top; the payload's fields nest under ``payload``."""
        return field_errors(error, nest_under="payload", top_level=frozenset(ApplicationSubmissionSerializer().fields))

    @extend_schema(
        request=ApplicationSubmissionSerializer,
        responses={201: ApplicationSerializer},
        examples=[TOPIC_WITH_GROUPS],
    )
    def create(self, request):
        """Apply for a creation, change, deletion or association (``kind``), on behalf of one of your teams. A new
        topic may carry the consumer groups that will read it (``payload.consumer_groups``): one approval creates
        them all, and an invalid group refuses the whole application (errors under ``payload.consumer_groups``)."""
        submitted = applications.submit(request.user, **self.validated(ApplicationSubmissionSerializer))
        return self.rendered(submitted, status.HTTP_201_CREATED)

    @extend_schema(
        request=DecisionSerializer,
        responses={
            **DECISION_RESPONSES,
            502: OpenApiResponse(description="The cluster call failed; the application stays pending (retry safe)."),
        },
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        """Approve and carry out the application on the cluster."""
        application = self.get_object()
        reason = self.validated(DecisionSerializer)["reason"]
        return self.rendered(applications.approve(application, by=request.user, reason=reason))

    @extend_schema(request=DecisionSerializer, responses=DECISION_RESPONSES)
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        """Reject the application; a reason is required."""
        application = self.get_object()
        reason = self.validated(DecisionSerializer)["reason"]
        return self.rendered(applications.reject(application, by=request.user, reason=reason))

    @extend_schema(request=None, responses=DECISION_RESPONSES)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Withdraw a pending application: the applicant only (403 for anyone else; a portal admin rejects)."""
        return self.rendered(applications.cancel(self.get_object(), by=request.user))

    @extend_schema(responses=OperationItemSerializer(many=True))
    @action(detail=True, methods=["get"], filter_backends=[])
    def items(self, request, pk=None):
        """A message operation's messages in order, a page at a time, each with its state and its copy's message
        id once sent (empty for other applications, and before approval)."""
        page = self.paginate_queryset(self.get_object().message_items.order_by("index"))
        return self.get_paginated_response(OperationItemSerializer(page, many=True).data)

    @extend_schema(
        request=None,
        responses={
            202: ApplicationSerializer,
            400: OpenApiResponse(description="Not an approved message operation, or a run is still at it."),
            403: OpenApiResponse(description="Only portal admins run an operation again."),
        },
    )
    @action(detail=True, methods=["post"], url_path="run-again")
    def run_again(self, request, pk=None):
        """Send what an approved message operation failed to send, or what a stalled run left (portal admins;
        audited). Runs in the background; nothing already sent is sent again. Poll ``operation_progress``."""
        application = self.get_object()
        operations.run_operation_again(request.user, application)
        return self.rendered(application, status.HTTP_202_ACCEPTED)

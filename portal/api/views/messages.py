"""Messages over the API: searches (start, status, hits, cancel), a message with its body when the user may see
bodies, where it went, its trace, its resend; a topic's test message and export; a consumer group's retry and dead
letters, offset-reset preview, client diagnostics, and its operations (filed as applications; a portal admin's are
carried out at once). The same services as the pages, so both say the same."""

import dataclasses
import time

from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from monitor.messages.present import body_views, message_fields
from portal import access
from portal.api import message_serializers as ms
from portal.api.application_serializers import ApplicationSerializer
from portal.api.views.base import ServiceViewSet
from portal.inputs import EXPORT_CONTENT_TYPES, MAX_CLIENT_ID_LENGTH, message_id_or_404, printable_or_empty
from portal.models import ApplicationKind, Cluster, ConsumerGroup, Topic
from portal.services.messages import bodies, inspection, operations, searches, traces
from portal.services.messages.clients import describe
from portal.services.messages.direct import file_or_act

NOT_A_MESSAGE = OpenApiResponse(description="No such message on that topic (or a malformed id).")
MSG_PATH = [
    OpenApiParameter("cluster_pk", OpenApiTypes.INT, OpenApiParameter.PATH),
    OpenApiParameter("topic_name", OpenApiTypes.STR, OpenApiParameter.PATH),
    OpenApiParameter("msg_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="The offset message id."),
]


class MessageSearchViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    """Searches run in the background: start one, poll its status (``progress``, ``found``, ``finished``), read its
    hits page by page (no cap), or cancel it. Each user sees their own searches; portal admins everyone's."""

    serializer_class = ms.SearchSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return searches.visible_searches(self.request.user).order_by("-created_at")

    @extend_schema(request=ms.SearchRequestSerializer, responses={201: ms.SearchSerializer})
    def create(self, request):
        """Start a search (by key, unique key, message id, queue and offset, or store-time range)."""
        data = self.validated(ms.SearchRequestSerializer)
        search = searches.start_search(request.user, data.pop("cluster"), **data)
        return self.rendered(search, status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ms.SearchSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        """Stop the search; the hits found so far stay."""
        return self.rendered(searches.cancel_search(request.user, self.get_object()))

    @extend_schema(responses=ms.HitSerializer(many=True))
    @action(detail=True, methods=["get"])
    def hits(self, request, pk=None):
        """The messages found, in store-time order, a page at a time."""
        page = self.paginate_queryset(searches.hits(self.get_object()))
        return self.get_paginated_response(ms.HitSerializer(page, many=True).data)


def _message(request, cluster_pk, topic_name, msg_id):
    cluster = get_object_or_404(Cluster, pk=cluster_pk)
    if not message_id_or_404(msg_id):
        raise NotFound()
    try:
        return cluster, *bodies.message_for_view(request.user, cluster, topic_name, msg_id)
    except bodies.MessageNotFound as missing:
        raise NotFound(str(missing)) from None


class MessageViewSet(ServiceViewSet):
    """One message, by cluster, topic and offset message id."""

    queryset = Cluster.objects.all()
    permission_classes = [IsAuthenticated]
    serializer_class = ms.MessageSerializer

    @extend_schema(parameters=MSG_PATH, responses={200: ms.MessageSerializer, 404: NOT_A_MESSAGE})
    def retrieve(self, request, cluster_pk=None, topic_name=None, msg_id=None):
        """Every field of the message; the body (text, JSON, hex) only for those who may see the topic's bodies
        (its owning team, associated teams, portal admins), each such view audited."""
        _cluster, msg, may_see_body = _message(request, cluster_pk, topic_name, msg_id)
        body = dataclasses.asdict(body_views(msg.body)) if may_see_body else None
        return Response({"fields": message_fields(msg), "body_visible": may_see_body, "body": body})

    @extend_schema(parameters=MSG_PATH, responses={200: ms.TrackSerializer(many=True), 404: NOT_A_MESSAGE})
    @action(detail=True, methods=["get"])
    def tracks(self, request, cluster_pk=None, topic_name=None, msg_id=None):
        """Where the message went, per consumer group subscribed to its topic."""
        cluster, msg, _may_see_body = _message(request, cluster_pk, topic_name, msg_id)
        return Response(ms.TrackSerializer(bodies.tracks(cluster, msg), many=True).data)

    @extend_schema(parameters=MSG_PATH, responses={200: OpenApiTypes.OBJECT, 404: NOT_A_MESSAGE})
    @action(detail=True, methods=["get"])
    def trace(self, request, cluster_pk=None, topic_name=None, msg_id=None):
        """The message's trace from the cluster's trace topic: its sends (``pubs``), each consumer group's consume
        attempts, its transaction end and recall, the expected groups that have not consumed it (``missing``) and
        the slow legs (``slow``); times in epoch milliseconds. No body: whoever may see the message sees it."""
        cluster = get_object_or_404(Cluster, pk=cluster_pk)
        if not message_id_or_404(msg_id):
            raise NotFound()
        try:
            trace = traces.trace_for_view(request.user, cluster, topic_name, msg_id)
        except bodies.MessageNotFound as missing:
            raise NotFound(str(missing)) from None
        return Response(traces.as_json(trace))

    @extend_schema(parameters=MSG_PATH, request=ms.ResendSerializer, responses={201: ApplicationSerializer})
    @action(detail=True, methods=["post"])
    def resend(self, request, cluster_pk=None, topic_name=None, msg_id=None):
        """Resend the message to its topic or to a group's retry topic (an application; a portal admin's is
        carried out at once)."""
        data = self.validated(ms.ResendSerializer)
        cluster, msg, _may_see_body = _message(request, cluster_pk, topic_name, msg_id)
        topic = Topic.objects.filter(cluster=cluster, name=topic_name).first()
        if topic is None:
            raise NotFound("Only messages of registered topics are resent.")
        payload = {"msg_ids": [msg.msg_id], "to": data["to"], **({"group": data["group"]} if data["group"] else {})}
        application = file_or_act(
            request.user,
            ApplicationKind.MESSAGE_RESEND,
            payload=payload,
            reason=data["reason"],
            team=topic.team,
            topic=topic,
        )
        return Response(ApplicationSerializer(application).data, status=status.HTTP_201_CREATED)


class MessageOperationViewSet(ServiceViewSet):
    """Message and consumer-group operations: resend, dead-letter resend, re-delivery of a range, offset reset,
    skip of the retry backlog, pause, resume, settings. Filed as applications for a portal admin to approve
    (``/applications/{id}/approve/``), or carried out at once when a portal admin asks."""

    permission_classes = [IsAuthenticated]
    serializer_class = ApplicationSerializer

    @extend_schema(request=ms.OperationSerializer, responses={201: ApplicationSerializer})
    def create(self, request):
        """Ask for an operation (``kind``) on a topic's messages (``topic``) or a consumer group
        (``consumer_group``), with its ``payload`` as the Application model documents it per kind."""
        data = self.validated(ms.OperationSerializer)
        target = {"topic": data["topic"]} if data.get("topic") else {"consumer_group": data["consumer_group"]}
        application = file_or_act(request.user, data["kind"], payload=data["payload"], reason=data["reason"], **target)
        return Response(ApplicationSerializer(application).data, status=status.HTTP_201_CREATED)


class GroupMessagesViewSet(ServiceViewSet):
    """What a consumer group's page reads live: retry and dead letters, the offset-reset preview, client
    diagnostics and thread stacks."""

    permission_classes = [IsAuthenticated]
    serializer_class = ms.DeadLetterSerializer

    def get_queryset(self):
        return ConsumerGroup.objects.visible_to(self.request.user).select_related("cluster", "team")

    @extend_schema(
        parameters=[
            OpenApiParameter("which", OpenApiTypes.STR, enum=["dlq", "retry"], default="dlq"),
            OpenApiParameter("newest", OpenApiTypes.INT, default=200, description="How many of the newest."),
        ],
        responses=ms.DeadLetterSerializer(many=True),
    )
    @action(detail=True, methods=["get"], url_path="dead-letters")
    def dead_letters(self, request, pk=None):
        """The newest messages of %DLQ%group (or %RETRY%group), each with its original topic and message id."""
        which = request.query_params.get("which", "dlq")
        if which not in ("dlq", "retry"):
            raise serializers.ValidationError({"which": ["dlq or retry"]})
        newest = serializers.IntegerField(min_value=1, max_value=10_000).run_validation(
            request.query_params.get("newest", "200")
        )
        entries = inspection.dead_letters(request.user, self.get_object(), which, newest=newest)
        return Response(ms.DeadLetterSerializer(entries, many=True).data)

    @extend_schema(request=ms.ResetRequestSerializer, responses=ms.QueueResetSerializer(many=True))
    @action(detail=True, methods=["post"], url_path="reset-preview")
    def reset_preview(self, request, pk=None):
        """Per queue: min, max, current and target offsets of a reset (nothing is changed)."""
        data = self.validated(ms.ResetRequestSerializer)
        group = self.get_object()
        if not access.can_change(request.user, group):
            self.permission_denied(request)
        preview = operations.preview_offset_reset(request.user, group, data["topic"], data["when"], queue=data["queue"])
        return Response(ms.QueueResetSerializer(preview, many=True).data)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def clients(self, request, pk=None):
        """Each online client's running info (subscriptions, thread pool, consume TPS and RT, failures, queues)."""
        now_ms = int(time.time() * 1000)
        clients = inspection.client_diagnostics(request.user, self.get_object())
        return Response([describe(client, now_ms=now_ms) for client in clients])

    @extend_schema(
        parameters=[OpenApiParameter("client", OpenApiTypes.STR, required=True)],
        responses=inline_serializer(
            "ClientStack", {"client": serializers.CharField(), "stack": serializers.CharField(allow_null=True)}
        ),
    )
    @action(detail=True, methods=["get"], url_path="clients/stack")
    def client_stack(self, request, pk=None):
        """A client's thread stack; null when the client sends none (the C++ client)."""
        client = printable_or_empty(request.query_params.get("client", ""), MAX_CLIENT_ID_LENGTH)
        if not client:
            raise serializers.ValidationError({"client": ["Name the client (its client id)."]})
        return Response({"client": client, "stack": inspection.client_stack(request.user, self.get_object(), client)})


class TopicMessagesViewSet(ServiceViewSet):
    """A topic's message tools: a test message (owning team and portal admins) and the export of a time range."""

    permission_classes = [IsAuthenticated]
    serializer_class = ms.SendResultSerializer

    def get_queryset(self):
        return Topic.objects.visible_to(self.request.user).select_related("cluster", "team")

    @extend_schema(request=ms.TestMessageSerializer, responses={201: ms.SendResultSerializer})
    @action(detail=True, methods=["post"], url_path="test-message")
    def test_message(self, request, pk=None):
        """Send a test message to the topic; the result names the message (see its page by ``offset_msg_id``)."""
        data = self.validated(ms.TestMessageSerializer)
        topic = self.get_object()
        if not access.can_change(request.user, topic):
            self.permission_denied(request)
        result = inspection.send_test_message(
            request.user, topic, data["body"].encode(), tags=data["tags"], keys=data["keys"]
        )
        return Response(ms.SendResultSerializer(result).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[ms.ExportRequestSerializer],
        responses={(200, "application/x-ndjson"): OpenApiTypes.STR, (200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        """Every message stored in the range, streamed as JSON lines or CSV while the brokers are read."""
        query = ms.ExportRequestSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        lines = inspection.export_messages(request.user, self.get_object(), data["begin"], data["end"], data["output"])
        return StreamingHttpResponse(lines, content_type=EXPORT_CONTENT_TYPES[data["output"]])

"""The endpoints SDK clients call with their group's token: ``POST consumer-reports/`` (a consumer group's
per-minute consumption reports, ``Authorization: Consumer``) and ``GET client-bootstrap/`` (name servers and the
group's client settings, with a producer or a consumer token). Validation and storage are
:mod:`portal.services.consumer_reports`', the answer :mod:`portal.services.client_bootstrap`'s; the serializers
below only describe the wire format in the schema."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.authentication import (
    ConsumerTokenAuthentication,
    HasClientToken,
    HasConsumerToken,
    ProducerTokenAuthentication,
)
from portal.api.parsers import BoundedJSONParser
from portal.services import client_bootstrap, client_reports, consumer_reports


class ConsumerReportSerializer(serializers.Serializer):
    minute = serializers.DateTimeField(help_text="The whole UTC minute the messages were consumed in.")
    client_id = serializers.CharField(max_length=client_reports.MAX_NAME, help_text="ip@pid")
    client_addr = serializers.IPAddressField()
    consumer_group = serializers.CharField(max_length=client_reports.MAX_NAME)
    topic = serializers.CharField(max_length=client_reports.MAX_NAME)
    count = serializers.IntegerField(min_value=0, help_text="Messages the listener was called with, failed included.")
    failures = serializers.DictField(child=serializers.IntegerField(min_value=1), help_text="Class name -> messages.")
    histogram = serializers.JSONField(help_text="Consume time (stats.histogram); its count must equal `count`.")


class ConsumerReportBatchSerializer(serializers.Serializer):
    reports = ConsumerReportSerializer(many=True, max_length=client_reports.MAX_REPORTS)


class ConsumerReportView(APIView):
    authentication_classes = [ConsumerTokenAuthentication]
    permission_classes = [HasConsumerToken]
    parser_classes = [BoundedJSONParser]
    max_body_size = client_reports.MAX_BATCH_BYTES  # read only once the token is checked

    @extend_schema(
        request=ConsumerReportBatchSerializer,
        responses={
            202: inline_serializer("ConsumerReportsAccepted", {"accepted": serializers.IntegerField()}),
            400: OpenApiResponse(description="Field errors by report index; nothing of the batch was stored."),
            401: OpenApiResponse(description="No token, or an unknown or revoked one."),
            403: OpenApiResponse(description="A report of another consumer group than the token's."),
            413: OpenApiResponse(description="A body larger than 64 MiB: send fewer reports at a time."),
        },
    )
    def post(self, request):
        """Store a batch of per-minute consumption reports (idempotent: a report sent again replaces its row)."""
        try:
            accepted = consumer_reports.accept(request.auth, request.data)
        except client_reports.ReportsRejected as rejected:
            return Response(rejected.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response({"accepted": accepted}, status=status.HTTP_202_ACCEPTED)


class ClientBootstrapView(APIView):
    authentication_classes = [ProducerTokenAuthentication, ConsumerTokenAuthentication]
    permission_classes = [HasClientToken]

    @extend_schema(
        parameters=[OpenApiParameter("client_id", str, description="The asking client (ip@pid), for its share.")],
        responses=inline_serializer(
            "ClientBootstrap",
            {
                "cluster": serializers.CharField(),
                "namesrv_addr": serializers.CharField(help_text="host:port;host:port"),
                "group": serializers.CharField(),
                "refresh_seconds": serializers.IntegerField(),
                "trace_topic": serializers.CharField(help_text="Where tracing clients write trace records."),
                "traced_topics": serializers.ListField(
                    child=serializers.CharField(), help_text="The group's topics whose trace switch is on."
                ),
                "topics": serializers.ListField(child=serializers.CharField(), help_text="Producer tokens only."),
                "message_model": serializers.CharField(help_text="Consumer tokens only, as the rest below."),
                "subscriptions": serializers.ListField(child=serializers.DictField()),
                "throttle_tps": serializers.IntegerField(allow_null=True, help_text="The group's, messages/s."),
                "client_throttle_tps": serializers.IntegerField(allow_null=True, help_text="This client's share."),
            },
        ),
    )
    def get(self, request):
        """The token's cluster name servers and its group's client settings (the SDK asks every minute)."""
        client_id = request.query_params.get("client_id", "")
        if client_id and not client_reports.is_name(client_id):
            client_id = ""
        return Response(client_bootstrap.bootstrap(request.auth, client_id))

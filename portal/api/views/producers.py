"""The endpoints producers (the SDK, ``monitor/sdk``) call with their group's token: ``POST producer-reports/``
(a batch of per-minute reports) and ``GET producer-reports/registration/?topic=`` (the startup check). Validation
and storage are :mod:`portal.services.producer_reports`'; the serializers below only describe the wire format in
the schema."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.authentication import HasProducerToken, ProducerTokenAuthentication
from portal.api.parsers import BoundedJSONParser
from portal.services import producer_reports


class BrokerReportSerializer(serializers.Serializer):
    broker_name = serializers.CharField(max_length=producer_reports.MAX_NAME)
    count = serializers.IntegerField(min_value=0, help_text="Every send to this broker, failed ones included.")
    exceptions = serializers.DictField(child=serializers.IntegerField(min_value=1), help_text="Class name -> sends.")
    histogram = serializers.JSONField(
        help_text='Send latency (stats.histogram): {"v": 1, "counts": {"<bucket>": n}, "sum_ms", "max_ms", "min_ms"}; '
        "its count must equal `count`."
    )


class ProducerReportSerializer(serializers.Serializer):
    minute = serializers.DateTimeField(help_text="The whole UTC minute the sends were made in.")
    client_id = serializers.CharField(max_length=producer_reports.MAX_NAME, help_text="ip@pid")
    client_addr = serializers.IPAddressField()
    producer_group = serializers.CharField(max_length=producer_reports.MAX_NAME)
    topic = serializers.CharField(max_length=producer_reports.MAX_NAME)
    brokers = BrokerReportSerializer(many=True)


class ProducerReportBatchSerializer(serializers.Serializer):
    reports = ProducerReportSerializer(many=True, max_length=producer_reports.MAX_REPORTS)


class _ProducerEndpoint(APIView):
    authentication_classes = [ProducerTokenAuthentication]
    permission_classes = [HasProducerToken]


class ProducerReportView(_ProducerEndpoint):
    parser_classes = [BoundedJSONParser]
    max_body_size = producer_reports.MAX_BATCH_BYTES  # read only once the token is checked

    @extend_schema(
        request=ProducerReportBatchSerializer,
        responses={
            202: inline_serializer("ProducerReportsAccepted", {"accepted": serializers.IntegerField()}),
            400: OpenApiResponse(description="Field errors by report index; nothing of the batch was stored."),
            401: OpenApiResponse(description="No token, or an unknown or revoked one."),
            403: OpenApiResponse(description="A report of another producer group than the token's."),
            413: OpenApiResponse(description="A body larger than 64 MiB: send fewer reports at a time."),
        },
    )
    def post(self, request):
        """Store a batch of per-minute send reports (idempotent: a report sent again replaces its rows)."""
        try:
            accepted = producer_reports.accept(request.auth, request.data)
        except producer_reports.ReportsRejected as rejected:
            return Response(rejected.errors, status=status.HTTP_400_BAD_REQUEST)
        return Response({"accepted": accepted}, status=status.HTTP_202_ACCEPTED)


class ProducerRegistrationView(_ProducerEndpoint):
    @extend_schema(
        parameters=[OpenApiParameter("topic", str, required=True)],
        responses=inline_serializer(
            "ProducerRegistration",
            {
                "registered": serializers.BooleanField(),
                "producer_group": serializers.CharField(),
                "topic": serializers.CharField(),
            },
        ),
    )
    def get(self, request):
        """Whether the token's producer group is registered for the topic."""
        topic = request.query_params.get("topic", "")
        if not topic:
            raise serializers.ValidationError({"topic": [_("This field is required.")]})
        if not producer_reports.is_name(topic):
            raise serializers.ValidationError(
                {"topic": [producer_reports.NAME_EXPECTED % {"max": producer_reports.MAX_NAME}]}
            )
        return Response(producer_reports.registration(request.auth, topic))

"""The REST API (``/api/v1/``, namespace ``api``), the token endpoint, and the OpenAPI schema with its interactive
docs, served from drf-spectacular-sidecar's static files (no CDN)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from portal.api.views.applications import ApplicationViewSet
from portal.api.views.audit import AuditEntryViewSet
from portal.api.views.clusters import BrokerViewSet, ClusterViewSet
from portal.api.views.consumers import ClientBootstrapView, ConsumerReportView
from portal.api.views.messages import (
    GroupMessagesViewSet,
    MessageOperationViewSet,
    MessageSearchViewSet,
    MessageViewSet,
    TopicMessagesViewSet,
)
from portal.api.views.people import NotificationViewSet, TeamViewSet
from portal.api.views.producers import ProducerRegistrationView, ProducerReportView
from portal.api.views.rankings import RankingViewSet
from portal.api.views.registry import ConsumerGroupViewSet, ProducerGroupViewSet, TopicViewSet
from portal.api.views.timeseries import (
    BrokerSeriesView,
    ClusterSeriesView,
    ConsumerGroupSeriesView,
    ServerSeriesView,
    TopicSeriesView,
)
from portal.api.views.tokens import TokenRotateView, TokenView
from portal.api.views.warnings import ChannelViewSet, MuteViewSet, SubscriptionViewSet, WarningViewSet

app_name = "api"
DOCS_METHODS = ["get", "head"]

router = SimpleRouter()
router.register("clusters", ClusterViewSet, basename="cluster")
router.register("brokers", BrokerViewSet, basename="broker")
router.register("topics", TopicViewSet, basename="topic")
router.register("consumer-groups", ConsumerGroupViewSet, basename="consumer-group")
router.register("producer-groups", ProducerGroupViewSet, basename="producer-group")
router.register("teams", TeamViewSet, basename="team")
router.register("applications", ApplicationViewSet, basename="application")
router.register("audit-log", AuditEntryViewSet, basename="audit-entry")
router.register("notifications", NotificationViewSet, basename="notification")
router.register("warnings", WarningViewSet, basename="warning")
router.register("warning-channels", ChannelViewSet, basename="warning-channel")
router.register("warning-subscriptions", SubscriptionViewSet, basename="warning-subscription")
router.register("warning-mutes", MuteViewSet, basename="warning-mute")
router.register("rankings", RankingViewSet, basename="ranking")
router.register("message-searches", MessageSearchViewSet, basename="message-search")
router.register("message-operations", MessageOperationViewSet, basename="message-operation")
# Detail actions only (dead letters, reset preview, clients; test message, export) beside the registry's viewsets.
router.register("consumer-groups", GroupMessagesViewSet, basename="consumer-group-messages")
router.register("topics", TopicMessagesViewSet, basename="topic-messages")
MESSAGE = "v1/messages/<int:cluster_pk>/<str:topic_name>/<str:msg_id>/"

urlpatterns = [
    path("v1/", include(router.urls)),
    path(MESSAGE, MessageViewSet.as_view({"get": "retrieve"}), name="message-detail"),
    path(MESSAGE + "tracks/", MessageViewSet.as_view({"get": "tracks"}), name="message-tracks"),
    path(MESSAGE + "trace/", MessageViewSet.as_view({"get": "trace"}), name="message-trace"),
    path(MESSAGE + "resend/", MessageViewSet.as_view({"post": "resend"}), name="message-resend"),
    # The token view takes the API's parsers (portal/api/parsers.py) and throttles, not DRF's own (views/tokens.py).
    path("v1/topics/<int:pk>/series/", TopicSeriesView.as_view(), name="topic-series"),
    path("v1/consumer-groups/<int:pk>/series/", ConsumerGroupSeriesView.as_view(), name="consumer-group-series"),
    path("v1/brokers/<int:pk>/series/", BrokerSeriesView.as_view(), name="broker-series"),
    path("v1/clusters/<int:pk>/series/", ClusterSeriesView.as_view(), name="cluster-series"),
    path("v1/servers/<str:host>/series/", ServerSeriesView.as_view(), name="server-series"),
    path("v1/auth/token/", TokenView.as_view(), name="token"),
    path("v1/auth/token/rotate/", TokenRotateView.as_view(), name="token-rotate"),
    path("v1/producer-reports/", ProducerReportView.as_view(), name="producer-reports"),
    path(
        "v1/producer-reports/registration/",
        ProducerRegistrationView.as_view(),
        name="producer-registration",
    ),
    path("v1/consumer-reports/", ConsumerReportView.as_view(), name="consumer-reports"),
    path("v1/client-bootstrap/", ClientBootstrapView.as_view(), name="client-bootstrap"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's settings come as a script of their own (?script), not inline: the Content-Security-Policy
    # allows scripts from this site only.
    # The docs are pages to read: OPTIONS would render the view's metadata through an HTML template renderer (with
    # no template for it, a 500), so they answer GET and HEAD only.
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api:schema", http_method_names=DOCS_METHODS),
        name="docs",
    ),
    path(
        "redoc/",
        SpectacularRedocView.as_view(
            url_name="api:schema", template_name="api/redoc.html", http_method_names=DOCS_METHODS
        ),
        name="redoc",
    ),
]

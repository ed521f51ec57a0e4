"""Clusters and the brokers discovered in them: readable by every logged-in user, registered and changed by portal
admins through ``portal.services.registry``."""

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.permissions import IsAuthenticated

from portal.api.permissions import IsPortalAdmin
from portal.api.serializers import (
    BrokerSerializer,
    ClusterRegistrationSerializer,
    ClusterSerializer,
    ClusterUpdateSerializer,
)
from portal.api.views.base import ServiceViewSet
from portal.filters import BrokerFilterSet, ClusterFilterSet
from portal.models import Broker, Cluster
from portal.services import registry


class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    queryset = Cluster.objects.prefetch_related("name_servers", "brokers")
    serializer_class = ClusterSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = ClusterFilterSet
    ordering_fields = ["name", "created_at", "last_synced_at"]

    def get_permissions(self):
        if self.action in ("create", "partial_update"):
            return [IsAuthenticated(), IsPortalAdmin()]
        return super().get_permissions()

    @extend_schema(request=ClusterRegistrationSerializer, responses={201: ClusterSerializer})
    def create(self, request):
        """Register a cluster: its name servers must answer; its brokers are discovered from them."""
        cluster = registry.register_cluster(by=request.user, **self.validated(ClusterRegistrationSerializer))
        return self.rendered(cluster, status.HTTP_201_CREATED)

    @extend_schema(request=ClusterUpdateSerializer, responses=ClusterSerializer)
    def partial_update(self, request, pk=None):
        cluster = self.get_object()
        return self.rendered(
            registry.update_cluster(cluster, by=request.user, **self.validated(ClusterUpdateSerializer))
        )


class BrokerViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Broker.objects.all()
    serializer_class = BrokerSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = BrokerFilterSet
    ordering_fields = ["broker_name", "broker_id", "address", "last_seen_at"]

"""Topics, consumer groups and producer groups. Topics are public (anonymous included); groups need a login. The
owning team edits an entry's description; a portal admin gives an unowned (imported) entry a team. Everything that
changes a cluster goes through applications, not through these endpoints."""

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import mixins
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from portal.api.permissions import CanChangeEntry, IsPortalAdmin
from portal.api.serializers import (
    AdoptionSerializer,
    ConsumerGroupDetailSerializer,
    ConsumerGroupSerializer,
    DescriptionSerializer,
    ProducerGroupSerializer,
    TopicSerializer,
)
from portal.api.views.base import ServiceViewSet
from portal.filters import ConsumerGroupFilterSet, ProducerGroupFilterSet, TopicFilterSet
from portal.models import ConsumerGroup, ProducerGroup, Topic
from portal.services import registry
from portal.services.subscriptions import current_group_subscriptions


class RegistryEntryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    ordering_fields = ["name", "created_at", "updated_at", "state"]

    def get_queryset(self):
        return super().get_queryset().visible_to(self.request.user)

    def get_permissions(self):
        if self.action == "partial_update":
            return [IsAuthenticated(), CanChangeEntry()]
        return super().get_permissions()

    @extend_schema(request=DescriptionSerializer)
    def partial_update(self, request, pk=None):
        """Change the description (the only field kept by the portal alone)."""
        entry = self.get_object()
        registry.update_description(entry, self.validated(DescriptionSerializer)["description"], by=request.user)
        return self.rendered(entry)

    @extend_schema(request=AdoptionSerializer)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, IsPortalAdmin])
    def adopt(self, request, pk=None):
        """Give an unowned entry (imported from the cluster) its owning team."""
        entry = self.get_object()
        registry.adopt(entry, team=self.validated(AdoptionSerializer)["team"], by=request.user)
        return self.rendered(entry)


class TopicViewSet(RegistryEntryViewSet):
    queryset = Topic.objects.select_related("cluster", "team")
    serializer_class = TopicSerializer
    filterset_class = TopicFilterSet
    ordering_fields = [*RegistryEntryViewSet.ordering_fields, "queue_nums"]


class ConsumerGroupViewSet(RegistryEntryViewSet):
    queryset = ConsumerGroup.objects.select_related("cluster", "team").prefetch_related("subscriptions__topic")
    serializer_class = ConsumerGroupSerializer
    filterset_class = ConsumerGroupFilterSet
    permission_classes = [IsAuthenticated]

    def get_serializer_class(self):
        return ConsumerGroupDetailSerializer if self.action == "retrieve" else ConsumerGroupSerializer

    def retrieve(self, request, pk=None):
        """The group, with its registered subscriptions judged against what its online clients reported in the
        latest collected minute (``subscription_check``): topics the clients subscribe but the registry lacks, other
        expressions, registered topics no client subscribes, and clients subscribing unlike each other."""
        group = self.get_object()
        group.subscription_check = current_group_subscriptions(group, timezone.now())
        return Response(self.get_serializer(group).data)


class ProducerGroupViewSet(RegistryEntryViewSet):
    queryset = ProducerGroup.objects.select_related("cluster", "team").prefetch_related("topics")
    serializer_class = ProducerGroupSerializer
    filterset_class = ProducerGroupFilterSet
    permission_classes = [IsAuthenticated]

"""Teams and their members, and each user's notifications. Teams are readable by every logged-in user; portal
admins create teams and team admins manage their team's members, through ``portal.services.registry``."""

from django.contrib.auth import get_user_model
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from portal.api.permissions import CanManageTeam, IsPortalAdmin
from portal.api.serializers import MarkReadSerializer, MembershipSerializer, NotificationSerializer, TeamSerializer
from portal.api.views.base import ServiceViewSet
from portal.filters import NotificationFilterSet, TeamFilterSet
from portal.models import Notification, Team
from portal.services import notifications, registry


class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    queryset = Team.objects.all()
    serializer_class = TeamSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = TeamFilterSet
    ordering_fields = ["name", "created_at"]

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), IsPortalAdmin()]
        if self.action in ("add_member", "remove_member"):
            return [IsAuthenticated(), CanManageTeam()]
        return super().get_permissions()

    @extend_schema(responses={201: TeamSerializer})
    def create(self, request):
        team = registry.create_team(by=request.user, **self.validated(TeamSerializer))
        return self.rendered(team, status.HTTP_201_CREATED)

    @extend_schema(responses=MembershipSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def members(self, request, pk=None):
        memberships = self.get_object().memberships.select_related("user").order_by("user__username")
        return Response(MembershipSerializer(memberships, many=True).data)

    @extend_schema(request=MembershipSerializer, responses={201: MembershipSerializer})
    @members.mapping.post
    def add_member(self, request, pk=None):
        """Add a user to the team, or change the role of a member."""
        team = self.get_object()
        data = self.validated(MembershipSerializer)
        membership = registry.add_member(team, data["user"], data["role"], by=request.user)
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["delete"], url_path=r"members/(?P<username>[\w.@+-]+)", url_name="member")
    def remove_member(self, request, pk=None, username=None):
        team = self.get_object()
        user = get_object_or_404(get_user_model(), username=username)
        registry.remove_member(team, user, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class NotificationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    """The requesting user's own notifications, newest first."""

    queryset = Notification.objects.all()
    serializer_class = NotificationSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = NotificationFilterSet
    ordering_fields = ["created_at"]

    def get_queryset(self):
        return super().get_queryset().filter(user=self.request.user)

    @extend_schema(
        request=MarkReadSerializer,
        responses=inline_serializer("MarkedRead", {"marked": serializers.IntegerField()}),
    )
    @action(detail=False, methods=["post"], url_path="mark-read", url_name="mark-read")
    def mark_read(self, request):
        """Mark the given notifications (all, without ``ids``) read; returns how many changed."""
        marked = notifications.mark_read(request.user, self.validated(MarkReadSerializer)["ids"])
        return Response({"marked": marked})

"""Warnings and each user's choices about them: the warnings the user may see (``access.visible_warnings``;
filters per user told, topic, group, cluster, type and state) with their events and deliveries, acknowledging one,
and the requesting user's own channels, subscriptions (per warning type) and mutes, all through
``portal.services.warnings``. Channels and mutes are personal: another user's are never found (404)."""

from django.http import Http404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import Throttled
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from portal.api.errors import Conflict, ServiceErrorsMixin, field_errors
from portal.api.views.base import ServiceViewSet
from portal.api.warning_serializers import (
    ChannelCreateSerializer,
    ChannelSerializer,
    ChannelUpdateSerializer,
    MuteSerializer,
    WarningDetailSerializer,
    WarningSerializer,
    WarningSubscriptionSerializer,
)
from portal.filters import WarningFilterSet
from portal.models import Channel, Mute, Warning
from portal.services.warnings import channels, delivery, lifecycle, queries, subscriptions


class WarningViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    """Open warnings first, newest first within each state (``?ordering=`` orders otherwise)."""

    queryset = Warning.objects.all()
    serializer_class = WarningSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = WarningFilterSet
    ordering_fields = ["opened_at", "resolved_at", "last_seen_at", "kind", "state"]

    def get_queryset(self):
        return queries.open_first(queries.visible(self.request.user))

    def get_serializer_class(self):
        return WarningDetailSerializer if self.action == "retrieve" else WarningSerializer

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if self.action == "retrieve":
            context["deliveries"] = queries.deliveries(self.request.user, self.get_object())
        return context

    @extend_schema(
        request=None,
        responses={
            200: WarningSerializer,
            409: OpenApiResponse(description="The warning is resolved or was already acknowledged."),
        },
    )
    @action(detail=True, methods=["post"])
    def acknowledge(self, request, pk=None):
        """Say you are on it: an open warning stops repeating (its end is still told). Its topic's or group's
        owning team, and portal admins."""
        warning = self.get_object()
        if not lifecycle.acknowledge(warning, request.user):
            raise Conflict(_("The warning is resolved or was already acknowledged."))
        return self.rendered(warning)


class ChannelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    """The requesting user's channels; the built-in in-app one (and an e-mail one to the account's address) exist
    from the first look."""

    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = None
    ordering_fields = ["name", "kind", "created_at"]

    def get_queryset(self):
        return subscriptions.channels_of(self.request.user)

    def validation_error_body(self, error):
        """A setting's error nests under ``config``, as it was sent."""
        return field_errors(error, nest_under="config", top_level=frozenset({"name", "kind", "enabled"}))

    def list(self, request, *args, **kwargs):
        channels.default_channels(request.user)
        return super().list(request, *args, **kwargs)

    @extend_schema(request=ChannelCreateSerializer, responses={201: ChannelSerializer})
    def create(self, request):
        """Add an e-mail or webhook channel; its URL and secret are checked and stored encrypted."""
        data = self.validated(ChannelCreateSerializer)
        channel = channels.create_channel(request.user, kind=data["kind"], name=data["name"], config=data["config"])
        return self.rendered(channel, status.HTTP_201_CREATED)

    @extend_schema(request=ChannelUpdateSerializer, responses={200: ChannelSerializer})
    def partial_update(self, request, pk=None):
        """Rename, reconfigure, enable (a fresh start after a fix) or disable a channel."""
        channel = self.get_object()
        data = self.validated(ChannelUpdateSerializer)
        if "name" in data or "config" in data:
            channels.update_channel(channel, by=request.user, name=data.get("name"), config=data.get("config"))
        if "enabled" in data:
            channels.set_enabled(channel, data["enabled"], by=request.user)
        return self.rendered(channel)

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request, pk=None):
        """Remove an e-mail or webhook channel (the in-app one stays: 400)."""
        channels.delete_channel(self.get_object(), by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=None,
        responses={
            200: inline_serializer(
                "ChannelTest", {"sent": serializers.BooleanField(), "error": serializers.CharField()}
            ),
            429: OpenApiResponse(description="Too many tests this minute; Retry-After says when to try again."),
        },
    )
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        """Send a test message through the channel now; the outcome is also kept on the channel. A few tests a
        minute per user (``WARNING_CHANNEL_TESTS_PER_MINUTE``); more are answered 429 with Retry-After."""
        try:
            error = delivery.send_test(self.get_object(), by=request.user)
        except delivery.TooManyTests as limited:
            raise Throttled(wait=limited.retry_after) from None
        return Response({"sent": not error, "error": error})


class SubscriptionViewSet(ServiceErrorsMixin, viewsets.ViewSet):
    """Per warning type (its ``kind`` in the URL), the channels that tell the requesting user: the types of topics
    and groups, and for portal admins the cluster machinery's too."""

    permission_classes = [IsAuthenticated]
    lookup_field = "kind"
    lookup_value_regex = "[a-z_]+"
    serializer_class = WarningSubscriptionSerializer

    def _rows(self, kinds: list[str]) -> list[dict]:
        user = self.request.user
        chosen, by_default = queries.chosen_channels(user, kinds, channels.default_channels(user))
        return [{"kind": kind, "channels": sorted(chosen[kind]), "default": kind in by_default} for kind in kinds]

    def _kind(self, kind: str) -> str:
        if kind not in queries.subscribable_kinds(self.request.user):
            raise Http404(kind)
        return kind

    @extend_schema(responses=WarningSubscriptionSerializer(many=True))
    def list(self, request):
        return Response(self._rows(queries.subscribable_kinds(request.user)))

    @extend_schema(responses=WarningSubscriptionSerializer)
    def retrieve(self, request, kind=None):
        return Response(self._rows([self._kind(kind)])[0])

    @extend_schema(request=WarningSubscriptionSerializer, responses=WarningSubscriptionSerializer)
    def update(self, request, kind=None):
        """Choose the type's channels among your own (an empty list: hear nothing of it)."""
        kind = self._kind(kind)
        serializer = WarningSubscriptionSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        subscriptions.subscribe(request.user, kind, serializer.validated_data["channels"])
        return Response(self._rows([kind])[0])

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request, kind=None):
        """Back to the defaults for the type."""
        subscriptions.reset(request.user, self._kind(kind))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MuteViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ServiceViewSet):
    """The requesting user's mutes in force: one subject (``subject_type`` + ``subject_name`` on ``cluster``)
    silenced until ``until``, for one ``kind`` or all."""

    queryset = Mute.objects.all()
    serializer_class = MuteSerializer
    permission_classes = [IsAuthenticated]
    filterset_class = None
    ordering_fields = ["until", "created_at"]

    def get_queryset(self):
        return subscriptions.active_mutes(self.request.user)

    @extend_schema(request=MuteSerializer, responses={201: MuteSerializer})
    def create(self, request):
        mute = subscriptions.mute(request.user, **self.validated(MuteSerializer))
        return self.rendered(mute, status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request, pk=None):
        """End the mute now."""
        subscriptions.unmute(request.user, self.get_object().pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

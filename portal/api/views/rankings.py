"""Rankings (``GET /api/v1/rankings/``): one cluster's ranking of one kind for one closed day, optionally narrowed
to a team's entries, as the rankings page shows it (:mod:`portal.services.rankings`). Monitoring data: a login is
needed (``access.can_see_monitoring``)."""

import datetime as dt

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated

from portal import access
from portal.models import Cluster, Team
from portal.services import rankings
from stats.models import Ranking, RankingKind


class CanSeeMonitoring(BasePermission):
    def has_permission(self, request, view) -> bool:
        return access.can_see_monitoring(request.user)


class RankingQuerySerializer(serializers.Serializer):
    cluster = serializers.PrimaryKeyRelatedField(queryset=Cluster.objects.all(), help_text=_("The cluster's id."))
    kind = serializers.ChoiceField(choices=RankingKind.choices, default=rankings.DEFAULT_KIND)
    team = serializers.PrimaryKeyRelatedField(
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text=_(
            "Only this team's entries, numbered among themselves (``position``); ``rank`` stays the cluster's."
        ),
    )
    window = serializers.DateTimeField(
        required=False, help_text=_("The end of the ranked window (a day's end, UTC); the latest if absent.")
    )


class RankedSubjectSerializer(serializers.Serializer):
    """One ranked topic or group, with the window it was ranked over and when the ranking was computed."""

    position = serializers.IntegerField(help_text=_("Place in the list returned."))
    rank = serializers.IntegerField(help_text=_("Rank in the whole cluster."))
    subject = serializers.CharField(help_text=_("The topic's or group's name."))
    entry = serializers.SerializerMethodField(help_text=_("The registered entry's id (null: not registered)."))
    value = serializers.FloatField()
    detail = serializers.DictField()
    window_start = serializers.SerializerMethodField()
    window_end = serializers.SerializerMethodField()
    computed_at = serializers.SerializerMethodField()
    demo_history = serializers.SerializerMethodField(
        help_text=_(
            "True when the ranking was computed from minutes of the demo's generated history (manage.py demo), "
            "not only measured ones."
        )
    )

    def get_entry(self, row) -> int | None:
        return row.entry.pk if row.entry else None

    def get_window_start(self, row) -> dt.datetime:
        return self.context["selection"].window_start

    def get_window_end(self, row) -> dt.datetime:
        return self.context["selection"].window_end

    def get_computed_at(self, row) -> dt.datetime | None:
        return self.context["selection"].computed_at

    def get_demo_history(self, row) -> bool:
        return self.context["selection"].demo_history


class RankingViewSet(viewsets.GenericViewSet):
    permission_classes = [IsAuthenticated, CanSeeMonitoring]
    serializer_class = RankedSubjectSerializer
    filter_backends = []
    # The rows come from the service, selected by the validated query; DRF's browsable API still asks every
    # generic view for a queryset (for its filter form), and without one answers a browser with 500.
    queryset = Ranking.objects.none()

    @extend_schema(parameters=[RankingQuerySerializer])
    def list(self, request):
        """A cluster's ranking of one kind for one closed UTC day (the latest unless ``window`` names another), best
        first; with ``team``, that team's entries only."""
        query = RankingQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        selection = rankings.select(
            request.user,
            cluster=params["cluster"],
            kind=params["kind"],
            team=params.get("team"),
            window_end=params.get("window"),
        )
        if "window" in params and selection.window_end != params["window"]:
            raise ValidationError({"window": [_("No ranking of this kind ends then.")]})
        page = self.paginate_queryset(selection.rows)
        rows = rankings.shown(request.user, selection, page)
        serializer = self.get_serializer(
            rows, many=True, context={**self.get_serializer_context(), "selection": selection}
        )
        return self.get_paginated_response(serializer.data)

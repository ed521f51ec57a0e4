"""The rankings page: per cluster, or narrowed to a team, the topics with the most traffic (a day, 7 days), the
fastest-growing and fastest-shrinking topics, the consumers by lag time and by failures, and the noisiest
producers, as the Spark rankings job computed them for a closed day (:mod:`portal.services.rankings`).

Rankings are monitoring data (how much a business sends is not public): signed-in users only,
``access.can_see_monitoring``."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_safe

from portal import access
from portal.inputs import parse_id
from portal.models import Cluster, Team
from portal.services import rankings
from portal.web.paging import paginate
from stats.models import RankingKind


def _chosen(queryset, value: str):
    """The row of ``queryset`` a query parameter names by id, or None."""
    pk = parse_id(value)
    return queryset.filter(pk=pk).first() if pk is not None else None


def _moment(value: str):
    """A query parameter's date and time (ISO 8601), or None if it is not one."""
    try:
        return parse_datetime(value)
    except ValueError:
        return None


@login_required
@require_safe
def ranking_list(request):
    if not access.can_see_monitoring(request.user):
        raise PermissionDenied
    clusters = Cluster.objects.order_by("name")
    cluster = _chosen(clusters, request.GET.get("cluster", "")) or clusters.first()
    teams = Team.objects.order_by("name")
    team = _chosen(teams, request.GET.get("team", ""))
    kind = request.GET.get("kind", "")
    kind = kind if kind in RankingKind.values else rankings.DEFAULT_KIND
    context = {"clusters": clusters, "cluster": cluster, "teams": teams, "team": team, "kinds": RankingKind.choices}
    if cluster is not None:
        selection = rankings.select(
            request.user,
            cluster=cluster,
            kind=kind,
            team=team,
            window_end=_moment(request.GET.get("window", "")),
        )
        page = paginate(request, selection.rows)
        context.update(selection=selection, page=page, rows=rankings.shown(request.user, selection, page))
    return render(request, "portal/rankings.html", context)

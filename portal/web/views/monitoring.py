"""Monitoring pages: a broker (its traffic and health), a server (a broker host's stats), and "who is lagging
now" across the fleet. The topic, consumer-group and cluster pages carry their own charts
(:mod:`portal.web.monitoring` draws them all).

Everything here needs a login (``access.can_see_monitoring``); which groups the lag list shows is
``access.lag_watch``."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_safe

from portal import access
from portal.inputs import parse_id
from portal.models import Broker, Cluster, ConsumerGroup, Team
from portal.web import monitoring
from portal.web.paging import paginate
from portal.web.warning_panels import warning_panel
from stats.queries.health import latest_broker_probes
from stats.queries.traffic import lagging_now


def _monitoring_allowed(user) -> None:
    if not access.can_see_monitoring(user):
        raise PermissionDenied


@login_required
@require_safe
def broker_detail(request, pk):
    _monitoring_allowed(request.user)
    broker = get_object_or_404(Broker.objects.select_related("cluster"), pk=pk)
    window = monitoring.requested_window(request)
    warnings = warning_panel(request.user, broker, window)
    context = {
        "broker": broker,
        "probe": latest_broker_probes(broker.cluster_id).get((broker.broker_name, broker.broker_id)),
        "peers": Broker.objects.filter(cluster=broker.cluster_id, broker_name=broker.broker_name).exclude(pk=pk),
        "window": window,
        "charts": monitoring.broker_charts(broker, window, warnings.in_range),
        **warnings.context,
    }
    return render(request, "portal/monitoring/broker_detail.html", context)


@login_required
@require_safe
def server_detail(request, host):
    """A broker host (as server stats are kept: the host part of its brokers' addresses); unknown hosts are 404."""
    _monitoring_allowed(request.user)
    brokers = [broker for broker in Broker.objects.select_related("cluster") if broker.host == host]
    if not brokers:
        raise Http404(host)
    window = monitoring.requested_window(request)
    warnings = warning_panel(request.user, host, window)
    context = {
        "host": host,
        "brokers": brokers,
        "window": window,
        "charts": monitoring.server_charts(host, window, warnings.in_range),
        **warnings.context,
    }
    return render(request, "portal/monitoring/server_detail.html", context)


@login_required
@require_safe
def lagging(request):
    """Who is lagging now, longest wait first: every group for portal admins, their teams' groups for the others;
    ``?team=`` narrows it to one team (one of one's own, unless a portal admin)."""
    _monitoring_allowed(request.user)
    teams = Team.objects.order_by("name")
    if not access.is_portal_admin(request.user):
        teams = teams.filter(pk__in=access.team_ids(request.user))
    team_id = parse_id(request.GET.get("team"))
    team = teams.filter(pk=team_id).first() if team_id is not None else None
    watched = access.lag_watch(request.user, team)
    scope = None
    if watched is not None:
        scope = {}
        for cluster_id, name in watched.values_list("cluster_id", "name"):
            scope.setdefault(cluster_id, []).append(name)
    page = paginate(request, lagging_now(timezone.now(), groups=scope))
    rows = list(page.object_list)
    registered = {
        (group.cluster_id, group.name): group
        for group in ConsumerGroup.objects.filter(
            cluster_id__in={row.cluster_id for row in rows}, name__in={row.group for row in rows}
        ).select_related("team")
    }
    clusters = Cluster.objects.in_bulk({row.cluster_id for row in rows})
    context = {
        "page": page,
        "rows": [
            {"lag": row, "group": registered.get((row.cluster_id, row.group)), "cluster": clusters.get(row.cluster_id)}
            for row in rows
        ],
        "teams": teams,
        "team": team,
        "everyone": watched is None,
    }
    return render(request, "portal/monitoring/lagging.html", context)

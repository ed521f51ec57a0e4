"""Pages about the signed-in user and teams: the dashboard, the profile (language, time zone), notifications,
and the team pages where team admins manage membership."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.inputs import parse_id
from portal.models import Application, ConsumerGroup, Notification, ProducerGroup, Team, Topic
from portal.services import api_tokens, notifications, registry
from portal.services.profiles import profile_for, update_profile
from portal.web.forms import MemberAddForm, MemberRemoveForm, ProfileForm, submitted
from portal.web.navigation import redirect_back
from portal.web.paging import paginate

DASHBOARD_ROWS = 20
# A team page lists this many of each kind; the filtered list pages show the rest.
TEAM_PAGE_ROWS = 50


@login_required
@require_safe
def dashboard(request):
    """What my teams own, my recent applications and my latest notifications; each list links to its full page."""
    user = request.user
    context = {
        "topics": Topic.objects.owned_by(user).select_related("cluster", "team")[:DASHBOARD_ROWS],
        "consumer_groups": ConsumerGroup.objects.owned_by(user).select_related("cluster", "team")[:DASHBOARD_ROWS],
        "producer_groups": ProducerGroup.objects.owned_by(user).select_related("cluster", "team")[:DASHBOARD_ROWS],
        "applications": Application.objects.visible_to(user)
        .filter(applicant=user)
        .select_related("team", "cluster", "topic", "consumer_group", "producer_group")[:DASHBOARD_ROWS],
        "notifications": user.notifications.all()[:5],
        "teams": Team.objects.filter(memberships__user=user).order_by("name"),
    }
    return render(request, "portal/dashboard.html", context)


@login_required
def profile(request):
    current = profile_for(request.user)
    form = ProfileForm(submitted(request), initial={"language": current.language, "time_zone": current.time_zone})
    if request.method == "POST" and form.is_valid():
        try:
            update_profile(request.user, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("Your settings are saved."))
            return redirect("profile")
    return _profile_page(request, form)


def _profile_page(request, form, new_token=None):
    token = api_tokens.current(request.user)
    context = {
        "form": form,
        "api_token": token,
        "api_token_expires_at": api_tokens.expires_at(token) if token else None,
        "api_token_expired": token is not None and api_tokens.is_expired(token),
        "new_api_token": new_token,
    }
    return render(request, "portal/profile.html", context)


@login_required
@require_POST
def profile_api_token(request):
    """Create or rotate (``action=rotate``) or revoke (``action=revoke``) the user's personal API token. A new key is
    shown on the page this POST answers, once; the settings page never shows it again."""
    current = profile_for(request.user)
    form = ProfileForm(initial={"language": current.language, "time_zone": current.time_zone})
    if request.POST.get("action") == "revoke":
        api_tokens.revoke(request.user)
        messages.success(request, _("Your API token is revoked."))
        return redirect("profile")
    return _profile_page(request, form, new_token=api_tokens.rotate(request.user))


@login_required
@require_POST
def profile_language(request):
    """The header's language switcher for signed-in users: the choice is kept in the profile (anonymous visitors
    use Django's set_language, which keeps it in a cookie)."""
    try:
        update_profile(request.user, language=request.POST.get("language", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    return redirect_back(request, "dashboard")


@login_required
def notification_list(request):
    if request.method == "POST":
        ids = None if "all" in request.POST else [parse_id(value) for value in request.POST.getlist("ids")]
        if ids is not None and None in ids:
            messages.error(request, _("Nothing was marked read: the request named something that is no notification."))
        else:
            notifications.mark_read(request.user, ids)
        return redirect_back(request, "notification-list")
    return render(
        request,
        "portal/notification_list.html",
        {"page": paginate(request, Notification.objects.filter(user=request.user))},
    )


@login_required
@require_safe
def team_list(request):
    teams = Team.objects.annotate(member_count=Count("memberships", distinct=True))
    return render(request, "portal/team_list.html", {"teams": teams, "my_team_ids": access.team_ids(request.user)})


def _team_page(request, team, add_form=None):
    context = {
        "team": team,
        "memberships": team.memberships.select_related("user").order_by("user__username"),
        "topics": Topic.objects.filter(team=team).select_related("cluster")[:TEAM_PAGE_ROWS],
        "consumer_groups": ConsumerGroup.objects.filter(team=team).select_related("cluster")[:TEAM_PAGE_ROWS],
        "producer_groups": ProducerGroup.objects.filter(team=team).select_related("cluster")[:TEAM_PAGE_ROWS],
        "can_manage": access.can_manage_team(request.user, team),
        "add_form": add_form or MemberAddForm(),
    }
    return render(request, "portal/team_detail.html", context)


@login_required
@require_safe
def team_detail(request, pk):
    return _team_page(request, get_object_or_404(Team, pk=pk))


def _managed_team(request, pk) -> Team:
    team = get_object_or_404(Team, pk=pk)
    if not access.can_manage_team(request.user, team):
        raise PermissionDenied
    return team


@login_required
@require_POST
def team_member_add(request, pk):
    team = _managed_team(request, pk)
    form = MemberAddForm(request.POST)
    if form.is_valid():
        user = form.cleaned_data["username"]
        try:
            registry.add_member(team, user, form.cleaned_data["role"], by=request.user)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("%(user)s added.") % {"user": user})
            return redirect("team-detail", team.pk)
    return _team_page(request, team, add_form=form)


@login_required
@require_POST
def team_member_remove(request, pk):
    team = _managed_team(request, pk)
    form = MemberRemoveForm(request.POST, team=team)
    if not form.is_valid():
        raise Http404
    user = form.cleaned_data["user"]
    try:
        registry.remove_member(team, user, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("%(user)s removed.") % {"user": user})
    return redirect("team-detail", team.pk)

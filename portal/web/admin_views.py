"""The admin pages: the approval queue, clusters and their brokers, unowned entries, the audit log, new teams.

Each view parses the request, calls one service and renders; who may do what is asked of ``portal.access`` (and the
services check it again). Cluster pages are readable by every signed-in user; the rest is for portal admins, except
the approval queue, which also shows a team admin the associations with their team's topics.
"""

import json
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from portal import access
from portal.models import (
    Application,
    ApplicationKind,
    AssociationRole,
    AuditEntry,
    Broker,
    Cluster,
    ConsumerGroup,
    MessageModel,
    ProducerGroup,
    RegistryState,
    Topic,
)
from portal.services import applications, registry, sync
from portal.services.applications import InvalidTransition
from portal.services.cluster_ops import ClusterOperationError
from portal.web.admin_forms import (
    AdoptForm,
    ApplicationFilter,
    AuditFilter,
    ClusterForm,
    RejectForm,
    TeamForm,
    UnownedFilter,
)
from portal.web.entries import DETAIL_URL_NAMES, ENTRY_MODELS, entry_model
from portal.web.paging import paginate


def admin_required(view):
    """Portal admins only: anonymous visitors are sent to the login page, everyone else gets 403."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not access.can_administer(request.user):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


def decider_required(view):
    """The approval queue and its actions: portal admins, and team admins (who decide associations with their
    team's topics). Whether a given application may be decided is the service's check."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not (access.can_administer(request.user) or access.team_ids(request.user, admin_only=True)):
            raise PermissionDenied
        return view(request, *args, **kwargs)

    return wrapper


def _back(request, default: str):
    """Where a POST came from (the ``next`` field, e.g. a filtered queue page), if it is on this site."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(default)


# --- approval queue ---------------------------------------------------------------------------------------------


def _not_decided(request, error: InvalidTransition) -> None:
    """The application was decided, cancelled or is being approved by someone else meanwhile."""
    messages.warning(request, _("%(reason)s Nothing was done.") % {"reason": error})


def _yes_no(value) -> str:
    return _("yes") if value else _("no")


def describe_payload(application, topic_names: dict[int, str]) -> list[tuple[str, str]]:
    """What the application asks for as (label, text) rows; a pending change shows "current → requested"."""
    payload = application.payload or {}
    rows = []
    if application.kind == ApplicationKind.TOPIC_CHANGE and application.topic and application.is_pending:
        current = application.topic
        if "queue_nums" in payload:
            rows.append((_("Queue count"), f"{current.queue_nums} → {payload['queue_nums']}"))
        if "trace_enabled" in payload:
            rows.append((_("Message trace"), f"{_yes_no(current.trace_enabled)} → {_yes_no(payload['trace_enabled'])}"))
        return rows
    if "name" in payload and application.kind.endswith("_create"):
        rows.append((_("Name"), payload["name"]))
    if "queue_nums" in payload:
        rows.append((_("Queue count"), str(payload["queue_nums"])))
    if "ordered" in payload:
        rows.append((_("Ordered"), _yes_no(payload["ordered"])))
    if "trace_enabled" in payload:
        rows.append((_("Message trace"), _yes_no(payload["trace_enabled"])))
    if "message_model" in payload:
        rows.append((_("Message model"), str(MessageModel(payload["message_model"]).label)))
    if "subscriptions" in payload:
        subscriptions = [
            f"{topic_names.get(row.get('topic_id'), row.get('topic_id'))} ({row.get('tag_expression', '*')})"
            for row in payload["subscriptions"]
        ]
        rows.append((_("Subscriptions"), ", ".join(subscriptions)))
    if "topic_ids" in payload:
        rows.append((_("Topics"), ", ".join(str(topic_names.get(pk, pk)) for pk in payload["topic_ids"])))
    if "role" in payload:
        rows.append((_("Role"), str(AssociationRole(payload["role"]).label)))
    if application.kind == ApplicationKind.TOPIC_ASSOCIATION and application.topic:
        rows.append((_("Topic owned by"), str(application.topic.team or _("nobody (unowned)"))))
    if payload.get("description"):
        rows.append((_("Description"), payload["description"]))
    return rows


def _topic_names(apps) -> dict[int, str]:
    """Names of the topics the payloads refer to by id, in one query."""
    ids = set()
    for app in apps:
        payload = app.payload or {}
        ids.update(row.get("topic_id") for row in payload.get("subscriptions", []))
        ids.update(payload.get("topic_ids", []))
    return dict(Topic.objects.filter(pk__in=ids).values_list("pk", "name"))


def _render_queue(request, *, rejecting: Application | None = None, reject_form: RejectForm | None = None):
    """The queue page; after a refused rejection (``rejecting``) that application comes first, with its form's
    errors, whatever page it would be on."""
    pending = Application.objects.decidable_by(request.user).select_related(
        "applicant", "team", "cluster", "topic__team", "consumer_group", "producer_group"
    )
    filters = ApplicationFilter(request.GET, queryset=pending.order_by("created_at", "id"))
    page = paginate(request, filters.qs)
    apps = list(page.object_list)
    if rejecting is not None:
        apps = [rejecting] + [app for app in apps if app.pk != rejecting.pk]
    names = _topic_names(apps)
    items = [
        {
            "application": app,
            "asked": describe_payload(app, names),
            "reject_form": reject_form if rejecting is not None and app.pk == rejecting.pk else RejectForm(),
        }
        for app in apps
    ]
    back = request.get_full_path() if request.method == "GET" else reverse("approval-queue")
    context = {"filters": filters, "page": page, "items": items, "next": back}
    return render(request, "portal/admin/approval_queue.html", context, status=400 if rejecting else 200)


@decider_required
def approval_queue(request):
    return _render_queue(request)


@decider_required
@require_POST
def application_approve(request, pk):
    application = get_object_or_404(Application, pk=pk)
    try:
        applications.approve(application, by=request.user)
    except ClusterOperationError as error:
        messages.error(
            request,
            _("Application #%(id)s could not be carried out on cluster %(cluster)s and is still pending: %(error)s")
            % {"id": application.pk, "cluster": application.cluster, "error": error},
        )
    except ValidationError as error:
        messages.error(
            request,
            _(
                "Application #%(id)s can no longer be carried out as asked and is still pending: %(error)s "
                "Reject it with a reason for the applicant."
            )
            % {"id": application.pk, "error": " ".join(error.messages)},
        )
    except InvalidTransition as error:
        _not_decided(request, error)
    else:
        messages.success(
            request,
            _("Application #%(id)s (%(kind)s %(name)s) approved.")
            % {"id": application.pk, "kind": application.get_kind_display(), "name": application.subject_name},
        )
    return _back(request, reverse("approval-queue"))


@decider_required
@require_POST
def application_reject(request, pk):
    application = get_object_or_404(Application, pk=pk)
    form = RejectForm(request.POST)
    form.is_valid()
    try:
        applications.reject(application, by=request.user, reason=form.cleaned_data["reason"])
    except InvalidTransition as error:
        _not_decided(request, error)
    except ValidationError as error:
        form.show_errors(error)
        return _render_queue(request, rejecting=application, reject_form=form)
    else:
        messages.success(request, _("Application #%(id)s rejected.") % {"id": application.pk})
    return _back(request, reverse("approval-queue"))


# --- clusters ---------------------------------------------------------------------------------------------------


@login_required
def cluster_list(request):
    clusters = Cluster.objects.prefetch_related("name_servers").annotate(
        broker_count=Count("brokers", filter=Q(brokers__present=True)),
        master_count=Count("brokers", filter=Q(brokers__present=True, brokers__broker_id=0)),
    )
    context = {"clusters": clusters, "can_administer": access.can_administer(request.user)}
    return render(request, "portal/admin/cluster_list.html", context)


@admin_required
def cluster_create(request):
    form = ClusterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            cluster = registry.register_cluster(by=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(
                request,
                _("Cluster %(name)s registered; %(count)d brokers discovered.")
                % {"name": cluster.name, "count": cluster.brokers.filter(present=True).count()},
            )
            return redirect("cluster-detail", pk=cluster.pk)
    status = 400 if form.errors else 200
    return render(request, "portal/admin/cluster_form.html", {"form": form}, status=status)


@login_required
def cluster_detail(request, pk):
    cluster = get_object_or_404(Cluster.objects.prefetch_related("name_servers"), pk=pk)
    can_administer = access.can_administer(request.user)
    form = None
    status = 200
    if request.method == "POST":
        if not can_administer:
            raise PermissionDenied
        form = ClusterForm.for_cluster(cluster, request.POST)
        if form.is_valid():
            try:
                registry.update_cluster(cluster, by=request.user, **form.changes())
            except ValidationError as error:
                form.show_errors(error)
            else:
                messages.success(request, _("Cluster %(name)s saved.") % {"name": cluster.name})
                return redirect("cluster-detail", pk=cluster.pk)
        status = 400
    elif can_administer:
        form = ClusterForm.for_cluster(cluster)
    context = {
        "cluster": cluster,
        "brokers": Broker.objects.filter(cluster=cluster).order_by("broker_name", "broker_id"),
        "counts": {
            "topics": Topic.objects.visible_to(request.user).filter(cluster=cluster).count(),
            "consumer_groups": ConsumerGroup.objects.visible_to(request.user).filter(cluster=cluster).count(),
            "producer_groups": ProducerGroup.objects.visible_to(request.user).filter(cluster=cluster).count(),
        },
        "can_administer": can_administer,
        "form": form,
    }
    return render(request, "portal/admin/cluster_detail.html", context, status=status)


@admin_required
@require_POST
def cluster_sync(request, pk):
    cluster = get_object_or_404(Cluster, pk=pk)
    report = sync.sync_cluster(cluster)
    if not report.ran:
        messages.warning(request, _("A sync of %(name)s is already running; try again shortly.") % {"name": cluster})
        return redirect("cluster-detail", pk=cluster.pk)
    counts = report.counts()
    messages.info(
        request,
        _(
            "Sync of %(name)s: %(brokers)d brokers; imported %(imported_topics)d topics and %(imported_groups)d "
            "consumer groups; flagged %(missing_topics)d topics and %(missing_groups)d consumer groups missing; "
            "restored %(restored_topics)d topics and %(restored_groups)d consumer groups."
        )
        % {"name": cluster.name, **counts},
    )
    for error in report.errors:
        messages.error(request, error)
    return redirect("cluster-detail", pk=cluster.pk)


# --- unowned and missing entries --------------------------------------------------------------------------------


@admin_required
def unowned_list(request):
    filters = UnownedFilter(request.GET)
    filters.is_valid()
    kind = filters.cleaned_data.get("kind") or "topic"
    entries = (
        ENTRY_MODELS[kind]
        .objects.filter(Q(team__isnull=True) | Q(state=RegistryState.MISSING))
        .select_related("cluster", "team")
        .order_by("cluster__name", "name")
    )
    if filters.cleaned_data.get("cluster"):
        entries = entries.filter(cluster=filters.cleaned_data["cluster"])
    context = {
        "filters": filters,
        "kind": kind,
        "page": paginate(request, entries),
        "detail_url_name": DETAIL_URL_NAMES[ENTRY_MODELS[kind]],
        "team_select": AdoptForm(auto_id=False)["team"].as_widget(attrs={"required": True}),
        "next": request.get_full_path(),
    }
    return render(request, "portal/admin/unowned_list.html", context)


@admin_required
@require_POST
def entry_adopt(request, kind, pk):
    entry = get_object_or_404(entry_model(kind).objects.select_related("team"), pk=pk)
    form = AdoptForm(request.POST)
    if form.is_valid():
        try:
            registry.adopt(entry, team=form.cleaned_data["team"], by=request.user)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(
                request,
                _("%(name)s now belongs to team %(team)s.") % {"name": entry.name, "team": form.cleaned_data["team"]},
            )
            return _back(request, reverse("unowned-list"))
    for error in form.errors.values():
        messages.error(request, _("%(name)s was not adopted: %(error)s") % {"name": entry.name, "error": error[0]})
    return _back(request, reverse("unowned-list"))


# --- audit log --------------------------------------------------------------------------------------------------


def _shown(value) -> str:
    """A snapshot value as text: JSON for structures, timestamps in the viewer's time zone, "—" for nothing."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if value is None or value == "":
        return "—"
    moment = parse_datetime(value) if isinstance(value, str) else None
    if moment is not None and timezone.is_aware(moment):
        return date_format(timezone.localtime(moment), "Y-m-d H:i:s")
    return str(value)


def changed_values(before, after) -> list[tuple[str, str, str]]:
    """The keys whose values differ between two snapshots, as (key, before, after) texts; a creation or deletion
    shows every key that has a value on its one side."""
    before, after = before or {}, after or {}
    rows = [(key, _shown(before.get(key)), _shown(after.get(key))) for key in sorted(set(before) | set(after))]
    return [row for row in rows if row[1] != row[2]]


@admin_required
def audit_log(request):
    filters = AuditFilter(request.GET, queryset=AuditEntry.objects.select_related("cluster"))
    page = paginate(request, filters.qs)
    items = [{"entry": entry, "changes": changed_values(entry.before, entry.after)} for entry in page.object_list]
    return render(request, "portal/admin/audit_log.html", {"filters": filters, "page": page, "items": items})


# --- teams ------------------------------------------------------------------------------------------------------


@admin_required
def team_create(request):
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            team = registry.create_team(by=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("Team %(name)s created.") % {"name": team.name})
            return redirect("team-detail", pk=team.pk)
    status = 400 if form.errors else 200
    return render(request, "portal/admin/team_form.html", {"form": form}, status=status)

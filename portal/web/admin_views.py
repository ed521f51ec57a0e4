"""The admin pages: the approval queue, clusters and their brokers, unowned entries, the audit log, new teams, and
the users (creating them, their flags, their passwords).

Each view parses the request, calls one service and renders; who may do what is asked of ``portal.access`` (and the
services check it again). Cluster pages are readable by every signed-in user; the rest is for portal admins, except
the approval queue, which also shows a team admin the associations with their team's topics. As on the business
pages, the decorators go login, then method, then permission: anonymous visitors are sent to log in, a method a page
does not offer is 405 for everyone signed in, and a form with errors comes back with 200.
"""

from functools import wraps

from django.contrib import messages
from django.contrib.auth import get_user_model, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.filters import ApplicationFilterSet, AuditEntryFilterSet, RegistryFilterSet, UserFilterSet
from portal.models import (
    Application,
    AuditEntry,
    Broker,
    Cluster,
    ConsumerGroup,
    ProducerGroup,
    RegistryState,
    Topic,
)
from portal.services import applications, registry, sync
from portal.services.applications import InvalidTransition
from portal.services.cluster_ops import ClusterOperationError
from portal.services.trace_storage import trace_storage
from portal.web import monitoring
from portal.web.admin_forms import (
    AdoptForm,
    ClusterForm,
    EntryKindForm,
    PasswordForm,
    RejectForm,
    TeamForm,
    UserCreateForm,
    UserForm,
)
from portal.web.display import changed_values, describe_payload, topic_names
from portal.web.entries import DETAIL_URL_NAMES, ENTRY_MODELS, entry_model
from portal.web.forms import submitted
from portal.web.navigation import redirect_back
from portal.web.paging import filtered_page
from stats.queries.health import latest_broker_probes


def allowed_if(gate):
    """Run the view only for users ``gate`` (a ``portal.access`` function) lets in; 403 for the others. Goes below
    ``login_required`` and the method decorator."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not gate(request.user):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


# --- approval queue ---------------------------------------------------------------------------------------------

# The queue holds pending applications for the user to decide, so neither the state nor "mine" filters it.
QUEUE_FILTERS = ("kind", "team", "cluster", "applicant")


def _not_decided(request, error: InvalidTransition) -> None:
    """The application was decided, cancelled or is being approved by someone else meanwhile."""
    messages.warning(request, _("%(reason)s Nothing was done.") % {"reason": error})


def _render_queue(request, *, rejecting: Application | None = None, reject_form: RejectForm | None = None):
    """The queue page; after a refused rejection (``rejecting``) that application comes first, with its form's
    errors, whatever page it would be on."""
    pending = Application.objects.decidable_by(request.user).select_related(
        "applicant", "team", "cluster", "topic__team", "consumer_group", "producer_group"
    )
    context = filtered_page(request, ApplicationFilterSet, pending.order_by("created_at", "id"), only=QUEUE_FILTERS)
    apps = list(context["page"].object_list)
    if rejecting is not None:
        apps = [rejecting] + [app for app in apps if app.pk != rejecting.pk]
    names = topic_names(apps)
    items = [
        {
            "application": app,
            "asked": describe_payload(app, names),
            "reject_form": reject_form if rejecting is not None and app.pk == rejecting.pk else RejectForm(),
        }
        for app in apps
    ]
    back = request.get_full_path() if request.method == "GET" else reverse("approval-queue")
    context.update(items=items, next=back)
    return render(request, "portal/admin/approval_queue.html", context)


@login_required
@require_safe
@allowed_if(access.can_open_approval_queue)
def approval_queue(request):
    return _render_queue(request)


@login_required
@require_POST
@allowed_if(access.can_open_approval_queue)
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
    return redirect_back(request, "approval-queue")


@login_required
@require_POST
@allowed_if(access.can_open_approval_queue)
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
    return redirect_back(request, "approval-queue")


# --- clusters ---------------------------------------------------------------------------------------------------


@login_required
@require_safe
def cluster_list(request):
    clusters = Cluster.objects.prefetch_related("name_servers").annotate(
        broker_count=Count("brokers", filter=Q(brokers__present=True)),
        master_count=Count("brokers", filter=Q(brokers__present=True, brokers__broker_id=0)),
    )
    context = {"clusters": clusters, "can_administer": access.can_administer(request.user)}
    return render(request, "portal/admin/cluster_list.html", context)


@login_required
@allowed_if(access.can_administer)
def cluster_create(request):
    form = ClusterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            cluster = registry.register_cluster(by=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            count = cluster.brokers.filter(present=True).count()
            messages.success(
                request,
                ngettext(
                    "Cluster %(name)s registered; %(count)d broker discovered.",
                    "Cluster %(name)s registered; %(count)d brokers discovered.",
                    count,
                )
                % {"name": cluster.name, "count": count},
            )
            return redirect("cluster-detail", pk=cluster.pk)
    return render(request, "portal/admin/cluster_form.html", {"form": form})


@login_required
def cluster_detail(request, pk):
    cluster = get_object_or_404(Cluster.objects.prefetch_related("name_servers"), pk=pk)
    can_administer = access.can_administer(request.user)
    form = None
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
    elif can_administer:
        form = ClusterForm.for_cluster(cluster)
    window = monitoring.requested_window(request)
    probes = latest_broker_probes(cluster.pk)
    context = {
        "cluster": cluster,
        "brokers": [
            {"broker": broker, "probe": probes.get((broker.broker_name, broker.broker_id))}
            for broker in Broker.objects.filter(cluster=cluster).order_by("broker_name", "broker_id")
        ],
        "counts": {
            "topics": Topic.objects.visible_to(request.user).filter(cluster=cluster).count(),
            "consumer_groups": ConsumerGroup.objects.visible_to(request.user).filter(cluster=cluster).count(),
            "producer_groups": ProducerGroup.objects.visible_to(request.user).filter(cluster=cluster).count(),
        },
        "can_administer": can_administer,
        "form": form,
        "window": window,
        "charts": monitoring.cluster_charts(cluster, window),
        "trace_storage": trace_storage(cluster),
    }
    return render(request, "portal/admin/cluster_detail.html", context)


@login_required
@require_POST
@allowed_if(access.can_administer)
def cluster_sync(request, pk):
    cluster = get_object_or_404(Cluster, pk=pk)
    report = sync.sync_cluster(cluster)
    if not report.ran:
        messages.warning(request, _("A sync of %(name)s is already running; try again shortly.") % {"name": cluster})
        return redirect("cluster-detail", pk=cluster.pk)
    messages.info(request, report.summary())
    for error in report.errors:
        messages.error(request, error)
    return redirect("cluster-detail", pk=cluster.pk)


# --- unowned and missing entries --------------------------------------------------------------------------------


@login_required
@require_safe
@allowed_if(access.can_administer)
def unowned_list(request):
    kinds = EntryKindForm(request.GET)
    kind = (kinds.is_valid() and kinds.cleaned_data["kind"]) or "topic"
    entries = (
        ENTRY_MODELS[kind]
        .objects.filter(Q(team__isnull=True) | Q(state=RegistryState.MISSING))
        .select_related("cluster", "team")
        .order_by("cluster__name", "name")
    )
    context = filtered_page(request, RegistryFilterSet, entries, only=("q", "cluster"))
    context.update(
        kinds=kinds,
        kind=kind,
        detail_url_name=DETAIL_URL_NAMES[ENTRY_MODELS[kind]],
        team_select=AdoptForm(auto_id=False)["team"].as_widget(attrs={"required": True}),
        next=request.get_full_path(),
    )
    return render(request, "portal/admin/unowned_list.html", context)


@login_required
@require_POST
@allowed_if(access.can_administer)
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
            return redirect_back(request, "unowned-list")
    for error in form.errors.values():
        messages.error(request, _("%(name)s was not adopted: %(error)s") % {"name": entry.name, "error": error[0]})
    return redirect_back(request, "unowned-list")


# --- audit log --------------------------------------------------------------------------------------------------


@login_required
@require_safe
@allowed_if(access.can_administer)
def audit_log(request):
    context = filtered_page(request, AuditEntryFilterSet, AuditEntry.objects.select_related("cluster"))
    context["items"] = [
        {"entry": entry, "changes": changed_values(entry.before, entry.after)} for entry in context["page"].object_list
    ]
    return render(request, "portal/admin/audit_log.html", context)


# --- teams ------------------------------------------------------------------------------------------------------


@login_required
@allowed_if(access.can_administer)
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
    return render(request, "portal/admin/team_form.html", {"form": form})


# --- users ------------------------------------------------------------------------------------------------------


def _users():
    return get_user_model().objects.prefetch_related("memberships__team")


@login_required
@require_safe
@allowed_if(access.can_administer)
def user_list(request):
    context = filtered_page(request, UserFilterSet, _users().order_by("username"))
    return render(request, "portal/admin/user_list.html", context)


@login_required
@allowed_if(access.can_administer)
def user_create(request):
    form = UserCreateForm(submitted(request))
    if form.is_valid():
        try:
            user = registry.create_user(by=request.user, **form.user_fields())
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("User %(name)s created.") % {"name": user.get_username()})
            return redirect("user-detail", pk=user.pk)
    return render(request, "portal/admin/user_form.html", {"form": form})


# The user page holds two forms; the password form says so with this value of its hidden ``form`` field.
PASSWORD_FORM = "password"


@login_required
@allowed_if(access.can_administer)
def user_detail(request, pk):
    user = get_object_or_404(_users(), pk=pk)
    data = submitted(request)
    setting_password = data is not None and data.get("form") == PASSWORD_FORM
    form = UserForm.for_user(user, None if setting_password else data)
    password_form = PasswordForm(data if setting_password else None)
    if setting_password and password_form.is_valid():
        try:
            changed = registry.set_password(user, password_form.new_password(), by=request.user)
        except ValidationError as error:
            password_form.show_errors(error)
        else:
            update_session_auth_hash(request, changed)  # an admin who changes their own password stays logged in
            messages.success(request, _("The password of %(name)s is changed.") % {"name": user.get_username()})
            return redirect("user-detail", pk=user.pk)
    elif form.is_valid():
        try:
            registry.update_user(user, by=request.user, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("User %(name)s saved.") % {"name": user.get_username()})
            return redirect("user-detail", pk=user.pk)
    context = {"account": user, "form": form, "password_form": password_form, "password_form_name": PASSWORD_FORM}
    return render(request, "portal/admin/user_detail.html", context)

"""Application pages: the forms that submit applications, the list and page of one's applications, cancelling.

Each form view parses the form, hands the payload to ``portal.services.applications.submit`` and shows the
service's ValidationError on the fields it names (the form comes back with 200, as every form page does); the
service decides whether the applicant may ask at all (PermissionDenied -> 403)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.filters import ApplicationFilterSet
from portal.models import Application, ApplicationKind, ConsumerGroup, ProducerGroup, Topic
from portal.services import applications
from portal.services.messages import operations
from portal.web.display import describe_payload, topic_names
from portal.web.entries import visible_entry
from portal.web.forms import (
    AssociationForm,
    ConsumerGroupCreateForm,
    DeletionForm,
    ProducerGroupCreateForm,
    SubscriptionFormSet,
    TopicChangeForm,
    TopicCreateForm,
    TopicGroupFormSet,
    applicable_teams,
    submitted,
)
from portal.web.operation_display import MESSAGE_KINDS, operation_view, progress_status
from portal.web.paging import filtered_page


def _submit(request, form, formset=None, **arguments):
    """Submit an application and go to its page; None after showing the service's field errors on the form."""
    try:
        application = applications.submit(request.user, reason=form.cleaned_data["reason"], **arguments)
    except ValidationError as error:
        form.show_errors(error, formset)
        return None
    messages.success(
        request, _("Application #%(id)s submitted; you will be notified when it is decided.") % {"id": application.pk}
    )
    return redirect("application-detail", application.pk)


def _require_a_team(user):
    """Creation forms make no sense for someone who may apply for no team: show 403 instead of an empty choice."""
    if not applicable_teams(user).exists():
        raise PermissionDenied(_("You belong to no team; ask a team admin to add you to one."))


@login_required
def apply_topic(request):
    """A new topic, with the consumer groups that will read it if the applicant lists them (one approval)."""
    _require_a_team(request.user)
    form = TopicCreateForm(submitted(request), user=request.user)
    formset = TopicGroupFormSet(submitted(request), prefix="group")
    if request.method == "POST" and form.is_valid() and formset.is_valid():
        data = form.cleaned_data
        done = _submit(
            request,
            form,
            formset,
            kind=ApplicationKind.TOPIC_CREATE,
            team=data["team"],
            cluster=data["cluster"],
            payload=form.payload(formset.consumer_groups()),
        )
        if done:
            return done
    return render(request, "portal/apply_topic.html", {"form": form, "formset": formset})


@login_required
def apply_consumer_group(request):
    _require_a_team(request.user)
    initial_topic = request.GET.get("topic", "")
    form = ConsumerGroupCreateForm(
        submitted(request), user=request.user, initial={"cluster": request.GET.get("cluster")}
    )
    formset = SubscriptionFormSet(
        submitted(request), prefix="sub", initial=[{"topic": initial_topic}] if initial_topic else None
    )
    if request.method == "POST" and form.is_valid() and formset.is_valid():
        data = form.cleaned_data
        subscriptions = formset.subscriptions(data["cluster"], request.user)
        if subscriptions is not None:
            done = _submit(
                request,
                form,
                formset,
                kind=ApplicationKind.CONSUMER_GROUP_CREATE,
                team=data["team"],
                cluster=data["cluster"],
                payload=form.payload(subscriptions),
            )
            if done:
                return done
    return render(request, "portal/apply_consumer_group.html", {"form": form, "formset": formset})


@login_required
def apply_producer_group(request):
    _require_a_team(request.user)
    form = ProducerGroupCreateForm(submitted(request), user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        payload = form.payload(request.user)
        if payload is not None:
            done = _submit(
                request,
                form,
                kind=ApplicationKind.PRODUCER_GROUP_CREATE,
                team=data["team"],
                cluster=data["cluster"],
                payload=payload,
            )
            if done:
                return done
    return render(request, "portal/apply_producer_group.html", {"form": form})


@login_required
def topic_apply_change(request, pk):
    topic = visible_entry(Topic, request.user, pk)
    if not access.can_change(request.user, topic):
        raise PermissionDenied
    form = TopicChangeForm(submitted(request), topic=topic)
    if request.method == "POST" and form.is_valid():
        done = _submit(
            request,
            form,
            kind=ApplicationKind.TOPIC_CHANGE,
            team=topic.team,
            cluster=topic.cluster,
            payload=form.payload(),
            topic=topic,
        )
        if done:
            return done
    return render(request, "portal/apply_topic_change.html", {"form": form, "topic": topic})


@login_required
def topic_associate(request, pk):
    topic = visible_entry(Topic, request.user, pk)
    _require_a_team(request.user)
    form = AssociationForm(submitted(request), user=request.user)
    if request.method == "POST" and form.is_valid():
        done = _submit(
            request,
            form,
            kind=ApplicationKind.TOPIC_ASSOCIATION,
            team=form.cleaned_data["team"],
            cluster=topic.cluster,
            payload={"role": form.cleaned_data["role"]},
            topic=topic,
        )
        if done:
            return done
    return render(request, "portal/apply_topic_association.html", {"form": form, "topic": topic})


def _apply_deletion(request, entry, kind, target):
    """The deletion form of any registry entry: only a reason, and only for those who may delete it."""
    if not access.can_apply_deletion_for(request.user, entry.team):
        raise PermissionDenied
    form = DeletionForm(submitted(request))
    if request.method == "POST" and form.is_valid():
        done = _submit(request, form, kind=kind, team=entry.team, cluster=entry.cluster, payload={}, **{target: entry})
        if done:
            return done
    return render(request, "portal/apply_deletion.html", {"form": form, "entry": entry, "kind": kind})


@login_required
def topic_apply_delete(request, pk):
    topic = visible_entry(Topic, request.user, pk)
    return _apply_deletion(request, topic, ApplicationKind.TOPIC_DELETE, "topic")


@login_required
def consumer_group_apply_delete(request, pk):
    group = visible_entry(ConsumerGroup, request.user, pk)
    return _apply_deletion(request, group, ApplicationKind.CONSUMER_GROUP_DELETE, "consumer_group")


@login_required
def producer_group_apply_delete(request, pk):
    group = visible_entry(ProducerGroup, request.user, pk)
    return _apply_deletion(request, group, ApplicationKind.PRODUCER_GROUP_DELETE, "producer_group")


@login_required
@require_safe
def application_list(request):
    visible = Application.objects.visible_to(request.user).select_related(
        "applicant", "team", "cluster", "topic", "consumer_group", "producer_group"
    )
    return render(request, "portal/application_list.html", filtered_page(request, ApplicationFilterSet, visible))


def _visible_application(user, pk):
    return get_object_or_404(
        Application.objects.visible_to(user).select_related(
            "applicant", "team", "cluster", "topic", "consumer_group", "producer_group", "decided_by"
        ),
        pk=pk,
    )


@login_required
@require_safe
def application_detail(request, pk):
    application = _visible_application(request.user, pk)
    context = {
        "application": application,
        "asked": describe_payload(application, topic_names([application])),
        "can_cancel": access.can_cancel(request.user, application),
        "can_decide": access.can_decide(request.user, application),
        "operation": operation_view(request, application),
    }
    return render(request, "portal/application_detail.html", context)


@login_required
@require_safe
def application_progress(request, pk):
    """A message operation's progress as JSON, polled by its page while it runs (404 for other applications)."""
    application = _visible_application(request.user, pk)
    if application.kind not in MESSAGE_KINDS:
        raise Http404
    return JsonResponse(progress_status(application))


@login_required
@require_POST
def application_run_again(request, pk):
    """A portal admin sends what a message operation failed to send, or what a stalled run left."""
    application = _visible_application(request.user, pk)
    try:
        operations.run_operation_again(request.user, application)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("The operation runs again: it sends only what is not sent yet."))
    return redirect("application-detail", application.pk)


@login_required
@require_POST
def application_cancel(request, pk):
    application = _visible_application(request.user, pk)
    if not access.can_cancel(request.user, application):
        raise PermissionDenied
    try:
        applications.cancel(application, by=request.user)
    except applications.InvalidTransition as error:
        messages.error(request, str(error))
    else:
        messages.success(request, _("Application #%(id)s cancelled.") % {"id": application.pk})
    return redirect("application-detail", application.pk)

"""A consumer group's message operations, reached from its page: the offset reset (a preview of every queue's
offsets before and after, then the application), skipping the backlog or the retry backlog, re-delivering a past
time range, pausing and resuming, and the group's broker-side settings.

Every change is an application (a portal admin's is carried out at once, ``message_operations.apply_or_act``);
only the owning team and portal admins may ask (``access.can_change``), everyone signed in may look."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from portal import access
from portal.models import ApplicationKind, ConsumerGroup
from portal.models.people import is_portal_admin
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages import inspection, operations
from portal.web.entries import visible_entry
from portal.web.forms import submitted
from portal.web.message_forms import GroupSettingsForm, OffsetResetForm, ReasonForm, RedeliverForm
from portal.web.message_operations import apply_or_act


def group_for_change(request, pk) -> ConsumerGroup:
    """The group, if the user may see it (else 404) and ask for changes to it (else 403)."""
    group = visible_entry(ConsumerGroup, request.user, pk)
    if not access.can_change(request.user, group):
        raise PermissionDenied
    return group


def _subscribed_topics(group: ConsumerGroup) -> list[str]:
    return sorted(group.subscriptions.values_list("topic__name", flat=True))


def reset_target(data: dict) -> tuple[object, dict | None]:
    """The form's "when" (an aware datetime or "newest") and queue (None: every queue of the topic)."""
    when = "newest" if data["to"] == "newest" else data["timestamp"]
    queue = None if data.get("queue_id") is None else {"broker_name": data["broker_name"], "queue_id": data["queue_id"]}
    return when, queue


@login_required
def offset_reset(request, pk):
    """Step 1 (GET): the form. Step 2 (POST "preview"): per queue, min, max, current and target offsets. Step 3
    (POST "confirm"): the application (or, for an admin, the reset itself)."""
    group = group_for_change(request, pk)
    form = OffsetResetForm(submitted(request), topics=_subscribed_topics(group))
    preview, preview_error = None, ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        when, queue = reset_target(data)
        if "confirm" in request.POST:
            payload = {
                "topic": data["topic"],
                "when": "newest" if when == "newest" else when.isoformat(),
                "queue": queue,
            }
            done = apply_or_act(
                request, ApplicationKind.OFFSET_RESET, payload=payload, reason=data["reason"], consumer_group=group
            )
            if done:
                return done
        try:
            queues = operations.preview_offset_reset(request.user, group, data["topic"], when, queue=queue)
            preview = [(row, row.target_offset - row.current_offset) for row in queues]
        except ValidationError as error:
            form.show_errors(error)
        except ClusterOperationError as error:
            preview_error = str(error)
    context = {
        "group": group,
        "form": form,
        "preview": preview,
        "preview_error": preview_error,
        "acts_directly": is_portal_admin(request.user),
    }
    return render(request, "portal/messages/offset_reset.html", context)


@login_required
def redeliver(request, pk):
    """Re-deliver a past time range of one of the group's topics to this group (through its retry topic)."""
    group = group_for_change(request, pk)
    form = RedeliverForm(submitted(request), topics=_subscribed_topics(group))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        payload = {"topic": data["topic"], "begin": data["begin"].isoformat(), "end": data["end"].isoformat()}
        done = apply_or_act(
            request, ApplicationKind.REDELIVER_RANGE, payload=payload, reason=data["reason"], consumer_group=group
        )
        if done:
            return done
    context = {"group": group, "form": form, "acts_directly": is_portal_admin(request.user)}
    return render(request, "portal/messages/redeliver.html", context)


# The one-button operations of the group page: no payload, only a reason.
SIMPLE_OPERATIONS = {
    "skip-retry-backlog": ApplicationKind.SKIP_RETRY_BACKLOG,
    "pause": ApplicationKind.GROUP_PAUSE,
    "resume": ApplicationKind.GROUP_RESUME,
}


@login_required
@require_POST
def simple_operation(request, pk, operation):
    group = group_for_change(request, pk)
    kind = SIMPLE_OPERATIONS.get(operation)
    if kind is None:
        raise Http404(operation)
    form = ReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    done = apply_or_act(request, kind, payload={}, reason=reason, consumer_group=group)
    return done or redirect("consumer-group-detail", group.pk)


@login_required
def group_settings(request, pk):
    """The group's settings on the brokers, as they are now, and the application for new ones."""
    group = group_for_change(request, pk)
    current, current_error = None, ""
    try:
        current = inspection.group_settings(request.user, group)
    except ClusterOperationError as error:
        current_error = str(error)
    initial = {name: getattr(current, name, None) for name in GroupSettingsForm.setting_names} if current else None
    form = GroupSettingsForm(submitted(request), initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        payload = form.changed_settings(current)
        done = apply_or_act(
            request, ApplicationKind.GROUP_SETTINGS, payload=payload, reason=data["reason"], consumer_group=group
        )
        if done:
            return done
    context = {
        "group": group,
        "form": form,
        "current": current,
        "current_error": current_error,
        "acts_directly": is_portal_admin(request.user),
    }
    return render(request, "portal/messages/group_settings.html", context)

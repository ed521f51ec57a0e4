"""What a consumer group's page shows live from the cluster, on demand: its retry and dead-letter messages (with
the original topic and message id of each, and a selection to resend), and its online clients' running info and
thread stacks (as RocketMQ Dashboard and MQCloud show them).

Everyone signed in may look (like the group's page); resending the selected dead letters is an application of the
owning team (a portal admin's is carried out at once)."""

import time

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.inputs import MAX_CLIENT_ID_LENGTH, printable_or_empty
from portal.models import ApplicationKind, ConsumerGroup
from portal.models.people import is_portal_admin
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages import inspection
from portal.services.messages.clients import describe
from portal.web.entries import visible_entry
from portal.web.message_forms import DeadLetterResendForm
from portal.web.message_operations import apply_or_act

DEAD_LETTER_KINDS = ("dlq", "retry")
# How many of the newest entries the browse shows.
DEAD_LETTERS_SHOWN = 200


def _which(request) -> str:
    which = request.GET.get("which", "dlq")
    return which if which in DEAD_LETTER_KINDS else "dlq"


@login_required
@require_safe
def dead_letters(request, pk):
    group = visible_entry(ConsumerGroup, request.user, pk)
    which = _which(request)
    entries, error = [], ""
    try:
        entries = inspection.dead_letters(request.user, group, which, newest=DEAD_LETTERS_SHOWN)
    except ClusterOperationError as failure:
        error = str(failure)
    context = {
        "group": group,
        "which": which,
        "entries": entries,
        "error": error,
        "shown": DEAD_LETTERS_SHOWN,
        "form": DeadLetterResendForm(),
        "can_resend": which == "dlq" and access.can_change(request.user, group),
        "acts_directly": is_portal_admin(request.user),
    }
    return render(request, "portal/messages/dead_letters.html", context)


@login_required
@require_POST
def dead_letters_resend(request, pk):
    """Resend the selected dead letters to their original topic or to the group's retry topic."""
    group = visible_entry(ConsumerGroup, request.user, pk)
    if not access.can_change(request.user, group):
        raise PermissionDenied
    form = DeadLetterResendForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        payload = {"msg_ids": data["ids"], "to": data["to"]}
        done = apply_or_act(
            request, ApplicationKind.DEAD_LETTER_RESEND, payload=payload, reason=data["reason"], consumer_group=group
        )
        if done:
            return done
    else:
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
    return redirect("group-dead-letters", group.pk)


@login_required
@require_safe
def client_diagnostics(request, pk):
    group = visible_entry(ConsumerGroup, request.user, pk)
    clients, error = [], ""
    try:
        now_ms = int(time.time() * 1000)
        clients = [describe(client, now_ms=now_ms) for client in inspection.client_diagnostics(request.user, group)]
    except ClusterOperationError as failure:
        error = str(failure)
    return render(request, "portal/messages/clients.html", {"group": group, "clients": clients, "error": error})


@login_required
@require_safe
def client_stack(request, pk):
    """One client's thread stack, asked for when the button is pressed (a Java client dumps its threads; the C++
    client sends none)."""
    group = visible_entry(ConsumerGroup, request.user, pk)
    client_id = printable_or_empty(request.GET.get("client", ""), MAX_CLIENT_ID_LENGTH)
    if not client_id:
        return HttpResponseBadRequest(_("Name the client (its client id)."))
    stack, error = None, ""
    try:
        stack = inspection.client_stack(request.user, group, client_id)
    except ClusterOperationError as failure:
        error = str(failure)
    context = {"group": group, "client_id": client_id, "stack": stack, "error": error}
    return render(request, "portal/messages/client_stack.html", context)

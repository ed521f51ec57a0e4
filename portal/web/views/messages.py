"""Message pages: a topic's message search (started as a background job whose progress the page polls, then its
hits page by page), a message's page (every field, its properties, its body when the user may see bodies, where it
went for each consumer group, its trace) and its resend.

Searching and reading messages need a login; who may see a body is ``portal.access.can_see_message_bodies``
(through the bodies service, which audits each body shown). A resend is an application; a portal admin's is
carried out at once (``act_directly``)."""

import datetime as dt
import functools

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from monitor.messages.present import body_views, message_fields
from portal.inputs import message_id_or_404
from portal.models import ApplicationKind, Cluster, MessageSearch, Subscription, Topic
from portal.models.people import is_portal_admin
from portal.services.cluster_ops import ClusterOperationError
from portal.services.messages import bodies, searches, traces
from portal.web.entries import visible_entry
from portal.web.forms import submitted
from portal.web.message_forms import ResendForm, SearchForm
from portal.web.message_operations import apply_or_act
from portal.web.paging import PAGE_SIZE

RECENT_SEARCHES = 20
HEX_ROW_BYTES = 16
# The hex dump shows at most this much of a body (a 4 MiB body would be a quarter of a million rows).
HEX_SHOWN_BYTES = 64 * 1024


def from_millis(millis: int) -> dt.datetime:
    """A broker's epoch milliseconds as an aware datetime (shown in the reader's time zone)."""
    return dt.datetime.fromtimestamp(millis / 1000, tz=dt.UTC)


def search_status(search: MessageSearch) -> dict:
    """What the progress display shows of a search (the page's JSON endpoint and the API's status)."""
    return {
        "id": search.pk,
        "state": search.state,
        "progress": round(search.progress, 4),
        "found": search.found,
        "note": search.note,
        "error": search.error,
        "finished": search.is_finished,
    }


@login_required
def message_search(request, pk):
    """The topic's search form (GET) and the start of a search (POST, then its page), with the user's recent
    searches of the topic."""
    topic = visible_entry(Topic, request.user, pk)
    form = SearchForm(submitted(request))
    if request.method == "POST" and form.is_valid():
        try:
            search = searches.start_search(request.user, topic.cluster, topic=topic.name, **form.criteria())
        except ValidationError as error:
            form.show_errors(error)
        else:
            return redirect("message-search-detail", search.pk)
    recent = searches.visible_searches(request.user).filter(
        cluster=topic.cluster, topic_name=topic.name, requested_by=request.user
    )
    context = {"topic": topic, "form": form, "recent": recent.order_by("-created_at")[:RECENT_SEARCHES]}
    return render(request, "portal/messages/search.html", context)


def _visible_search(user, pk) -> MessageSearch:
    return get_object_or_404(searches.visible_searches(user).select_related("cluster", "topic"), pk=pk)


@login_required
@require_safe
def message_search_detail(request, pk):
    """A search: its progress while it runs (polled by static/js/messages.js), then its hits, a page at a time."""
    search = _visible_search(request.user, pk)
    page = Paginator(searches.hits(search), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"search": search, "status": search_status(search), "page": page}
    return render(request, "portal/messages/search_detail.html", context)


@login_required
@require_safe
def message_search_status(request, pk):
    return JsonResponse(search_status(_visible_search(request.user, pk)))


@login_required
@require_POST
def message_search_cancel(request, pk):
    search = _visible_search(request.user, pk)
    try:
        searches.cancel_search(request.user, search)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    return redirect("message-search-detail", search.pk)


def cluster_answers(view):
    """A page that must read the cluster first: when it cannot be asked, say so (502) instead of failing."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except ClusterOperationError as error:
            return render(request, "portal/messages/unavailable.html", {"error": str(error)}, status=502)

    return wrapped


def _message(request, cluster_pk, topic_name, msg_id):
    """The cluster, the message and whether the user may see its body; 404 for a malformed id or a message the
    cluster does not hold on that topic."""
    cluster = get_object_or_404(Cluster, pk=cluster_pk)
    if not message_id_or_404(msg_id):
        raise Http404(msg_id)
    try:
        msg, may_see_body = bodies.message_for_view(request.user, cluster, topic_name, msg_id)
    except bodies.MessageNotFound as missing:
        raise Http404(str(missing)) from None
    return cluster, msg, may_see_body


def hex_rows(data: bytes) -> list[tuple[str, str, str]]:
    """A hex dump as ``hexdump -C`` prints it: (offset, bytes in hex, printable ASCII) per 16 bytes."""
    rows = []
    for start in range(0, len(data), HEX_ROW_BYTES):
        chunk = data[start : start + HEX_ROW_BYTES]
        text = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        rows.append((f"{start:08x}", chunk.hex(" "), text))
    return rows


def _resend_groups(cluster, topic_name) -> list[str]:
    """The consumer groups a message of the topic may be resent to (their retry topics): the registered groups
    subscribed to it."""
    subscribed = Subscription.objects.filter(topic__cluster=cluster, topic__name=topic_name)
    return sorted(set(subscribed.values_list("consumer_group__name", flat=True)))


@login_required
@require_safe
@cluster_answers
def message_detail(request, cluster_pk, topic_name, msg_id):
    cluster, msg, may_see_body = _message(request, cluster_pk, topic_name, msg_id)
    topic = Topic.objects.filter(cluster=cluster, name=topic_name).first()
    try:
        tracks, tracks_error = bodies.tracks(cluster, msg), ""
    except ClusterOperationError as error:
        tracks, tracks_error = [], str(error)
    try:
        trace, trace_error = traces.as_json(traces.read_trace(cluster, msg, tracks)), ""
    except ClusterOperationError as error:
        trace, trace_error = None, str(error)
    views = body_views(msg.body) if may_see_body else None
    context = {
        "cluster": cluster,
        "topic": topic,
        "topic_name": topic_name,
        "msg": msg,
        "born_at": from_millis(msg.born_timestamp),
        "stored_at": from_millis(msg.store_timestamp),
        "fields": message_fields(msg),
        "properties": sorted(msg.properties.items()),
        "may_see_body": may_see_body,
        "body": views,
        "hex": hex_rows(msg.body[:HEX_SHOWN_BYTES]) if may_see_body else [],
        "hex_cut": may_see_body and len(msg.body) > HEX_SHOWN_BYTES,
        "tracks": tracks,
        "tracks_error": tracks_error,
        "trace": trace,
        "trace_error": trace_error,
        "resend_form": ResendForm(groups=_resend_groups(cluster, topic_name)) if topic else None,
        "acts_directly": is_portal_admin(request.user),
    }
    return render(request, "portal/messages/message.html", context)


@login_required
@require_POST
@cluster_answers
def message_resend(request, cluster_pk, topic_name, msg_id):
    """Apply for a resend of the message (to its topic or a group's retry topic); an admin's is done at once."""
    cluster, msg, _may_see_body = _message(request, cluster_pk, topic_name, msg_id)
    topic = Topic.objects.filter(cluster=cluster, name=topic_name).first()
    if topic is None:
        raise PermissionDenied(_("Only messages of registered topics are resent from the portal."))
    form = ResendForm(request.POST, groups=_resend_groups(cluster, topic_name))
    if not form.is_valid():
        messages.error(request, " ".join(str(error) for errors in form.errors.values() for error in errors))
        return redirect("message-detail", cluster.pk, topic_name, msg_id)
    data = form.cleaned_data
    payload = {"msg_ids": [msg.msg_id], "to": data["to"]}
    if data["to"] == "retry":
        payload["group"] = data["group"]
    done = apply_or_act(
        request, ApplicationKind.MESSAGE_RESEND, payload=payload, reason=data["reason"], team=topic.team, topic=topic
    )
    return done or redirect("message-detail", cluster.pk, topic_name, msg_id)

"""Registry pages: the topic and consumer-group lists, the topic and group pages (with their traffic and lag
charts, :mod:`portal.web.monitoring`), and description editing.

Topic information is public (anonymous visitors included), its traffic is not; everything else needs a login.
What a user may see comes from the querysets of ``portal.access`` (invisible -> 404), what they may do from its
``can_*`` functions (visible but not allowed -> 403)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from portal import access
from portal.filters import ConsumerGroupFilterSet, TopicFilterSet
from portal.models import Application, ApplicationState, ConsumerGroup, ProducerGroup, Subscription, Topic
from portal.services import registry
from portal.services.subscriptions import group_subscriptions
from portal.web import monitoring
from portal.web.entries import detail_url_name, entry_model, visible_entry
from portal.web.forms import DescriptionForm, submitted
from portal.web.paging import filtered_page
from portal.web.views import consumers, producers
from portal.web.warning_panels import warning_panel
from stats.queries.tracing import RECENT as TRACING_RECENT
from stats.queries.tracing import tracing_clients
from stats.queries.traffic import group_now, offset_moves


def _pending_applications(user, **target):
    return (
        Application.objects.visible_to(user)
        .filter(state=ApplicationState.PENDING, **target)
        .select_related("applicant", "team")
    )


@require_safe
def topic_list(request):
    topics = Topic.objects.visible_to(request.user).select_related("cluster", "team")
    return render(request, "portal/topic_list.html", filtered_page(request, TopicFilterSet, topics))


@require_safe
def topic_detail(request, pk):
    user = request.user
    topic = visible_entry(Topic, user, pk)
    subscriptions = (
        Subscription.objects.filter(topic=topic, consumer_group__in=ConsumerGroup.objects.visible_to(user))
        .select_related("consumer_group__team")
        .order_by("consumer_group__name")
    )
    context = {
        "topic": topic,
        "subscriptions": subscriptions,
        "producer_groups": ProducerGroup.objects.visible_to(user).filter(topics=topic).select_related("team"),
        "associations": topic.associations.select_related("user").order_by("role", "user__username"),
        "pending": _pending_applications(user, topic=topic),
        "can_change": access.can_change(user, topic),
        "can_delete": access.can_apply_deletion_for(user, topic.team),
    }
    if access.can_see_monitoring(user):
        window = monitoring.requested_window(request)
        minute, consumers = monitoring.topic_consumer_list(topic, subscriptions, ConsumerGroup.objects.visible_to(user))
        warnings = warning_panel(user, topic, window)
        charts = monitoring.topic_charts(topic, window, warnings.in_range) + monitoring.topic_producer_charts(
            topic, window
        )
        context.update(window=window, charts=charts, consumers=consumers, minute=minute, **warnings.context)
        context.update(
            tracing_clients=tracing_clients(topic.cluster_id, topic.name, timezone.now()),
            tracing_minutes=int(TRACING_RECENT.total_seconds() // 60),
        )
    return render(request, "portal/topic_detail.html", context)


@login_required
@require_safe
def consumer_group_list(request):
    groups = ConsumerGroup.objects.visible_to(request.user).select_related("cluster", "team")
    return render(request, "portal/consumer_group_list.html", filtered_page(request, ConsumerGroupFilterSet, groups))


@login_required
@require_safe
def consumer_group_detail(request, pk):
    user = request.user
    group = visible_entry(ConsumerGroup, user, pk)
    now = group_now(group.cluster_id, group.name, timezone.now())
    check = group_subscriptions(group, now.minute, now.clients)
    window = monitoring.requested_window(request)
    warnings = warning_panel(user, group, window)
    context = {
        "group": group,
        "subscriptions": check,
        "pending": _pending_applications(user, consumer_group=group),
        "can_change": access.can_change(user, group),
        "can_delete": access.can_apply_deletion_for(user, group.team),
        "window": window,
        "charts": monitoring.group_charts(group, [topic.topic for topic in check.topics], window, warnings.in_range),
        "now": now,
        "offset_moves": offset_moves(group.cluster_id, group.name, window.since),
        **consumers.group_page_context(request, group, window),
        **warnings.context,
    }
    return render(request, "portal/consumer_group_detail.html", context)


@login_required
@require_safe
def producer_group_detail(request, pk):
    user = request.user
    group = visible_entry(ProducerGroup, user, pk)
    context = {
        "group": group,
        "topics": group.topics.select_related("team").order_by("name"),
        "pending": _pending_applications(user, producer_group=group),
        "can_change": access.can_change(user, group),
        "can_delete": access.can_apply_deletion_for(user, group.team),
        **producers.group_page_context(request, group),
        **warning_panel(user, group).context,
    }
    return render(request, "portal/producer_group_detail.html", context)


@login_required
def entry_description(request, kind, pk):
    """Edit the portal-only description of a topic or group (no application needed: the cluster never sees it)."""
    entry = visible_entry(entry_model(kind), request.user, pk)
    if not access.can_change(request.user, entry):
        raise PermissionDenied
    form = DescriptionForm(submitted(request), initial={"description": entry.description})
    if request.method == "POST" and form.is_valid():
        try:
            registry.update_description(entry, form.cleaned_data["description"], by=request.user)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("Description saved."))
            return redirect(detail_url_name(entry), entry.pk)
    return render(request, "portal/entry_description.html", {"entry": entry, "form": form, "kind": kind})

"""Warning pages: the list (mine, per cluster, topic or group; open first), a warning with its events and
deliveries, acknowledging, the thresholds of a topic or group (its owning team's overrides) and the defaults (portal
admins, under /manage/), and each user's subscriptions, mutes and channels.

Who may see a warning is ``access.visible_warnings`` (invisible -> 404); the services check who may change what
(PermissionDenied -> 403). Everything needs a login."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal import access
from portal.filters import WarningFilterSet
from portal.models import Channel, ChannelKind, SubjectType, WarningKind, warning_params
from portal.models.warnings import KIND_SUBJECT
from portal.services.warnings import channels, delivery, lifecycle, queries, subscriptions, thresholds
from portal.web import warning_details
from portal.web.admin_views import allowed_if
from portal.web.entries import detail_url_name, entry_model, visible_entry
from portal.web.forms import submitted
from portal.web.navigation import redirect_back
from portal.web.paging import filtered_page
from portal.web.warnings_forms import ChannelForm, MuteForm, SubscriptionsForm, ThresholdForm


@login_required
@require_safe
def warning_list(request):
    """Every warning the user may see, open ones first; the filters narrow it to mine, a cluster, a topic or group,
    a type, a state, or the warnings someone was told about."""
    warnings = queries.open_first(queries.visible(request.user))
    return render(request, "portal/warnings/warning_list.html", filtered_page(request, WarningFilterSet, warnings))


@login_required
@require_safe
def warning_detail(request, pk):
    user = request.user
    warning = get_object_or_404(queries.visible(user), pk=pk)
    entry = access.warning_entry(warning)
    context = {
        "warning": warning,
        "entry": entry,
        "subject_url": _subject_url(warning, entry),
        "events": warning.events.all(),
        "deliveries": queries.deliveries(user, warning),
        "all_deliveries": access.can_see_all_deliveries(user),
        "can_acknowledge": warning.is_open and not warning.acknowledged_at and access.can_acknowledge(user, warning),
        "figures": warning_details.present(warning.details),
        "charts": warning_details.warning_charts(warning, entry, timezone.now()),
    }
    return render(request, "portal/warnings/warning_detail.html", context)


def _subject_url(warning, entry) -> str:
    """The page of what the warning is about, when the portal has one."""
    if entry is not None:
        return reverse(detail_url_name(entry), args=[entry.pk])
    if warning.broker_id is not None:
        return reverse("broker-detail", args=[warning.broker_id])
    if warning.host:
        return reverse("server-detail", args=[warning.host])
    return ""


@login_required
@require_POST
def warning_acknowledge(request, pk):
    warning = get_object_or_404(queries.visible(request.user), pk=pk)
    if lifecycle.acknowledge(warning, request.user):
        messages.success(request, _("Acknowledged: the warning is no longer repeated; its end will still be told."))
    else:
        messages.info(request, _("The warning is resolved or was already acknowledged."))
    return redirect_back(request, reverse("warning-detail", args=[warning.pk]))


# --- thresholds -------------------------------------------------------------------------------------------------


def _threshold_forms(
    request, kinds, current: dict, inherited: dict
) -> tuple[list[ThresholdForm], ThresholdForm | None]:
    """One form per type; the one the POST saves (its ``kind`` field) is bound to the POST, and also returned."""
    posted = request.POST.get("kind") if request.method == "POST" else None
    forms = [
        ThresholdForm(
            submitted(request) if kind == posted else None,
            kind=kind,
            current=current.get(kind, {}),
            inherited=inherited[kind],
        )
        for kind in kinds
    ]
    return forms, next((form for form in forms if form.is_bound), None)


def _save_threshold(request, form: ThresholdForm, save) -> bool:
    """Validate ``form`` and hand its parameters to ``save(kind, params)`` (a thresholds service); errors go back
    on the form's fields."""
    if not form.is_valid():
        return False
    try:
        save(form.kind, form.params())
    except ValidationError as error:
        form.show_errors(error)
        return False
    messages.success(request, _("Thresholds of “%(kind)s” saved.") % {"kind": form.label})
    return True


@login_required
def entry_thresholds(request, kind, pk):
    """The owning team's overrides of a topic's or group's warning thresholds; blank fields inherit the defaults."""
    entry = visible_entry(entry_model(kind), request.user, pk)
    if not access.can_change(request.user, entry):
        raise PermissionDenied
    kinds = warning_params.kinds_for(entry)
    effective = thresholds.thresholds_for(entry.cluster)
    inherited = {warning_kind: effective.default(warning_kind) for warning_kind in kinds}
    forms, posted = _threshold_forms(request, kinds, queries.overrides_of(entry), inherited)
    if posted is not None and _save_threshold(
        request, posted, lambda kind, params: thresholds.set_override(kind, entry, params, by=request.user)
    ):
        return redirect(detail_url_name(entry), entry.pk)
    context = {"entry": entry, "entry_url_name": detail_url_name(entry), "forms": forms}
    return render(request, "portal/warnings/thresholds.html", context)


@login_required
@allowed_if(access.can_administer)
def warning_defaults(request):
    """Portal admins: every type's default parameters; blank fields keep the built-in values."""
    kinds = WarningKind.values
    forms, posted = _threshold_forms(request, kinds, queries.defaults(), warning_params.BUILTIN)
    if posted is not None and _save_threshold(
        request, posted, lambda kind, params: thresholds.set_default(kind, params, by=request.user)
    ):
        return redirect("warning-defaults")
    return render(request, "portal/warnings/thresholds.html", {"forms": forms})


# --- subscriptions and mutes ------------------------------------------------------------------------------------


@login_required
def warning_preferences(request):
    """Per warning type, the channels to be told through (untouched types keep the defaults: in-app and e-mail),
    and the user's mutes in force."""
    user = request.user
    defaults = channels.default_channels(user)  # creates the built-in in-app (and e-mail) channel on first need
    kinds = queries.subscribable_kinds(user)
    selected, by_default = queries.chosen_channels(user, kinds, defaults)
    form = SubscriptionsForm(
        submitted(request), kinds=kinds, channels=subscriptions.channels_of(user), selected=selected
    )
    if request.method == "POST" and "reset" in request.POST:
        subscriptions.reset(user, request.POST["reset"])
        messages.success(request, _("Back to the defaults."))
        return redirect("warning-preferences")
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            for kind, chosen in form.changes().items():
                subscriptions.subscribe(user, kind, chosen)
        messages.success(request, _("Your subscriptions are saved."))
        return redirect("warning-preferences")
    context = {"form": form, "by_default": by_default, "mutes": subscriptions.active_mutes(user)}
    return render(request, "portal/warnings/preferences.html", context)


def _mute_subject(request, of: str, pk: int) -> dict:
    """What the mute page was opened for: a topic's or group's (``of`` is its kind as in its URLs) or a warning's
    subject (``of`` = "warning"); the cluster, subject type and name, and for a warning its type (the suggested
    choice). A subject the user may not see is 404."""
    if of == "warning":
        warning = get_object_or_404(queries.visible(request.user), pk=pk)
        return {
            "cluster": warning.cluster,
            "subject_type": warning.subject_type,
            "subject_name": warning.subject_name,
            "kind": warning.kind,
        }
    entry = visible_entry(entry_model(of), request.user, pk)
    return {"cluster": entry.cluster, "subject_type": of.replace("-", "_"), "subject_name": entry.name}


@login_required
def mute_create(request, of, pk):
    subject = _mute_subject(request, of, pk)
    suggested = subject.pop("kind", "")
    kinds = [kind for kind, subject_type in KIND_SUBJECT.items() if subject_type == subject["subject_type"]]
    form = MuteForm(submitted(request), kinds=kinds)
    if suggested:
        form.initial["kind"] = suggested
    if request.method == "POST" and form.is_valid():
        try:
            subscriptions.mute(request.user, **subject, **form.cleaned_data)
        except ValidationError as error:
            form.show_errors(error)
        else:
            messages.success(request, _("Muted %(name)s.") % {"name": subject["subject_name"]})
            return redirect("warning-preferences")
    context = {"form": form, **subject, "subject_type_label": SubjectType(subject["subject_type"]).label}
    return render(request, "portal/warnings/mute_form.html", context)


@login_required
@require_POST
def mute_delete(request, pk):
    if not subscriptions.unmute(request.user, pk):
        raise Http404("no such mute of yours")
    messages.success(request, _("The mute is ended."))
    return redirect_back(request, "warning-preferences")


# --- channels ---------------------------------------------------------------------------------------------------


def _own_channel(request, pk) -> Channel:
    """One of the user's channels; anyone else's is 404 (channels are personal)."""
    return get_object_or_404(subscriptions.channels_of(request.user), pk=pk)


@login_required
@require_safe
def channel_list(request):
    channels.default_channels(request.user)
    rows = [(channel, channels.describe(channel)) for channel in subscriptions.channels_of(request.user)]
    return render(request, "portal/warnings/channel_list.html", {"rows": rows})


def _save_channel(request, form: ChannelForm, save) -> Channel | None:
    if not form.is_valid():
        return None
    try:
        return save()
    except ValidationError as error:
        form.show_errors(error)
        return None


@login_required
def channel_create(request):
    form = ChannelForm(submitted(request), initial={"kind": request.GET.get("kind", ChannelKind.DINGTALK)})
    if request.method == "POST":
        kind = form.data.get("kind", "")
        fields = channels.TRANSPORTS[kind].config_fields if kind in channels.TRANSPORTS else ()
        channel = _save_channel(
            request,
            form,
            lambda: channels.create_channel(
                request.user, kind=form.cleaned_data["kind"], name=form.cleaned_data["name"], config=form.config(fields)
            ),
        )
        if channel is not None:
            messages.success(request, _("Channel %(name)s added; send it a test.") % {"name": channel.name})
            return redirect("channel-list")
    return render(request, "portal/warnings/channel_form.html", {"form": form})


@login_required
def channel_edit(request, pk):
    channel = _own_channel(request, pk)
    if channel.kind == ChannelKind.IN_APP:
        raise Http404("the in-app channel has nothing to configure")
    stored = channels.config_of(channel)
    initial = {"name": channel.name, "address": stored.get("address", "")}
    form = ChannelForm(submitted(request), editing=channel, initial=initial)
    if request.method == "POST":
        fields = channels.TRANSPORTS[channel.kind].config_fields
        saved = _save_channel(
            request,
            form,
            lambda: channels.update_channel(
                channel, by=request.user, name=form.cleaned_data["name"], config=form.config(fields)
            ),
        )
        if saved is not None:
            messages.success(request, _("Channel %(name)s saved.") % {"name": saved.name})
            return redirect("channel-list")
    context = {"form": form, "channel": channel, "described": channels.describe(channel)}
    return render(request, "portal/warnings/channel_form.html", context)


@login_required
@require_POST
def channel_test(request, pk):
    channel = _own_channel(request, pk)
    try:
        error = delivery.send_test(channel, by=request.user)
    except delivery.TooManyTests as limited:
        messages.error(
            request,
            _("Too many channel tests this minute; try again in %(seconds)d seconds.")
            % {"seconds": limited.retry_after},
        )
        return redirect_back(request, "channel-list")
    if error:
        messages.error(request, _("The test failed: %(error)s") % {"error": error})
    else:
        messages.success(request, _("Test sent through %(name)s.") % {"name": channel.name})
    return redirect_back(request, "channel-list")


@login_required
@require_POST
def channel_enable(request, pk):
    """``enabled`` = "true" switches the channel on (a fresh start after a fix), anything else off."""
    channel = _own_channel(request, pk)
    enabled = request.POST.get("enabled") == "true"
    channels.set_enabled(channel, enabled, by=request.user)
    if enabled:
        messages.success(request, _("Channel %(name)s enabled.") % {"name": channel.name})
    else:
        messages.success(request, _("Channel %(name)s disabled.") % {"name": channel.name})
    return redirect_back(request, "channel-list")


@login_required
@require_POST
def channel_delete(request, pk):
    """Remove an e-mail or webhook channel (the in-app one stays: unsubscribe from it instead)."""
    channel = _own_channel(request, pk)
    try:
        channels.delete_channel(channel, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Channel %(name)s deleted.") % {"name": channel.name})
    return redirect("channel-list")

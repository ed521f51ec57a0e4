"""Forms of the warning pages. Like the other business forms they only parse what was typed into what the
warning services take; the rules (parameter bounds, channel settings, mute subjects) are the services', whose
ValidationError is shown back on the fields it names (:meth:`portal.web.forms.ServiceForm.show_errors`)."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from portal.models import ChannelKind, WarningKind
from portal.models.warning_params import PARAMS, Param
from portal.web.forms import ServiceForm

YES_NO = {True: _("yes"), False: _("no")}


def _shown(param: Param, value) -> str:
    if param.type is bool:
        return str(YES_NO[bool(value)])
    return number_format(value, use_l10n=False) if param.type is float else str(value)


class ThresholdForm(ServiceForm):
    """The parameters of one warning type (``kind``), each blank to inherit: for an override, the default the
    portal admins set; for a default, the built-in value. ``current`` is what is stored now, ``inherited`` what a
    blank field means (shown as its placeholder). Pages show one such form per type, each saved on its own."""

    def __init__(self, data=None, *, kind: str, current: dict, inherited: dict):
        super().__init__(data, prefix=kind)
        self.kind = kind
        self.label = WarningKind(kind).label
        self.current = current
        for param in PARAMS[kind]:
            inherit = _shown(param, inherited[param.name])
            if param.type is bool:
                field = forms.TypedChoiceField(
                    choices=[
                        ("", _("inherit (%(value)s)") % {"value": inherit}),
                        ("true", _("yes")),
                        ("false", _("no")),
                    ],
                    coerce=lambda value: value == "true",
                    empty_value=None,
                    required=False,
                )
                initial = "" if param.name not in current else ("true" if current[param.name] else "false")
            else:
                number = forms.IntegerField if param.type is int else forms.FloatField
                field = number(
                    required=False,
                    widget=forms.NumberInput(attrs={"placeholder": inherit, "step": "any"}),
                    help_text=param.range_text,  # the range is the service's; this only tells it up front
                )
                initial = current.get(param.name)
            field.label = capfirst(param.label)
            field.initial = initial
            self.fields[param.name] = field

    @property
    def overridden(self) -> bool:
        return bool(self.current)

    def params(self) -> dict:
        """The values typed (blank ones left out: inherited), for the thresholds service."""
        return {name: value for name, value in self.cleaned_data.items() if value is not None}


class MuteForm(ServiceForm):
    """How long to mute one subject (chosen by the link that opened the page), and optionally only one type."""

    kind = forms.ChoiceField(label=_("Warning type"), required=False)
    until = forms.DateTimeField(
        label=_("Muted until"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        help_text=_("In your time zone."),
    )

    def __init__(self, data=None, *, kinds: list[str], **kwargs):
        initial = {"until": timezone.localtime() + dt.timedelta(hours=1)}
        super().__init__(data, initial=initial, **kwargs)
        self.fields["kind"].choices = [("", _("every type")), *((kind, WarningKind(kind).label) for kind in kinds)]


class ChannelForm(ServiceForm):
    """A new e-mail, webhook or Alertmanager channel (``editing``: an existing one, whose kind stays and whose blank
    URL and secret keep the stored ones: they carry tokens and are never shown back)."""

    kind = forms.ChoiceField(label=_("Kind"))
    name = forms.CharField(label=_("Name"), max_length=100)
    address = forms.CharField(
        label=_("E-mail address"),
        required=False,
        help_text=_("E-mail only; blank: your account's address."),
    )
    url = forms.CharField(
        label=_("Webhook URL"),
        required=False,
        widget=forms.URLInput,
        help_text=_(
            "Webhooks only: the robot's or endpoint's URL, with its token; for Alertmanager, its base URL "
            "(http://alertmanager:9093)."
        ),
    )
    secret = forms.CharField(
        label=_("Secret"),
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=_(
            "DingTalk signing secret (SEC...), the key the generic webhook signs its requests with, or an optional "
            "bearer token sent to Alertmanager (for a proxy in front of it)."
        ),
    )

    def __init__(self, data=None, *, editing=None, **kwargs):
        super().__init__(data, **kwargs)
        self.editing = editing
        self.fields["kind"].choices = [
            (kind, label) for kind, label in ChannelKind.choices if kind != ChannelKind.IN_APP
        ]
        if editing is not None:
            del self.fields["kind"]
            self.fields["url"].help_text = _("Blank: keep the stored URL.")
            self.fields["secret"].help_text = _("Blank: keep the stored secret.")

    def config(self, fields: tuple[str, ...]) -> dict:
        """The settings of a channel taking ``fields`` (its transport's ``config_fields``); when editing, a blank URL
        or secret is left out (kept as stored)."""
        values = {name: self.cleaned_data[name] for name in fields}
        if self.editing is not None:
            values = {name: value for name, value in values.items() if value or name not in ("url", "secret")}
        return values


class SubscriptionsForm(forms.Form):
    """Per warning type (``kinds``), the user's channels to be told through; ``selected`` is what applies now (a
    subscription's channels, or the defaults)."""

    def __init__(self, data=None, *, kinds: list[str], channels, selected: dict[str, set[int]]):
        super().__init__(data)
        self.channels = sorted(channels, key=lambda channel: channel.kind != ChannelKind.IN_APP)  # in-app first
        for kind in kinds:
            self.fields[kind] = forms.ModelMultipleChoiceField(
                queryset=channels,
                required=False,
                label=WarningKind(kind).label,
                widget=forms.CheckboxSelectMultiple,
                initial=sorted(selected.get(kind, ())),
            )
        self.selected = selected

    def rows(self) -> list[tuple[str, str, list[tuple[object, bool]]]]:
        """For the table: (kind, label, [(channel, checked)]) per type, as submitted or as stored."""
        rows = []
        for name, field in self.fields.items():
            if self.is_bound:
                checked = {str(value) for value in self.data.getlist(name)}
            else:
                checked = {str(pk) for pk in self.selected.get(name, ())}
            rows.append((name, field.label, [(channel, str(channel.pk) in checked) for channel in self.channels]))
        return rows

    def changes(self) -> dict[str, list]:
        """The types whose chosen channels differ from what applies now, with their new channels."""
        return {
            kind: list(channels)
            for kind, channels in self.cleaned_data.items()
            if {channel.pk for channel in channels} != set(self.selected.get(kind, ()))
        }

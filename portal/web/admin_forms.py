"""Forms of the admin pages (approval queue, clusters, unowned entries, teams, users); their lists' filters are in
``portal.filters``.

Like the business forms they only parse input into what the services take; the rules themselves (cluster names,
name-server reachability, who may decide what) live in the models and services, whose ValidationError is put back
on the fields through :meth:`ServiceForm.show_errors`.
"""

import re

from django import forms
from django.contrib.auth import password_validation
from django.utils.translation import gettext_lazy as _

from portal.models import Team
from portal.models.validation import TRACE_TOPIC
from portal.web.forms import ServiceForm


class RejectForm(ServiceForm):
    """The service requires the reason; its error comes back on this field."""

    reason = forms.CharField(
        label=_("Reason for rejecting"),
        widget=forms.Textarea(attrs={"rows": 2, "required": True}),
        required=False,
    )


def split_addresses(text: str) -> list[str]:
    """Name-server addresses typed one per line or separated by ';' (RocketMQ's own separator), in order, once."""
    return list(dict.fromkeys(part.strip() for part in re.split(r"[;\n\r]+", text) if part.strip()))


class ClusterForm(ServiceForm):
    """Registering a cluster, or editing one (``editing=True``: a blank secret keeps the stored one). The secret is
    never rendered back, not even after an error."""

    name = forms.CharField(label=_("Name"), max_length=64, help_text=_("The portal's name for this cluster."))
    namesrv_addrs = forms.CharField(
        label=_("Name servers"),
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "10.0.0.1:9876\n10.0.0.2:9876"}),
        help_text=_("host:port, one per line or separated by ';'."),
    )
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)
    acl_access_key = forms.CharField(
        label=_("ACL access key"),
        max_length=128,
        required=False,
        help_text=_("Only for clusters with ACL enabled."),
    )
    acl_secret_key = forms.CharField(
        label=_("ACL secret key"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    trace_topic = forms.CharField(
        label=_("Trace topic"),
        max_length=127,
        initial=TRACE_TOPIC,
        required=False,
        help_text=_(
            "Where this cluster's tracing clients write their trace records (RMQ_SYS_TRACE_TOPIC unless they are "
            "given a custom trace topic; blank for RMQ_SYS_TRACE_TOPIC); message traces are read from it."
        ),
    )

    def __init__(self, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if editing:
            self.fields["acl_secret_key"].help_text = _("Leave blank to keep the stored secret.")

    @classmethod
    def for_cluster(cls, cluster, data=None) -> "ClusterForm":
        initial = {
            "name": cluster.name,
            "namesrv_addrs": "\n".join(ns.address for ns in cluster.name_servers.all()),
            "description": cluster.description,
            "acl_access_key": cluster.acl_access_key,
            "trace_topic": cluster.trace_topic,
        }
        return cls(data, initial=initial, editing=True)

    def clean_namesrv_addrs(self) -> list[str]:
        addresses = split_addresses(self.cleaned_data["namesrv_addrs"])
        if not addresses:
            raise forms.ValidationError(_("Give at least one name-server address."), code="required")
        return addresses

    def clean_trace_topic(self) -> str:
        return self.cleaned_data["trace_topic"] or TRACE_TOPIC

    def changes(self) -> dict:
        """The fields to pass to ``update_cluster``: everything typed, except a blank secret (keep the stored one)."""
        fields = dict(self.cleaned_data)
        if not fields["acl_secret_key"]:
            del fields["acl_secret_key"]
        return fields


class AdoptForm(ServiceForm):
    team = forms.ModelChoiceField(label=_("Team"), queryset=Team.objects.all(), empty_label=_("Choose a team"))


class EntryKindForm(forms.Form):
    """Which kind of entry the unowned list shows (its other filters are the registry's, ``portal.filters``)."""

    kind = forms.ChoiceField(
        label=_("Kind"),
        required=False,
        choices=[
            ("topic", _("Topics")),
            ("consumer-group", _("Consumer groups")),
            ("producer-group", _("Producer groups")),
        ],
    )


class TeamForm(ServiceForm):
    name = forms.CharField(label=_("Name"), max_length=64)
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)


class PasswordForm(ServiceForm):
    """A new password, typed twice; how strong it must be is the service's business (Django's validators). Never
    rendered back."""

    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=password_validation.password_validators_help_text_html(),
    )
    password_again = forms.CharField(
        label=_("Password again"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    def clean(self):
        data = super().clean()
        if data.get("password") and data.get("password_again") and data["password"] != data["password_again"]:
            self.add_error("password_again", _("The two passwords differ."))
        return data

    def new_password(self) -> str:
        return self.cleaned_data["password"]


def portal_admin_field() -> forms.BooleanField:
    return forms.BooleanField(
        label=_("Portal admin"),
        required=False,
        help_text=_("Portal admins manage clusters, teams and users and decide applications."),
    )


class UserCreateForm(PasswordForm):
    username = forms.CharField(label=_("User name"), max_length=150)
    email = forms.EmailField(label=_("Email"), required=False)
    is_portal_admin = portal_admin_field()
    field_order = ["username", "email", "password", "password_again", "is_portal_admin"]

    def user_fields(self) -> dict:
        """What ``create_user`` takes."""
        return {key: self.cleaned_data[key] for key in ("username", "email", "password", "is_portal_admin")}


class UserForm(ServiceForm):
    """Editing a user: email and the two flags (an unticked box clears its flag, as HTML forms send nothing)."""

    email = forms.EmailField(label=_("Email"), required=False)
    is_portal_admin = portal_admin_field()
    is_active = forms.BooleanField(label=_("Active"), required=False, help_text=_("Only active users can log in."))

    @classmethod
    def for_user(cls, user, data=None) -> "UserForm":
        initial = {"email": user.email, "is_portal_admin": user.is_staff, "is_active": user.is_active}
        return cls(data, initial=initial)

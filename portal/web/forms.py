"""Forms of the business pages. They only parse what was typed into the types the services take; the rules (names,
queue counts, tag expressions, who may ask for what) are checked by the models and services, whose ValidationError
is shown back on the fields it names (:meth:`ServiceForm.show_errors`)."""

import zoneinfo

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.models import AssociationRole, Cluster, ConsumerGroup, MessageModel, Team, TeamRole, Topic


def submitted(request):
    """A form's data: what a POST sent (even nothing, so that an empty POST is validated), None for a GET."""
    return request.POST if request.method == "POST" else None


def applicable_teams(user):
    """The teams the user may submit applications for (the form's team choices)."""
    return Team.objects.filter(pk__in=[team.pk for team in Team.objects.all() if access.can_apply_for(user, team)])


class ServiceForm(forms.Form):
    """A form whose data goes to a service. ``error_fields`` maps a service's error key to the form field that
    shows it when the names differ (e.g. the payload's ``topic_ids`` is typed into ``topics``)."""

    error_fields: dict[str, str] = {}

    def show_errors(self, error: ValidationError, formset=None) -> None:
        """Put a service's ValidationError on the fields it names; what names no field goes on top of the form,
        and ``subscriptions`` on the formset when there is one."""
        errors = error.error_dict if hasattr(error, "error_dict") else {NON_FIELD_ERRORS: error.error_list}
        for key, messages in errors.items():
            field = self.error_fields.get(key, key)
            if formset is not None and field == formset.error_key:
                formset.non_form_errors().extend(ValidationError(messages).messages)
            elif field in self.fields:
                self.add_error(field, messages)
            else:
                self.add_error(None, messages)


class ApplicationForm(ServiceForm):
    """What every application has: the reason the applicant gives."""

    reason = forms.CharField(
        label=_("Reason"), widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text=_("Why you need this.")
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = self.fields.pop("reason")  # last, after what the subclass asks for


class NewEntryForm(ApplicationForm):
    """Creations: the team that will own the entry and the cluster it is created on."""

    team = forms.ModelChoiceField(label=_("Owning team"), queryset=Team.objects.none())
    cluster = forms.ModelChoiceField(label=_("Cluster"), queryset=Cluster.objects.all())
    field_order = ["team", "cluster", "name"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = applicable_teams(user)


class TopicCreateForm(NewEntryForm):
    name = forms.CharField(label=_("Topic name"), max_length=255)
    queue_nums = forms.IntegerField(label=_("Queue count"), initial=8, help_text=_("Queues per master broker."))
    ordered = forms.BooleanField(label=_("Ordered"), required=False)
    trace_enabled = forms.BooleanField(label=_("Message trace"), required=False)
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def payload(self, consumer_groups: list[dict]) -> dict:
        data = self.cleaned_data
        payload = {key: data[key] for key in ("name", "queue_nums", "ordered", "trace_enabled", "description")}
        if consumer_groups:
            payload["consumer_groups"] = consumer_groups
        return payload


class TopicGroupForm(forms.Form):
    """One consumer group asked for with a new topic; it subscribes to that topic with ``tag_expression``."""

    name = forms.CharField(label=_("Consumer group name"), max_length=300, required=False)
    message_model = forms.ChoiceField(label=_("Message model"), choices=MessageModel.choices)
    tag_expression = forms.CharField(label=_("Tag expression"), max_length=1024, initial="*", required=False)
    description = forms.CharField(label=_("Description"), max_length=1000, required=False)


class BaseTopicGroupFormSet(forms.BaseFormSet):
    """The consumer-group rows of a topic application; rows without a name are ignored."""

    error_key = "consumer_groups"

    def consumer_groups(self) -> list[dict]:
        """The named rows as the service takes them (it validates them)."""
        return [form.cleaned_data for form in self.forms if form.cleaned_data.get("name")]


TopicGroupFormSet = forms.formset_factory(TopicGroupForm, formset=BaseTopicGroupFormSet, extra=3, max_num=20)


class ConsumerGroupCreateForm(NewEntryForm):
    name = forms.CharField(label=_("Consumer group name"), max_length=300)
    message_model = forms.ChoiceField(label=_("Message model"), choices=MessageModel.choices)
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)

    def payload(self, subscriptions: list[dict]) -> dict:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "message_model": data["message_model"],
            "description": data["description"],
            "subscriptions": subscriptions,
        }


class SubscriptionForm(forms.Form):
    topic = forms.CharField(label=_("Topic"), max_length=255, required=False)
    tag_expression = forms.CharField(label=_("Tag expression"), max_length=1024, initial="*", required=False)


class BaseSubscriptionFormSet(forms.BaseFormSet):
    """The subscription rows of a consumer-group application; empty rows are ignored."""

    error_key = "subscriptions"

    def subscriptions(self, cluster, user) -> list[dict] | None:
        """The rows as the service takes them (``topic_id`` + ``tag_expression``), or None after putting an error
        on each row naming a topic that is not registered on ``cluster``."""
        rows = [form.cleaned_data for form in self.forms if form.cleaned_data.get("topic")]
        names = {row["topic"].strip() for row in rows}
        ids = dict(Topic.objects.visible_to(user).filter(cluster=cluster, name__in=names).values_list("name", "id"))
        for form in self.forms:
            name = form.cleaned_data.get("topic", "").strip()
            if name and name not in ids:
                form.add_error(
                    "topic",
                    _("No topic named %(name)s is registered on cluster %(cluster)s.")
                    % {"name": name, "cluster": cluster},
                )
        if len(ids) < len(names):
            return None
        return [{"topic_id": ids[row["topic"].strip()], "tag_expression": row["tag_expression"]} for row in rows]


SubscriptionFormSet = forms.formset_factory(SubscriptionForm, formset=BaseSubscriptionFormSet, extra=4, max_num=50)


class ProducerGroupCreateForm(NewEntryForm):
    name = forms.CharField(label=_("Producer group name"), max_length=300)
    topics = forms.CharField(
        label=_("Topics"),
        required=False,
        help_text=_("Names of the topics the group produces to, separated by spaces or commas."),
    )
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 3}), required=False)
    error_fields = {"topic_ids": "topics"}

    def payload(self, user) -> dict | None:
        """The service payload, or None after an error on ``topics`` naming what is not on the cluster."""
        data = self.cleaned_data
        names = set(data["topics"].replace(",", " ").split())
        ids = dict(
            Topic.objects.visible_to(user).filter(cluster=data["cluster"], name__in=names).values_list("name", "id")
        )
        unknown = sorted(names - set(ids))
        if unknown:
            self.add_error(
                "topics",
                _("Not registered on cluster %(cluster)s: %(names)s")
                % {"cluster": data["cluster"], "names": ", ".join(unknown)},
            )
            return None
        return {"name": data["name"], "description": data["description"], "topic_ids": sorted(ids.values())}


class TopicChangeForm(ApplicationForm):
    queue_nums = forms.IntegerField(label=_("Queue count"))
    trace_enabled = forms.BooleanField(label=_("Message trace"), required=False)
    field_order = ["queue_nums", "trace_enabled", "reason"]

    def __init__(self, *args, topic, **kwargs):
        super().__init__(
            *args, initial={"queue_nums": topic.queue_nums, "trace_enabled": topic.trace_enabled}, **kwargs
        )
        self.topic = topic

    def payload(self) -> dict:
        """Only what changes, as the service expects."""
        return {
            key: self.cleaned_data[key]
            for key in ("queue_nums", "trace_enabled")
            if self.cleaned_data[key] != getattr(self.topic, key)
        }


class DeletionForm(ApplicationForm):
    """A deletion needs nothing but the reason."""


class AssociationForm(ApplicationForm):
    team = forms.ModelChoiceField(label=_("Your team"), queryset=Team.objects.none())
    role = forms.ChoiceField(label=_("Role"), choices=AssociationRole.choices, widget=forms.RadioSelect)
    field_order = ["team", "role", "reason"]

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = applicable_teams(user)


class DescriptionForm(ServiceForm):
    description = forms.CharField(label=_("Description"), widget=forms.Textarea(attrs={"rows": 5}), required=False)


class ProfileForm(ServiceForm):
    language = forms.ChoiceField(label=_("Language"), choices=settings.LANGUAGES)
    time_zone = forms.ChoiceField(
        label=_("Time zone"), choices=[(name, name) for name in sorted(zoneinfo.available_timezones())]
    )


class MemberAddForm(ServiceForm):
    username = forms.CharField(label=_("User name"), max_length=150)
    role = forms.ChoiceField(label=_("Role"), choices=TeamRole.choices, initial=TeamRole.MEMBER)
    error_fields = {"user": "username"}

    def clean_username(self):
        username = self.cleaned_data["username"].strip()
        try:
            return get_user_model().objects.get(username=username, is_active=True)
        except get_user_model().DoesNotExist:
            raise ValidationError(_("There is no user named %(name)s."), params={"name": username}) from None


class MemberRemoveForm(forms.Form):
    user = forms.ModelChoiceField(queryset=get_user_model().objects.none())

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user"].queryset = get_user_model().objects.filter(memberships__team=team)


class ConsumerThrottleForm(forms.ModelForm):
    """The consumption throttle of a consumer group (messages per second; empty for none)."""

    class Meta:
        model = ConsumerGroup
        fields = ["consume_throttle_tps"]

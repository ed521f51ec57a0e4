"""Forms of the message pages. They only make what was typed fit the types the services take (and the database:
printable text, 64-bit offsets, queue ids a broker can have); what a search or an operation means, and who may ask
for it, is the services' to decide, and their ValidationError is shown back on the fields it names."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from portal.inputs import (
    MAX_BODY_LENGTH,
    MAX_BROKER_NAME_LENGTH,
    MAX_ID,
    MAX_KEY_LENGTH,
    MAX_QUEUE_ID,
    MAX_SEARCH_KEY_LENGTH,
    MESSAGE_ID,
    is_printable,
)
from portal.models import SearchKind
from portal.web.forms import ServiceForm

DATETIME_WIDGET = forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}, format="%Y-%m-%dT%H:%M:%S")


def _printable(value: str) -> str:
    if not is_printable(value):
        raise ValidationError(_("Control characters are not allowed."), code="unprintable")
    return value


class TextField(forms.CharField):
    """Printable text, stripped, of at most ``max_length`` characters."""

    default_validators = [_printable]


class SearchForm(ServiceForm):
    """One form for the five kinds of search; the fields a kind needs are required by the service."""

    kind = forms.ChoiceField(label=_("Find by"), choices=SearchKind.choices, initial=SearchKind.KEY)
    key = TextField(label=_("Key, unique key or message id"), max_length=MAX_SEARCH_KEY_LENGTH, required=False)
    broker_name = TextField(label=_("Broker name"), max_length=MAX_BROKER_NAME_LENGTH, required=False)
    queue_id = forms.IntegerField(label=_("Queue"), min_value=0, max_value=MAX_QUEUE_ID, required=False)
    queue_offset = forms.IntegerField(label=_("Queue offset"), min_value=0, max_value=MAX_ID, required=False)
    begin = forms.DateTimeField(label=_("Stored from"), widget=DATETIME_WIDGET, required=False)
    end = forms.DateTimeField(label=_("Stored until"), widget=DATETIME_WIDGET, required=False)

    def criteria(self) -> dict:
        """What the search service takes: the kind and the fields that were filled in."""
        return {name: value for name, value in self.cleaned_data.items() if value not in (None, "")}


class ResendForm(ServiceForm):
    """Resend a message (or the selected dead letters) to its original topic or to a group's retry topic."""

    to = forms.ChoiceField(
        label=_("Resend to"),
        choices=[("origin", _("its original topic")), ("retry", _("the consumer group's retry topic"))],
        widget=forms.RadioSelect,
        initial="origin",
    )
    group = forms.ChoiceField(label=_("Consumer group"), required=False, choices=())
    reason = TextField(label=_("Reason"), max_length=1000, required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, groups=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["group"].choices = [("", "—"), *((name, name) for name in groups)]


class MessageIdsField(forms.MultipleChoiceField):
    """Offset message ids, as many as were ticked (any well-formed id; which exist is the service's to check)."""

    max_count = 1000

    def valid_value(self, value) -> bool:
        return bool(MESSAGE_ID.fullmatch(str(value)))

    def validate(self, value):
        super().validate(value)
        if len(value) > self.max_count:
            raise ValidationError(_("At most %(max)d messages at once.") % {"max": self.max_count})


class DeadLetterResendForm(ResendForm):
    ids = MessageIdsField(label=_("Messages"), error_messages={"required": _("Select at least one message.")})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields.pop("group")


class OffsetResetForm(ServiceForm):
    """Where to move a group's offsets: a store time, or the newest message (skip the backlog)."""

    topic = forms.ChoiceField(label=_("Topic"), choices=())
    to = forms.ChoiceField(
        label=_("Reset to"),
        choices=[("time", _("a point in time")), ("newest", _("the newest message (skip the backlog)"))],
        widget=forms.RadioSelect,
        initial="time",
    )
    timestamp = forms.DateTimeField(label=_("Time"), widget=DATETIME_WIDGET, required=False)
    broker_name = TextField(label=_("Broker name"), max_length=MAX_BROKER_NAME_LENGTH, required=False)
    queue_id = forms.IntegerField(label=_("Queue"), min_value=0, max_value=MAX_QUEUE_ID, required=False)
    reason = TextField(label=_("Reason"), max_length=1000, required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, topics=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic"].choices = [(name, name) for name in topics]

    def clean(self):
        data = super().clean()
        if data.get("to") == "time" and not data.get("timestamp"):
            self.add_error("timestamp", _("Choose the time to reset to."))
        if (data.get("queue_id") is None) != (not data.get("broker_name")):
            self.add_error("queue_id", _("A queue is named by its broker and its id: give both or neither."))
        return data


class ReasonForm(ServiceForm):
    """What every operation form ends with: why (shown to the approver)."""

    reason = TextField(label=_("Reason"), max_length=1000, required=False, widget=forms.Textarea(attrs={"rows": 2}))


class RedeliverForm(ReasonForm):
    """A past time range of one of the group's topics, to deliver to the group again."""

    topic = forms.ChoiceField(label=_("Topic"), choices=())
    begin = forms.DateTimeField(label=_("Stored from"), widget=DATETIME_WIDGET)
    end = forms.DateTimeField(label=_("Stored until"), widget=DATETIME_WIDGET)

    def __init__(self, *args, topics=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["topic"].choices = [(name, name) for name in topics]
        self.fields["reason"] = self.fields.pop("reason")

    def clean(self):
        data = super().clean()
        if data.get("begin") and data.get("end") and data["begin"] >= data["end"]:
            self.add_error("end", _("The range must end after it begins."))
        return data


class GroupSettingsForm(ReasonForm):
    """The subscription group's settings on the brokers (what ``updateSubGroup`` sets); only those changed from the
    brokers' current values are asked for."""

    setting_names = (
        "retry_queue_nums",
        "retry_max_times",
        "consume_broadcast_enable",
        "which_broker_when_consume_slowly",
        "broker_id",
    )
    retry_queue_nums = forms.IntegerField(label=_("Retry queues"), min_value=0, max_value=64)
    retry_max_times = forms.IntegerField(label=_("Max retry times"), min_value=-1, max_value=64)
    consume_broadcast_enable = forms.BooleanField(label=_("Broadcast consumption allowed"), required=False)
    which_broker_when_consume_slowly = forms.IntegerField(
        label=_("Broker id to read from when consuming slowly"), min_value=0, max_value=MAX_QUEUE_ID
    )
    broker_id = forms.IntegerField(label=_("Broker id to read from"), min_value=0, max_value=MAX_QUEUE_ID)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"] = self.fields.pop("reason")

    def changed_settings(self, current) -> dict:
        """The settings whose value differs from ``current`` (the brokers' config; all of them if unknown)."""
        return {
            name: self.cleaned_data[name]
            for name in self.setting_names
            if current is None or getattr(current, name, None) != self.cleaned_data[name]
        }


class TestMessageForm(ServiceForm):
    """A test message: its body (text), tags and keys."""

    body = forms.CharField(
        label=_("Body"), max_length=MAX_BODY_LENGTH, widget=forms.Textarea(attrs={"rows": 5}), strip=False
    )
    tags = TextField(label=_("Tag"), max_length=MAX_KEY_LENGTH, required=False)
    keys = TextField(label=_("Keys"), max_length=MAX_KEY_LENGTH, required=False, help_text=_("Separated by spaces."))

    def clean_body(self):
        body = self.cleaned_data["body"]
        if "\x00" in body:
            raise ValidationError(_("Control characters are not allowed."), code="unprintable")
        return body


class ExportForm(forms.Form):
    """A time range of the topic to download, as JSON lines or CSV."""

    begin = forms.DateTimeField(label=_("Stored from"), widget=DATETIME_WIDGET)
    end = forms.DateTimeField(label=_("Stored until"), widget=DATETIME_WIDGET)
    output = forms.ChoiceField(label=_("Format"), choices=[("jsonl", _("JSON lines")), ("csv", "CSV")])

    def clean(self):
        data = super().clean()
        if data.get("begin") and data.get("end") and data["begin"] > data["end"]:
            self.add_error("end", _("The end comes before the beginning."))
        return data

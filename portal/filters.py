"""The filters of every list, one definition per model, shared by the pages (the query-string form above a list) and
the API (query parameters, documented in the schema by these labels and help texts), so that a filter means the
same in both.

- ``?q=`` is the text search: every word of it must appear, in any case, in one of the list's searched fields.
- Yes/no filters take ``true`` or ``false`` (the pages show them as selects); ``mine`` is a checkbox on the pages.
- A page ignores an invalid value and says so above the list; the API answers it with a 400 field error
  (django-filter's DRF backend). Ids are whole numbers the database holds (:class:`IdFilter`): a larger one is an
  invalid value, not an overflow in the database driver.
- Ordering is the API's (DRF's ``?ordering=``); each page lists in one fixed order, except that topics (page and
  API alike) may be sorted by traffic rank (``?sort=``, from the Spark rankings).
"""

import operator
from functools import reduce

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.db.models import F, Q
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from portal import access
from portal.inputs import MAX_ID
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    Broker,
    Cluster,
    ConsumerGroup,
    MessageModel,
    Notification,
    Origin,
    ProducerGroup,
    RegistryState,
    SubjectType,
    Team,
    Topic,
    Warning,
    WarningKind,
    WarningState,
)
from stats.models import JobRun, JobState, RankingKind
from stats.queries.rankings import topic_rank


class TextSearch(django_filters.CharFilter):
    """``?q=``: each word must appear (case-insensitively) in one of ``search_fields``, as DRF's SearchFilter does."""

    def __init__(self, search_fields: tuple[str, ...], **kwargs):
        help_text = format_lazy(
            _("Words that must each appear, in any case, in one of: {fields}."), fields=", ".join(search_fields)
        )
        super().__init__(label=_("Search"), help_text=help_text, **kwargs)
        self.search_fields = search_fields

    def filter(self, queryset, value):
        for word in value.split():
            anywhere = (Q(**{f"{field}__icontains": word}) for field in self.search_fields)
            queryset = queryset.filter(reduce(operator.or_, anywhere))
        return queryset


def yes_no(label, **kwargs) -> django_filters.BooleanFilter:
    """A boolean filter, shown as a select of any / yes / no."""
    choices = [("", _("any")), ("true", _("yes")), ("false", _("no"))]
    return django_filters.BooleanFilter(label=label, widget=forms.Select(choices=choices), **kwargs)


class IdFilter(django_filters.NumberFilter):
    """An id, hidden on the pages (an id is nothing to type: a link sets it and the filter form keeps it)."""

    field_class = forms.IntegerField

    def __init__(self, **kwargs):
        super().__init__(min_value=1, max_value=MAX_ID, widget=forms.HiddenInput, **kwargs)

    def get_max_validator(self):
        return None  # max_value above; django-filter's default (1e50) is meant for decimals


def by_cluster() -> django_filters.ModelChoiceFilter:
    return django_filters.ModelChoiceFilter(
        label=_("Cluster"), queryset=Cluster.objects.all(), empty_label=_("All clusters")
    )


def by_team() -> django_filters.ModelChoiceFilter:
    return django_filters.ModelChoiceFilter(label=_("Team"), queryset=Team.objects.all(), empty_label=_("All teams"))


class PortalFilterSet(django_filters.FilterSet):
    """``only`` narrows one instance to the filters that make sense on its page (the approval queue, where every
    application is pending, has no use for the state filter); the others are neither shown nor applied."""

    def __init__(self, *args, only: tuple[str, ...] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if only is not None:
            self.filters = {name: self.filters[name] for name in only}


# In this order on the pages; each kind adds its own filters, then "mine" (a checkbox) comes last.
REGISTRY_FILTERS = ["q", "cluster", "team", "unowned", "state", "origin"]


class RegistryFilterSet(PortalFilterSet):
    """What topics, consumer groups and producer groups share; usable as it is on a list of any of them."""

    q = TextSearch(("name", "description"))
    cluster = by_cluster()
    team = by_team()
    unowned = yes_no(_("Unowned"), field_name="team", lookup_expr="isnull", help_text=_("Without an owning team."))
    state = django_filters.ChoiceFilter(label=_("State"), choices=RegistryState.choices, empty_label=_("Any state"))
    origin = django_filters.ChoiceFilter(label=_("Origin"), choices=Origin.choices, empty_label=_("Any origin"))
    mine = django_filters.BooleanFilter(
        label=_("My teams' only"),
        method="owned_by_me",
        widget=forms.CheckboxInput,
        help_text=_("Owned by one of your teams."),
    )

    def owned_by_me(self, queryset, name, value: bool):
        return queryset.owned_by(self.request.user) if value else queryset


# The topic list's sorts by traffic: the topics' ranks in their clusters' latest rankings of these kinds.
TOPIC_SORTS = {"traffic_day": RankingKind.TOPIC_TRAFFIC_DAY, "traffic_7d": RankingKind.TOPIC_TRAFFIC_7D}


class TopicFilterSet(RegistryFilterSet):
    ordered = yes_no(_("Ordered"))
    trace_enabled = yes_no(_("Message trace"))
    sort = django_filters.ChoiceFilter(
        label=_("Sort by"),
        choices=[("traffic_day", _("Traffic (day)")), ("traffic_7d", _("Traffic (7 days)"))],
        empty_label=_("Name"),
        method="sorted_by_traffic",
        help_text=_(
            "By rank in the topic's cluster's latest traffic ranking, most messages first; topics it does not list"
            " (no traffic) follow by name."
        ),
    )

    class Meta:
        model = Topic
        fields = [*REGISTRY_FILTERS, "ordered", "trace_enabled", "sort", "mine"]

    def sorted_by_traffic(self, queryset, name, value: str):
        return queryset.annotate(traffic_rank=topic_rank(TOPIC_SORTS[value])).order_by(
            F("traffic_rank").asc(nulls_last=True), "name", "cluster__name"
        )


class ConsumerGroupFilterSet(RegistryFilterSet):
    message_model = django_filters.ChoiceFilter(
        label=_("Message model"), choices=MessageModel.choices, empty_label=_("Any message model")
    )
    topic = IdFilter(label=_("Subscribes to the topic with this id"), field_name="subscriptions__topic")

    class Meta:
        model = ConsumerGroup
        fields = [*REGISTRY_FILTERS, "message_model", "topic", "mine"]


class ProducerGroupFilterSet(RegistryFilterSet):
    topic = IdFilter(label=_("Produces to the topic with this id"), field_name="topics")

    class Meta:
        model = ProducerGroup
        fields = [*REGISTRY_FILTERS, "topic", "mine"]


class ApplicationFilterSet(PortalFilterSet):
    kind = django_filters.ChoiceFilter(label=_("Kind"), choices=ApplicationKind.choices, empty_label=_("All kinds"))
    state = django_filters.ChoiceFilter(label=_("State"), choices=ApplicationState.choices, empty_label=_("Any state"))
    team = by_team()
    cluster = by_cluster()
    applicant = django_filters.CharFilter(
        label=_("Applicant"), field_name="applicant__username", lookup_expr="icontains"
    )
    mine = django_filters.BooleanFilter(
        label=_("Mine only"), method="applied_by_me", widget=forms.CheckboxInput, help_text=_("Submitted by you.")
    )

    class Meta:
        model = Application
        fields = ["kind", "state", "team", "cluster", "applicant", "mine"]

    def applied_by_me(self, queryset, name, value: bool):
        return queryset.filter(applicant=self.request.user) if value else queryset


DATE_INPUT = forms.DateInput(attrs={"type": "date"})


class AuditEntryFilterSet(PortalFilterSet):
    """Dates are whole days in the viewer's time zone (Django converts for ``__date``); the action and object type
    choices are the values recorded so far."""

    q = TextSearch(("object_repr", "note"))
    actor = django_filters.CharFilter(label=_("Actor"), field_name="actor_name", lookup_expr="icontains")
    action = django_filters.AllValuesFilter(label=_("Action"), empty_label=_("All actions"))
    object_type = django_filters.AllValuesFilter(label=_("Object type"), empty_label=_("All types"))
    cluster = by_cluster()
    created_after = django_filters.DateFilter(
        label=_("From"),
        field_name="created_at",
        lookup_expr="date__gte",
        widget=DATE_INPUT,
        help_text=_("Recorded on or after this day (YYYY-MM-DD), in your time zone."),
    )
    created_before = django_filters.DateFilter(
        label=_("To"),
        field_name="created_at",
        lookup_expr="date__lte",
        widget=DATE_INPUT,
        help_text=_("Recorded on or before this day (YYYY-MM-DD), in your time zone."),
    )

    class Meta:
        model = AuditEntry
        fields = ["q", "actor", "action", "object_type", "object_id", "cluster", "created_after", "created_before"]


class ClusterFilterSet(PortalFilterSet):
    q = TextSearch(("name", "description"))

    class Meta:
        model = Cluster
        fields = ["q"]


class BrokerFilterSet(PortalFilterSet):
    q = TextSearch(("broker_name", "address"))

    class Meta:
        model = Broker
        fields = ["q", "cluster", "role", "present", "broker_name"]


class TeamFilterSet(PortalFilterSet):
    q = TextSearch(("name", "description"))

    class Meta:
        model = Team
        fields = ["q"]


class UserFilterSet(PortalFilterSet):
    q = TextSearch(("username", "email", "first_name", "last_name"))
    portal_admin = yes_no(_("Portal admin"), field_name="is_staff")
    active = yes_no(_("Active"), field_name="is_active")

    class Meta:
        model = get_user_model()
        fields = ["q", "portal_admin", "active"]


class NotificationFilterSet(PortalFilterSet):
    unread = yes_no(_("Unread"), field_name="read_at", lookup_expr="isnull")

    class Meta:
        model = Notification
        fields = ["unread"]


class JobRunFilterSet(PortalFilterSet):
    """The Spark job runs (admins' page): which job, how it ended, and when it started (days in the viewer's zone)."""

    job = django_filters.AllValuesFilter(label=_("Job"), empty_label=_("All jobs"))
    state = django_filters.ChoiceFilter(label=_("State"), choices=JobState.choices, empty_label=_("Any state"))
    started_after = django_filters.DateFilter(
        label=_("From"),
        field_name="started_at",
        lookup_expr="date__gte",
        widget=DATE_INPUT,
        help_text=_("Started on or after this day (YYYY-MM-DD), in your time zone."),
    )

    class Meta:
        model = JobRun
        fields = ["job", "state", "started_after"]


def tellable_users(request):
    """Whom ``?notified=`` may name: who was told of a warning is as private as the deliveries themselves
    (``access.can_see_all_deliveries``), so a user may name only themselves, a portal admin anyone."""
    users = get_user_model().objects.all()
    if request is None or not request.user.is_authenticated:
        return users.none()
    return users if access.can_see_all_deliveries(request.user) else users.filter(pk=request.user.pk)


class WarningFilterSet(PortalFilterSet):
    q = TextSearch(("subject_name", "summary"))
    state = django_filters.ChoiceFilter(label=_("State"), choices=WarningState.choices, empty_label=_("Any state"))
    kind = django_filters.ChoiceFilter(label=_("Warning type"), choices=WarningKind.choices, empty_label=_("All types"))
    subject_type = django_filters.ChoiceFilter(
        label=_("Subject type"), choices=SubjectType.choices, empty_label=_("All subjects")
    )
    cluster = by_cluster()
    # The topic and group pages link to their warnings with these.
    topic = IdFilter(label=_("Of the topic with this id"), method="of_entry")
    consumer_group = IdFilter(label=_("Of the consumer group with this id"), method="of_entry")
    producer_group = IdFilter(label=_("Of the producer group with this id"), method="of_entry")
    notified = django_filters.ModelChoiceFilter(
        label=_("Told"),
        queryset=tellable_users,
        to_field_name="username",
        field_name="events__deliveries__user",
        distinct=True,
        widget=forms.TextInput,
        error_messages={"invalid_choice": _("You may look up only the warnings you were told of.")},
        help_text=_(
            "The user name of someone who was sent a notification of it (through any channel): your own, or anyone's"
            " for portal admins (who see everyone's deliveries)."
        ),
    )
    mine = django_filters.BooleanFilter(
        label=_("Mine only"),
        method="addressed_to_me",
        widget=forms.CheckboxInput,
        help_text=_("Of your teams' topics and groups and the topics you are associated with."),
    )

    class Meta:
        model = Warning
        fields = [
            "q",
            "state",
            "kind",
            "subject_type",
            "cluster",
            "topic",
            "consumer_group",
            "producer_group",
            "notified",
            "mine",
        ]

    def of_entry(self, queryset, name, value):
        """A warning of the entry itself (a group's warning may also link the topic it lags on: it is the group's)."""
        return queryset.filter(subject_type=name, **{f"{name}_id": value})

    def addressed_to_me(self, queryset, name, value: bool):
        return access.own_warnings(self.request.user, queryset) if value else queryset

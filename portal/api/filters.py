"""Query-string filters of the API's lists (``?cluster=1&state=active``); free-text search and ordering are DRF's
``?search=`` and ``?ordering=`` on the viewsets."""

import django_filters

from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AuditEntry,
    Broker,
    BrokerRole,
    Cluster,
    ConsumerGroup,
    MessageModel,
    Notification,
    Origin,
    ProducerGroup,
    RegistryState,
    Team,
    Topic,
)

REGISTRY_FIELDS = ["cluster", "team", "unowned", "state", "origin", "mine"]


class RegistryFilterSet(django_filters.FilterSet):
    cluster = django_filters.ModelChoiceFilter(queryset=Cluster.objects.all())
    team = django_filters.ModelChoiceFilter(queryset=Team.objects.all())
    unowned = django_filters.BooleanFilter(field_name="team", lookup_expr="isnull", label="Without an owning team")
    state = django_filters.ChoiceFilter(choices=RegistryState.choices)
    origin = django_filters.ChoiceFilter(choices=Origin.choices)
    mine = django_filters.BooleanFilter(method="filter_mine", label="Owned by the requesting user's teams")

    def filter_mine(self, queryset, name, value):
        return queryset.owned_by(self.request.user) if value else queryset


class TopicFilterSet(RegistryFilterSet):
    class Meta:
        model = Topic
        fields = [*REGISTRY_FIELDS, "ordered", "trace_enabled"]


class ConsumerGroupFilterSet(RegistryFilterSet):
    message_model = django_filters.ChoiceFilter(choices=MessageModel.choices)
    topic = django_filters.NumberFilter(field_name="subscriptions__topic", label="Subscribes to this topic id")

    class Meta:
        model = ConsumerGroup
        fields = [*REGISTRY_FIELDS, "message_model", "topic"]


class ProducerGroupFilterSet(RegistryFilterSet):
    topic = django_filters.NumberFilter(field_name="topics", label="Produces to this topic id")

    class Meta:
        model = ProducerGroup
        fields = [*REGISTRY_FIELDS, "topic"]


class BrokerFilterSet(django_filters.FilterSet):
    role = django_filters.ChoiceFilter(choices=BrokerRole.choices)

    class Meta:
        model = Broker
        fields = ["cluster", "role", "present", "broker_name"]


class ApplicationFilterSet(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(choices=ApplicationKind.choices)
    state = django_filters.ChoiceFilter(choices=ApplicationState.choices)
    applicant = django_filters.CharFilter(field_name="applicant__username", label="Applicant's username")

    class Meta:
        model = Application
        fields = ["kind", "state", "team", "cluster", "applicant"]


class AuditEntryFilterSet(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_name", label="Actor's username")
    created = django_filters.DateFromToRangeFilter(
        field_name="created_at", label="Date range, ?created_after=YYYY-MM-DD&created_before=YYYY-MM-DD (inclusive)"
    )

    class Meta:
        model = AuditEntry
        fields = ["actor", "action", "object_type", "object_id", "cluster", "created"]


class NotificationFilterSet(django_filters.FilterSet):
    unread = django_filters.BooleanFilter(field_name="read_at", lookup_expr="isnull", label="Only unread (true)")

    class Meta:
        model = Notification
        fields = ["unread"]

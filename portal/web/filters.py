"""Search and filters of the list pages (query-string forms): topics, consumer groups and applications."""

import django_filters
from django import forms
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    Cluster,
    ConsumerGroup,
    RegistryState,
    Team,
    Topic,
)


class RegistryFilterSet(django_filters.FilterSet):
    """Search in name and description; filter by cluster, owning team, state, and "owned by my teams"."""

    q = django_filters.CharFilter(label=_("Search"), method="search")
    cluster = django_filters.ModelChoiceFilter(
        label=_("Cluster"), queryset=Cluster.objects.all(), empty_label=_("All clusters")
    )
    team = django_filters.ModelChoiceFilter(label=_("Team"), queryset=Team.objects.all(), empty_label=_("All teams"))
    state = django_filters.ChoiceFilter(label=_("State"), choices=RegistryState.choices, empty_label=_("Any state"))
    mine = django_filters.BooleanFilter(label=_("My teams' only"), method="only_mine", widget=forms.CheckboxInput)

    def search(self, queryset, name, value):
        value = value.strip()
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value)) if value else queryset

    def only_mine(self, queryset, name, value):
        return queryset.owned_by(self.request.user) if value else queryset


class TopicFilterSet(RegistryFilterSet):
    class Meta:
        model = Topic
        fields = ["q", "cluster", "team", "state", "mine"]


class ConsumerGroupFilterSet(RegistryFilterSet):
    class Meta:
        model = ConsumerGroup
        fields = ["q", "cluster", "team", "state", "mine"]


class ApplicationFilterSet(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(label=_("State"), choices=ApplicationState.choices, empty_label=_("Any state"))
    kind = django_filters.ChoiceFilter(label=_("Kind"), choices=ApplicationKind.choices, empty_label=_("All kinds"))
    mine = django_filters.BooleanFilter(label=_("Mine only"), method="only_mine", widget=forms.CheckboxInput)

    class Meta:
        model = Application
        fields = ["state", "kind", "mine"]

    def only_mine(self, queryset, name, value):
        return queryset.filter(applicant=self.request.user) if value else queryset

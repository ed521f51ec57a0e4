"""The fuzz suite finds its targets itself: every URL pattern with the methods it serves and its path parameters,
every filter parameter, and the forms' and serializers' field names - so what is added later is fuzzed too."""

from django.urls import URLPattern, URLResolver, get_resolver

from portal.filters import ApplicationFilterSet, AuditEntryFilterSet, WarningFilterSet
from tests.fuzz.targets import PathParam, body_fields, endpoints, filter_parameters, query_parameters


def _pattern_count(resolver) -> int:
    return sum(
        _pattern_count(p) if isinstance(p, URLResolver) else isinstance(p, URLPattern) for p in resolver.url_patterns
    )


def test_every_url_pattern_is_a_target():
    assert len(endpoints()) == _pattern_count(get_resolver())
    assert len({endpoint.name for endpoint in endpoints()}) == len(endpoints())


def test_viewset_routes_carry_their_methods_and_path_parameters():
    by_name = {endpoint.name: endpoint for endpoint in endpoints()}
    member = by_name["api:team-member"]
    assert member.methods == ("DELETE", "OPTIONS")
    assert member.params == (PathParam("pk", "text"), PathParam("username", "text"))
    assert by_name["api:warning-channel-detail"].methods == ("GET", "PATCH", "DELETE", "OPTIONS")
    assert by_name["entry-adopt"].params == (PathParam("kind", "text"), PathParam("pk", "int"))
    assert by_name["entry-adopt"].methods == ("GET", "POST")


def test_query_parameters_include_every_filter_and_what_views_read_by_name():
    for filterset in (ApplicationFilterSet, AuditEntryFilterSet, WarningFilterSet):
        assert set(filterset.base_filters) <= set(filter_parameters())
    assert {"page", "ordering", "range", "window", "next"} <= set(query_parameters())


def test_body_fields_include_form_and_serializer_fields():
    assert {"namesrv_addrs", "payload", "queue_nums", "password_again", "tag_expression", "reports"} <= set(
        body_fields()
    )

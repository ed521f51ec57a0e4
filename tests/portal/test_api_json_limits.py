"""Every JSON body the API reads is bounded before it is parsed (portal/api/parsers.py, portal.inputs.loads_json):
nesting deeper than 32 levels, NaN, a lone surrogate or malformed JSON is a 400, a body over the view's limit
(``DATA_UPLOAD_MAX_MEMORY_SIZE`` by default) a 413 -- anonymous or signed in, never a 500."""

import json

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from portal.inputs import MAX_JSON_DEPTH, json_depth, loads_json
from portal.models import Application, ApplicationKind, Cluster, Team


def nested(depth: int) -> str:
    return '{"name": ' + "[" * depth + "]" * depth + "}"


@pytest.fixture
def admin_api(portal_admin):
    client = APIClient()
    client.force_authenticate(portal_admin)
    return client


def post(client, url_name: str, body: str):
    return client.post(reverse(url_name), body, content_type="application/json")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000])
def test_deeply_nested_json_is_a_400_for_anonymous_clients(db, depth):
    response = post(APIClient(), "api:token", nested(depth))

    assert response.status_code == 400
    assert response.json() == {"detail": "JSON parse error - the JSON nests deeper than 32 levels"}


def test_deeply_nested_json_is_a_400_for_signed_in_users_and_nothing_is_created(admin_api):
    response = post(admin_api, "api:team-list", nested(100_000))

    assert response.status_code == 400
    assert not Team.objects.exists()


def test_json_nested_as_deep_as_allowed_reaches_the_serializer(admin_api):
    response = post(admin_api, "api:team-list", nested(MAX_JSON_DEPTH - 1))

    assert response.status_code == 400 and list(response.json()) == ["name"]  # a field error, not a parse error


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"name": NaN}', "NaN is not a JSON number"),
        ('{"name": "payments\\ud800"}', "lone surrogate"),
        ('{"\\udc00": "payments"}', "lone surrogate"),
        ('{"name": "payments"', "Expecting"),
        ('{"name": "\xff"}'.encode("latin-1"), "utf-8"),
    ],
    ids=["nan", "lone surrogate", "lone surrogate key", "truncated", "not utf-8"],
)
def test_a_body_that_is_not_json_text_is_a_400_with_the_reason(admin_api, body, reason):
    response = admin_api.post(reverse("api:team-list"), body, content_type="application/json")

    assert response.status_code == 400
    assert reason in response.json()["detail"]
    assert not Team.objects.exists()


def test_a_surrogate_pair_is_one_character_and_accepted(admin_api):
    response = post(admin_api, "api:team-list", '{"name": "payments \\ud83d\\udcb3"}')

    assert response.status_code == 201 and Team.objects.get().name == "payments 💳"


def test_a_body_over_the_upload_limit_is_a_413(admin_api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = post(admin_api, "api:team-list", json.dumps({"name": "payments", "description": "x" * 1000}))

    assert response.status_code == 413
    assert response.json() == {"detail": "The request body is larger than 1000 bytes."}
    assert post(admin_api, "api:team-list", json.dumps({"name": "payments"})).status_code == 201


# --- the depth scan -------------------------------------------------------------------------------------------


def depth_of(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(json_values)
def test_the_depth_scan_agrees_with_the_parsed_value_whatever_the_strings_hold(value):
    text = json.dumps(value, ensure_ascii=False)

    assert json_depth(text) == depth_of(value)
    assert loads_json(text) == value


@pytest.mark.parametrize("text", ['"' + '\\"' * 100_000, '["' + "[" * 100_000, "[" * 1_000_000])
def test_unterminated_strings_and_brackets_never_reach_the_parser_deeply(text):
    with pytest.raises(ValueError):
        loads_json(text)


# --- JSON stored as it is --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [{"name": "ORDERS", "description": "a\x00b"}, {"name": "ORDERS", "consumer_groups": [{"name": "GID_\x00"}]}],
    ids=["value", "nested value"],
)
def test_a_nul_in_an_application_payload_is_a_field_error_not_a_database_error(member, team, payload):
    cluster = Cluster.objects.create(name="prod")
    client = APIClient()
    client.force_authenticate(member)

    response = client.post(
        reverse("api:application-list"),
        {"kind": ApplicationKind.TOPIC_CREATE, "team": team.pk, "cluster": cluster.pk, "payload": payload},
        format="json",
    )

    assert response.status_code == 400
    assert response.json() == {"payload": ["Null characters are not allowed."]}
    assert not Application.objects.exists()

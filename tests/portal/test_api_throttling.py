"""The API's request rates: a signed-in user (API_THROTTLE_USER_RATE) and an anonymous address
(API_THROTTLE_ANON_RATE) over their rate get 429 with Retry-After. Producers reporting with their group's token (a
machine credential) are never held back by these rates: the benchmarks send thousands of reports a second."""

import pytest
from django.conf import settings
from django.urls import reverse
from rest_framework.test import APIClient

from portal.api.throttling import AnonRateThrottle, UserRateThrottle
from portal.models import Cluster, ProducerGroup
from portal.services import producer_tokens

RATES = {"user": "3/minute", "anon": "2/minute"}


@pytest.fixture
def low_rates(monkeypatch):
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", RATES)
    monkeypatch.setattr(AnonRateThrottle, "THROTTLE_RATES", RATES)


def test_the_rates_are_named_settings_with_defaults():
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] == {"user": "600/minute", "anon": "120/minute"}


def test_a_user_over_the_rate_gets_429_with_retry_after(low_rates, member):
    client = APIClient()
    client.force_authenticate(member)
    statuses = [client.get(reverse("api:team-list")).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    refused = client.get(reverse("api:team-list"))
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
    assert "throttled" in refused.json()["detail"].lower()


def test_each_user_has_a_rate_of_their_own(low_rates, member, outsider):
    first, second = APIClient(), APIClient()
    first.force_authenticate(member)
    second.force_authenticate(outsider)
    for _ in range(3):
        first.get(reverse("api:team-list"))
    assert first.get(reverse("api:team-list")).status_code == 429
    assert second.get(reverse("api:team-list")).status_code == 200


def test_anonymous_callers_are_limited_per_address(low_rates, db):
    client = APIClient()
    statuses = [client.get(reverse("api:topic-list")).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert int(client.get(reverse("api:topic-list"))["Retry-After"]) > 0


def test_the_token_endpoint_is_limited_too(low_rates, member):
    client = APIClient()
    statuses = [client.post(reverse("api:token"), {}, format="json").status_code for _ in range(3)]
    assert statuses == [400, 400, 429]


def test_producer_reports_are_not_held_back_by_the_api_rates(low_rates, team, member):
    group = ProducerGroup.objects.create(cluster=Cluster.objects.create(name="prod"), team=team, name="PID_ORDERS")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Producer {producer_tokens.issue(group, by=member).secret}")
    url = reverse("api:producer-registration") + "?topic=ORDERS"
    statuses = {client.get(url).status_code for _ in range(20)}
    assert statuses == {200}, statuses

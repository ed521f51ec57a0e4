"""How API clients authenticate: a token from POST /api/v1/auth/token/ (``Authorization: Token <key>``), or the
portal's login session (with Django's CSRF check on writes). Without credentials the API answers 401 with a
``WWW-Authenticate: Token`` challenge; a wrong token is a 401 too, never silently anonymous."""

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from portal.services import api_tokens
from tests.support.factories import PASSWORD


def token_for(username: str, password: str = PASSWORD):
    return APIClient().post(reverse("api:token"), {"username": username, "password": password}, format="json")


def test_a_user_exchanges_username_and_password_for_a_token(member):
    response = token_for("mia")
    assert response.status_code == 200, response.data
    token = Token.objects.get(user=member)
    expires_at = api_tokens.expires_at(token).isoformat().replace("+00:00", "Z")
    assert response.json() == {"token": token.key, "expires_at": expires_at}
    assert token_for("mia").data == response.data, "the same token again, not a new one per login"


@pytest.mark.parametrize(
    "body",
    [{"username": "mia", "password": "wrong"}, {"username": "nobody", "password": PASSWORD}, {"username": "mia"}, {}],
)
def test_bad_credentials_get_no_token(member, body):
    response = APIClient().post(reverse("api:token"), body, format="json")
    assert response.status_code == 400
    assert not Token.objects.exists()


def test_an_inactive_user_gets_no_token(member):
    member.is_active = False
    member.save()
    assert token_for("mia").status_code == 400


def test_the_token_authenticates_requests(member, team, cluster):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_for('mia').data['token']}")
    assert client.get(reverse("api:consumer-group-list")).status_code == 200
    body = {"kind": "topic_create", "team": team.pk, "cluster": cluster.pk, "payload": {"name": "TOKEN_TOPIC"}}
    response = client.post(reverse("api:application-list"), body, format="json")
    assert response.status_code == 201, response.data
    assert response.data["applicant"] == "mia"


def test_requests_without_credentials_are_challenged(db):
    response = APIClient().get(reverse("api:consumer-group-list"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("header", ["Token not-a-real-key", "Token", "Token a b", "Bearer abc"])
def test_a_wrong_token_is_refused_even_on_public_endpoints(db, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(reverse("api:topic-list"))
    if header.startswith("Bearer"):
        assert response.status_code == 200, "another scheme is not ours to judge: the request is anonymous"
    else:
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Token"


def test_the_token_of_a_deactivated_user_stops_working(member):
    key = token_for("mia").data["token"]
    member.is_active = False
    member.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get(reverse("api:team-list")).status_code == 401


def test_the_login_session_authenticates_reads_and_csrf_protected_writes(member, topic):
    browser = Client(enforce_csrf_checks=True)
    browser.get(reverse("login"))
    csrf = browser.cookies["csrftoken"].value
    login = browser.post(reverse("login"), {"username": "mia", "password": PASSWORD, "csrfmiddlewaretoken": csrf})
    assert login.status_code == 302
    assert browser.get(reverse("api:team-list")).status_code == 200
    url = reverse("api:topic-detail", args=[topic.pk])
    without_csrf = browser.patch(url, '{"description": "x"}', content_type="application/json")
    assert without_csrf.status_code == 403
    assert "CSRF" in without_csrf.json()["detail"]
    csrf = browser.cookies["csrftoken"].value
    with_csrf = browser.patch(url, '{"description": "x"}', content_type="application/json", HTTP_X_CSRFTOKEN=csrf)
    assert with_csrf.status_code == 200, with_csrf.content

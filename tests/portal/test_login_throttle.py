"""Login throttling (django-axes): after LOGIN_FAILURE_LIMIT failed logins for one user name from one address, that
pair is locked out for LOGIN_LOCKOUT_MINUTES, on the login page and on the API's token endpoint alike; the locked-out
caller gets 429 with Retry-After and a message saying why, even with the right password. A successful login clears
the count, and other users and addresses are not affected."""

import datetime as dt

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from tests.support.factories import PASSWORD

LIMIT = settings.AXES_FAILURE_LIMIT


def web_login(username, password, address="10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(reverse("login"), {"username": username, "password": password})


def api_login(username, password, address="10.0.0.1"):
    client = APIClient(REMOTE_ADDR=address)
    return client.post(reverse("api:token"), {"username": username, "password": password}, format="json")


def test_the_limits_are_named_settings_with_defaults():
    assert settings.AXES_FAILURE_LIMIT == 5
    assert dt.timedelta(minutes=15) == settings.AXES_COOLOFF_TIME


def test_failed_logins_up_to_the_limit_show_the_form_again(member):
    for _ in range(LIMIT - 1):
        assert web_login("mia", "wrong").status_code == 200
    assert web_login("mia", PASSWORD).status_code == 302, "a success before the limit logs in"


def test_a_locked_out_login_page_says_why_and_when_to_try_again(member):
    for _ in range(LIMIT):
        web_login("mia", "wrong")
    response = web_login("mia", PASSWORD)
    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    page = response.content.decode()
    assert "Too many failed logins" in page and "15 minutes" in page
    assert 'name="username"' in page, "the login form is shown again"
    assert "_auth_user_id" not in response.wsgi_request.session, "the right password does not log in meanwhile"


def test_the_token_endpoint_is_locked_out_with_429_and_retry_after(member):
    for _ in range(LIMIT - 1):
        assert api_login("mia", "wrong").status_code == 400
    assert api_login("mia", "wrong").status_code == 429, "the failure that reaches the limit locks out at once"
    response = api_login("mia", PASSWORD)
    assert response.status_code == 429
    assert response["Retry-After"] == str(15 * 60)
    assert "Too many failed logins" in response.json()["detail"]


def test_failures_on_the_page_and_the_api_count_together(member):
    for _ in range(LIMIT - 1):
        web_login("mia", "wrong")
    api_login("mia", "wrong")
    assert web_login("mia", PASSWORD).status_code == 429


def test_a_lockout_holds_back_only_that_user_from_that_address(member, outsider):
    for _ in range(LIMIT):
        web_login("mia", "wrong")
    assert web_login("mia", PASSWORD, address="10.0.0.2").status_code == 302
    assert web_login(outsider.username, PASSWORD).status_code == 302


def test_a_success_clears_the_count(member):
    for _ in range(LIMIT - 1):
        web_login("mia", "wrong")
    assert web_login("mia", PASSWORD).status_code == 302
    for _ in range(LIMIT - 1):
        web_login("mia", "wrong")
    assert web_login("mia", PASSWORD).status_code == 302


@pytest.mark.parametrize("login", [web_login, api_login])
def test_the_lockout_ends_after_the_cool_off(member, login, settings):
    settings.AXES_COOLOFF_TIME = dt.timedelta(seconds=0)
    for _ in range(LIMIT):
        login("mia", "wrong")
    assert login("mia", PASSWORD).status_code in (200, 302)

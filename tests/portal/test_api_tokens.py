"""Personal API tokens (``Authorization: Token <key>``): a token lives API_TOKEN_TTL_DAYS and then is refused with a
message saying it expired; its owner rotates it (new key, old one dead at once) or revokes it on the settings page
or through the API; a password change or a deactivation revokes it. Producer tokens (machine credentials) are
another thing: none of this touches them."""

import datetime as dt

from django.conf import settings
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from portal.models import Cluster, ProducerGroup, ProducerToken
from portal.services import api_tokens, producer_tokens, registry
from tests.support.factories import PASSWORD


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def obtain(username="mia", password=PASSWORD):
    return APIClient().post(reverse("api:token"), {"username": username, "password": password}, format="json")


def age(token: Token, days: float) -> None:
    Token.objects.filter(pk=token.pk).update(created=timezone.now() - dt.timedelta(days=days))


def test_the_lifetime_is_a_named_setting_of_90_days_by_default():
    assert settings.API_TOKEN_TTL_DAYS == 90


def test_a_token_expires_after_its_lifetime_with_a_message_saying_so(member):
    key = obtain().json()["token"]
    token = Token.objects.get(key=key)
    age(token, settings.API_TOKEN_TTL_DAYS - 1)
    assert token_client(key).get(reverse("api:team-list")).status_code == 200
    age(token, settings.API_TOKEN_TTL_DAYS)
    response = token_client(key).get(reverse("api:team-list"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert "expired" in response.json()["detail"]


def test_logging_in_again_after_expiry_gives_a_new_token(member):
    old = obtain().json()["token"]
    age(Token.objects.get(key=old), settings.API_TOKEN_TTL_DAYS + 1)
    new = obtain().json()
    assert new["token"] != old
    assert token_client(new["token"]).get(reverse("api:team-list")).status_code == 200
    expires = dt.datetime.fromisoformat(new["expires_at"])
    assert expires - timezone.now() > dt.timedelta(days=settings.API_TOKEN_TTL_DAYS - 1)


def test_rotating_through_the_api_gives_a_new_key_and_kills_the_old_one(member):
    old = obtain().json()["token"]
    response = token_client(old).post(reverse("api:token-rotate"))
    assert response.status_code == 201
    new = response.json()["token"]
    assert new != old
    assert token_client(old).get(reverse("api:team-list")).status_code == 401
    assert token_client(new).get(reverse("api:team-list")).status_code == 200


def test_revoking_through_the_api_ends_the_token(member):
    key = obtain().json()["token"]
    assert token_client(key).delete(reverse("api:token")).status_code == 204
    assert token_client(key).get(reverse("api:team-list")).status_code == 401


def test_the_settings_page_creates_shows_once_rotates_and_revokes_the_token(client, member):
    client.force_login(member)
    assert "Create a token" in client.get(reverse("profile")).content.decode()
    created = client.post(reverse("profile-api-token"), {"action": "rotate"})
    first = Token.objects.get(user=member).key
    assert first in created.content.decode(), "the new key is shown on the answer to the POST"
    assert first not in client.get(reverse("profile")).content.decode(), "and never again"
    client.post(reverse("profile-api-token"), {"action": "rotate"})
    second = Token.objects.get(user=member).key
    assert second != first
    assert token_client(first).get(reverse("api:team-list")).status_code == 401
    assert client.post(reverse("profile-api-token"), {"action": "revoke"}).status_code == 302
    assert not Token.objects.filter(user=member).exists()


def test_the_settings_page_says_when_the_token_expires(client, member):
    client.force_login(member)
    token = api_tokens.rotate(member)
    page = client.get(reverse("profile")).content.decode()
    assert api_tokens.expires_at(token).strftime("%Y-%m-%d") in page
    assert token.key not in page


def test_a_password_changed_by_an_admin_revokes_the_token(member, portal_admin):
    key = obtain().json()["token"]
    registry.set_password(member, "another-long-passphrase", by=portal_admin)
    assert token_client(key).get(reverse("api:team-list")).status_code == 401


def test_a_password_set_anywhere_else_revokes_the_token(member):
    """``manage.py changepassword`` and Django's password views save the user after ``set_password`` too."""
    key = obtain().json()["token"]
    member.set_password("another-long-passphrase")
    member.save()
    assert not Token.objects.filter(key=key).exists()


def test_a_deactivated_user_loses_the_token(member, portal_admin):
    obtain()
    registry.update_user(member, by=portal_admin, is_active=False)
    assert not Token.objects.filter(user=member).exists()


def test_logging_in_keeps_the_token(member):
    """Django saves the user on every login (last_login), and may rehash the password: neither is a change."""
    key = obtain().json()["token"]
    assert obtain().json()["token"] == key
    member.refresh_from_db()
    member.last_login = timezone.now()
    member.save(update_fields=["last_login"])
    assert Token.objects.filter(key=key).exists()


def test_producer_tokens_are_untouched_by_a_password_change(member, team, portal_admin):
    group = ProducerGroup.objects.create(cluster=Cluster.objects.create(name="prod"), team=team, name="PID_ORDERS")
    producer_tokens.issue(group, by=member)
    registry.set_password(member, "another-long-passphrase", by=portal_admin)
    registry.update_user(member, by=portal_admin, is_active=False)
    assert ProducerToken.objects.active().count() == 1


def test_a_key_no_token_could_have_is_refused_before_the_database_is_asked(db, django_assert_num_queries):
    """A NUL in a text column is an error on PostgreSQL: such a key is refused as invalid, not looked up."""
    for key in ["\x00", "abc\x00def", "é" * 40, "a" * 65]:
        with django_assert_num_queries(0):
            response = token_client(key).get(reverse("api:team-list"))
        assert response.status_code == 401, key

"""User management by portal admins: creating users (unique names whatever their case, Django's password
validators), their email and flags (a portal admin never demotes or deactivates themselves), new passwords, the
list with its search, and audit entries that never hold a password hash. Who may open the pages is the authorization
matrix's business (test_authz_pages.py)."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from portal.models import AuditEntry
from portal.services import registry
from tests.support.factories import PASSWORD

User = get_user_model()
NEW_PASSWORD = "plum-orbit-lantern-42"


@pytest.fixture
def staff(client, portal_admin):
    client.force_login(portal_admin)
    return client


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def can_log_in(client, username: str, password: str) -> bool:
    """Through the login page, as a person would."""
    client.logout()
    response = client.post(reverse("login"), {"username": username, "password": password})
    return response.status_code == 302


def new_user_form() -> dict:
    return {"username": "nora", "email": "nora@example.com", "password": NEW_PASSWORD, "password_again": NEW_PASSWORD}


# --- creating users ---------------------------------------------------------------------------------------------


def test_a_portal_admin_creates_a_user_who_can_log_in(client, portal_admin):
    user = registry.create_user(username=" nora ", email="Nora@Example.COM", password=NEW_PASSWORD, by=portal_admin)
    assert (user.username, user.email, user.is_staff, user.is_active) == ("nora", "Nora@example.com", False, True)
    assert can_log_in(client, "nora", NEW_PASSWORD)


def test_the_new_user_page_creates_the_user_and_shows_them(staff):
    response = staff.post(reverse("user-create"), {**new_user_form(), "is_portal_admin": "on"}, follow=True)
    nora = User.objects.get(username="nora")
    assert response.redirect_chain == [(reverse("user-detail", args=[nora.pk]), 302)]
    assert messages_of(response) == ["User nora created."]
    assert nora.is_staff and nora.email == "nora@example.com"


def test_a_taken_username_is_refused_on_its_field_whatever_its_case(staff, member):
    for taken in ("mia", "MIA"):
        response = staff.post(reverse("user-create"), {**new_user_form(), "username": taken})
        assert response.status_code == 200
        assert response.context["form"].errors == {"username": ["A user with that username already exists."]}
    assert User.objects.filter(username__iexact="mia").count() == 1


@pytest.mark.parametrize(
    ("password", "error"),
    [
        ("k3y!", "This password is too short. It must contain at least 8 characters."),
        ("password123", "This password is too common."),
    ],
)
def test_a_weak_password_is_refused_on_the_password_field(staff, password, error):
    response = staff.post(reverse("user-create"), {**new_user_form(), "password": password, "password_again": password})
    assert response.status_code == 200
    assert response.context["form"].errors == {"password": [error]}
    assert not User.objects.filter(username="nora").exists()


def test_the_service_reports_every_bad_field_at_once_and_saves_nothing(portal_admin):
    with pytest.raises(ValidationError) as error:
        registry.create_user(username="no spaces", email="not-an-email", password="short", by=portal_admin)
    assert set(error.value.message_dict) == {"username", "email", "password"}
    assert not User.objects.filter(email="not-an-email").exists()


def test_the_two_passwords_must_be_the_same(staff):
    response = staff.post(reverse("user-create"), {**new_user_form(), "password_again": "plum-orbit-lantern-43"})
    assert response.context["form"].errors == {"password_again": ["The two passwords differ."]}
    assert not User.objects.filter(username="nora").exists()


def test_a_password_is_never_shown_back(staff):
    response = staff.post(reverse("user-create"), {**new_user_form(), "username": ""})
    assert response.status_code == 200
    assert NEW_PASSWORD not in response.content.decode()


def test_only_portal_admins_manage_users(team_admin, member):
    with pytest.raises(PermissionDenied):
        registry.create_user(username="nora", password=NEW_PASSWORD, by=team_admin)
    with pytest.raises(PermissionDenied):
        registry.update_user(member, is_portal_admin=True, by=team_admin)
    with pytest.raises(PermissionDenied):
        registry.set_password(member, NEW_PASSWORD, by=team_admin)
    member.refresh_from_db()
    assert not member.is_staff and member.check_password(PASSWORD)


# --- flags and email --------------------------------------------------------------------------------------------


def test_a_member_made_portal_admin_can_open_the_admin_pages(client, portal_admin, member):
    client.force_login(portal_admin)
    response = client.post(
        reverse("user-detail", args=[member.pk]),
        {"email": "mia@example.com", "is_portal_admin": "on", "is_active": "on"},
    )
    assert response.status_code == 302
    member.refresh_from_db()
    assert member.is_staff and member.email == "mia@example.com"
    client.force_login(member)
    assert client.get(reverse("audit-log")).status_code == 200


def test_a_portal_admin_cannot_remove_their_own_admin_rights(staff, portal_admin):
    response = staff.post(reverse("user-detail", args=[portal_admin.pk]), {"is_active": "on"})
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "is_portal_admin": ["You cannot remove your own portal admin rights; ask another portal admin."]
    }
    portal_admin.refresh_from_db()
    assert portal_admin.is_staff


def test_a_portal_admin_cannot_deactivate_themselves(portal_admin):
    with pytest.raises(ValidationError) as error:
        registry.update_user(portal_admin, is_active=False, by=portal_admin)
    assert error.value.message_dict == {"is_active": ["You cannot deactivate yourself; ask another portal admin."]}
    portal_admin.refresh_from_db()
    assert portal_admin.is_active


def test_another_portal_admin_can_be_demoted(portal_admin):
    colleague = User.objects.create_user("grace", password=PASSWORD, is_staff=True)
    registry.update_user(colleague, is_portal_admin=False, by=portal_admin)
    colleague.refresh_from_db()
    assert not colleague.is_staff


def test_a_deactivated_user_is_logged_out_and_cannot_log_in_again(client, portal_admin, member):
    members_browser = type(client)()
    members_browser.force_login(member)
    assert members_browser.get(reverse("dashboard")).status_code == 200
    client.force_login(portal_admin)
    response = client.post(reverse("user-detail", args=[member.pk]), {"email": ""}, follow=True)
    assert messages_of(response) == ["User mia saved."]
    member.refresh_from_db()
    assert not member.is_active
    assert members_browser.get(reverse("dashboard")).status_code == 302  # to the login page
    assert not can_log_in(client, "mia", PASSWORD)


def test_a_bad_email_is_refused_on_its_field(portal_admin, member):
    with pytest.raises(ValidationError) as error:
        registry.update_user(member, email="mia-at-example", by=portal_admin)
    assert list(error.value.message_dict) == ["email"]


# --- passwords --------------------------------------------------------------------------------------------------


def set_password_form(password: str, again: str | None = None) -> dict:
    return {"form": "password", "password": password, "password_again": again or password}


def test_a_new_password_replaces_the_old_one(client, portal_admin, member):
    client.force_login(portal_admin)
    response = client.post(reverse("user-detail", args=[member.pk]), set_password_form(NEW_PASSWORD), follow=True)
    assert messages_of(response) == ["The password of mia is changed."]
    member.refresh_from_db()
    assert member.is_active and not member.is_staff  # the other form's fields are left alone
    assert can_log_in(client, "mia", NEW_PASSWORD)
    assert not can_log_in(client, "mia", PASSWORD)


def test_a_weak_new_password_is_refused_and_the_old_one_kept(staff, member):
    response = staff.post(reverse("user-detail", args=[member.pk]), set_password_form("mia"))
    assert response.status_code == 200
    assert list(response.context["password_form"].errors) == ["password"]
    assert response.context["form"].errors == {}
    member.refresh_from_db()
    assert member.check_password(PASSWORD)


def test_an_admin_who_changes_their_own_password_stays_logged_in(staff, portal_admin):
    staff.post(reverse("user-detail", args=[portal_admin.pk]), set_password_form(NEW_PASSWORD))
    assert staff.get(reverse("user-list")).status_code == 200


# --- the audit log ----------------------------------------------------------------------------------------------


def test_every_change_is_audited_without_the_password_hash(portal_admin):
    nora = registry.create_user(username="nora", password=PASSWORD, by=portal_admin)
    first_hash = nora.password
    registry.update_user(nora, email="nora@example.com", is_portal_admin=True, by=portal_admin)
    registry.set_password(nora, NEW_PASSWORD, by=portal_admin)
    nora.refresh_from_db()
    entries = list(AuditEntry.objects.filter(object_type="user", object_id=str(nora.pk)).order_by("id"))
    assert [entry.action for entry in entries] == ["user.created", "user.changed", "user.password_changed"]
    assert all(entry.actor == portal_admin for entry in entries)
    assert entries[0].after["password"] == "********"
    assert (entries[1].before["is_staff"], entries[1].after["is_staff"]) == (False, True)
    stored = json.dumps([[entry.before, entry.after, entry.note] for entry in entries])
    digests = [password_hash.rsplit("$", 1)[-1] for password_hash in (first_hash, nora.password)]
    assert "md5$" not in stored and not any(digest in stored for digest in digests)


def test_an_unchanged_user_leaves_no_audit_entry(portal_admin, member):
    registry.update_user(member, email="", is_portal_admin=False, is_active=True, by=portal_admin)
    assert not AuditEntry.objects.filter(object_type="user").exists()


# --- the list ---------------------------------------------------------------------------------------------------


def listed(client, **query) -> list[str]:
    response = client.get(reverse("user-list"), query)
    assert response.status_code == 200
    return [user.username for user in response.context["page"].object_list]


def test_the_list_shows_every_user_with_flags_and_teams(staff, member, team_admin, outsider):
    assert listed(staff) == ["ada", "mia", "olga", "tom"]
    page = staff.get(reverse("user-list")).content.decode()
    for user in (member, outsider):
        team = user.memberships.get().team
        assert f'<a href="{reverse("team-detail", args=[team.pk])}">{team.name}</a>' in page


def test_the_list_searches_and_filters_by_flag(staff, member, team_admin, outsider, portal_admin):
    User.objects.filter(pk=outsider.pk).update(email="olga@logistics.example", is_active=False)
    assert listed(staff, q="logistics") == ["olga"]
    assert listed(staff, q="MI") == ["mia"]
    assert listed(staff, q="olga example") == ["olga"]
    assert listed(staff, portal_admin="true") == ["ada"]
    assert listed(staff, active="false") == ["olga"]


def test_the_users_link_is_in_the_header_of_portal_admins_only(client, portal_admin, member):
    users_link = f'href="{reverse("user-list")}"'
    client.force_login(portal_admin)
    assert users_link in client.get(reverse("dashboard")).content.decode()
    client.force_login(member)
    assert users_link not in client.get(reverse("dashboard")).content.decode()

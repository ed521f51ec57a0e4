"""Teams through the API: every logged-in user reads teams and their members; team admins manage their team's
members and portal admins create teams."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from portal.models import AuditEntry, Membership, Team, TeamRole
from tests.support.factories import make_user


def logged_in(user) -> APIClient:
    client = APIClient()
    client.force_login(user)
    return client


def members_of(client, team) -> list[tuple[str, str]]:
    response = client.get(reverse("api:team-members", args=[team.pk]))
    assert response.status_code == 200, response.data
    return [(m["username"], m["role"]) for m in response.data]


def test_teams_and_their_members_are_listed(team, other_team, member, team_admin, outsider):
    client = logged_in(outsider)
    assert [t["name"] for t in client.get(reverse("api:team-list")).data["results"]] == ["logistics", "payments"]
    assert members_of(client, team) == [("mia", "member"), ("tom", "admin")]


def test_a_team_admin_adds_a_member_and_changes_a_role(team, team_admin, member):
    client = logged_in(team_admin)
    newcomer = make_user("nina")
    added = client.post(reverse("api:team-members", args=[team.pk]), {"username": "nina"}, "json")
    assert added.status_code == 201, added.data
    assert (added.data["username"], added.data["role"]) == ("nina", "member")
    promoted = client.post(reverse("api:team-members", args=[team.pk]), {"username": "mia", "role": "admin"}, "json")
    assert promoted.status_code == 201, promoted.data
    assert members_of(client, team) == [("mia", "admin"), ("nina", "member"), ("tom", "admin")]
    assert AuditEntry.objects.filter(action="membership.created", actor=team_admin).count() == 1
    assert AuditEntry.objects.filter(action="membership.changed", actor=team_admin).count() == 1
    assert Membership.objects.get(team=team, user=newcomer).role == TeamRole.MEMBER


def test_a_team_admin_removes_a_member(team, team_admin, member):
    response = logged_in(team_admin).delete(reverse("api:team-member", args=[team.pk, "mia"]))
    assert response.status_code == 204
    assert not Membership.objects.filter(team=team, user=member).exists()
    assert AuditEntry.objects.filter(action="membership.deleted").exists()


def test_removing_someone_who_is_not_a_member_is_a_field_error(team, team_admin, outsider):
    response = logged_in(team_admin).delete(reverse("api:team-member", args=[team.pk, outsider.username]))
    assert response.status_code == 400
    assert "user" in response.data


def test_removing_an_unknown_user_is_not_found(team, team_admin):
    assert logged_in(team_admin).delete(reverse("api:team-member", args=[team.pk, "nobody"])).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"username": "nobody"}, "username"),
        ({"username": "mia", "role": "owner"}, "role"),
        ({"role": "member"}, "username"),
        ({"username": ["mia"]}, "username"),
    ],
)
def test_bad_member_additions_get_field_errors(team, team_admin, member, body, field):
    response = logged_in(team_admin).post(reverse("api:team-members", args=[team.pk]), body, "json")
    assert response.status_code == 400
    assert field in response.data


def test_a_team_admin_manages_only_their_own_team(other_team, team_admin, member):
    response = logged_in(team_admin).post(
        reverse("api:team-members", args=[other_team.pk]), {"username": "mia"}, "json"
    )
    assert response.status_code == 403
    assert not Membership.objects.filter(team=other_team, user=member).exists()


def test_a_portal_admin_creates_a_team(portal_admin):
    response = logged_in(portal_admin).post(
        reverse("api:team-list"), {"name": " search ", "description": "finds things"}, "json"
    )
    assert response.status_code == 201, response.data
    assert (response.data["name"], response.data["description"]) == ("search", "finds things")
    assert Team.objects.filter(name="search").exists()


@pytest.mark.parametrize("body", [{"name": "payments"}, {"name": ""}, {"name": "x" * 65}, {}])
def test_bad_team_creations_get_field_errors(team, portal_admin, body):
    response = logged_in(portal_admin).post(reverse("api:team-list"), body, "json")
    assert response.status_code == 400
    assert "name" in response.data
    assert Team.objects.count() == 1

"""The shared layout and the pages about people: the header (navigation, counts), the dashboard, each user's
language and time zone, notifications, and the team pages where team admins manage membership."""

import datetime

import pytest
from django.urls import reverse

from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    ConsumerGroup,
    Membership,
    Notification,
    TeamRole,
    Topic,
    UserProfile,
)
from portal.services.notifications import notify
from portal.services.profiles import update_profile
from tests.support.factories import PASSWORD, make_user

NOON_UTC = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)


def test_anonymous_visitors_are_sent_to_the_login_page_and_come_back_after_logging_in(client, member):
    response = client.get(reverse("dashboard"))
    assert response.status_code == 302 and response.url == f"{reverse('login')}?next=/"
    page = client.get(response.url)
    assert page.status_code == 200 and 'name="password"' in page.text
    logged_in = client.post(reverse("login"), {"username": "mia", "password": PASSWORD, "next": "/"})
    assert logged_in.status_code == 302 and logged_in.url == "/"
    assert client.get("/").status_code == 200


def test_a_wrong_password_is_an_error_on_the_login_page(client, member):
    response = client.post(reverse("login"), {"username": "mia", "password": "wrong"})
    assert response.status_code == 200 and response.context["form"].errors


def test_logging_out_is_a_post_and_ends_the_session(client, member):
    client.force_login(member)
    assert client.get(reverse("logout")).status_code == 405
    assert client.post(reverse("logout")).status_code == 302
    assert client.get(reverse("dashboard")).status_code == 302


def test_the_header_shows_the_business_navigation_and_the_unread_count(client, member):
    notify(member, "first")
    notify(member, "second")
    client.force_login(member)
    text = client.get(reverse("topic-list")).text
    for name in ("dashboard", "topic-list", "consumer-group-list", "application-list", "team-list", "profile"):
        assert f'href="{reverse(name)}"' in text
    assert f'href="{reverse("notification-list")}"' in text
    assert '<span class="count hot">2</span>' in text
    assert reverse("audit-log") not in text and reverse("unowned-list") not in text
    assert reverse("approval-queue") not in text


def test_team_admins_see_the_approvals_link_even_with_nothing_to_decide(client, team_admin):
    """They decide associations with their team's topics, so the queue is theirs (the same gate as the page's)."""
    client.force_login(team_admin)
    text = client.get(reverse("topic-list")).text
    assert f'href="{reverse("approval-queue")}">Approvals <span class="count">0</span>' in text
    assert reverse("audit-log") not in text and reverse("unowned-list") not in text


def test_portal_admins_also_see_the_admin_navigation_with_the_pending_count(
    client, portal_admin, member, team, cluster
):
    Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE, applicant=member, team=team, cluster=cluster, payload={"name": "X"}
    )
    client.force_login(portal_admin)
    text = client.get(reverse("topic-list")).text
    for name in ("approval-queue", "cluster-list", "unowned-list", "audit-log"):
        assert f'href="{reverse(name)}"' in text
    assert f'href="{reverse("approval-queue")}">Approvals <span class="count hot">1</span>' in text


def test_the_dashboard_shows_my_teams_entries_my_applications_and_notifications(
    client, member, team, other_team, topic
):
    ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_MINE")
    Topic.objects.create(cluster=topic.cluster, team=other_team, name="NOT_MINE")
    Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE,
        applicant=member,
        team=team,
        cluster=topic.cluster,
        payload={"name": "PAY_REFUNDED"},
        state=ApplicationState.REJECTED,
    )
    notify(member, "Application #1 was rejected")
    client.force_login(member)
    text = client.get(reverse("dashboard")).text
    assert "PAY_ORDER_CREATED" in text and "GID_MINE" in text and "NOT_MINE" not in text
    assert "PAY_REFUNDED" in text and "rejected" in text
    assert "Application #1 was rejected" in text


def test_a_profile_is_created_on_first_visit_and_saves_language_and_time_zone(client, member):
    client.force_login(member)
    assert client.get(reverse("profile")).status_code == 200
    assert UserProfile.objects.get(user=member).time_zone == "UTC"
    response = client.post(reverse("profile"), {"language": "zh-hans", "time_zone": "Asia/Shanghai"})
    assert response.status_code == 302
    profile = UserProfile.objects.get(user=member)
    assert (profile.language, profile.time_zone) == ("zh-hans", "Asia/Shanghai")


def test_an_unknown_time_zone_is_a_field_error(client, member):
    client.force_login(member)
    response = client.post(reverse("profile"), {"language": "en", "time_zone": "Mars/Olympus_Mons"})
    assert response.status_code == 200 and "time_zone" in response.context["form"].errors


def test_anonymous_visitors_switch_the_language_with_the_switcher(client, topic):
    assert '<html lang="en">' in client.get(reverse("topic-list")).text
    response = client.post(reverse("set_language"), {"language": "zh-hans", "next": reverse("topic-list")})
    assert response.status_code == 302
    assert '<html lang="zh-hans">' in client.get(reverse("topic-list")).text


def test_a_signed_in_users_language_comes_from_the_profile_and_the_switcher_changes_it(client, member):
    client.force_login(member)
    assert '<html lang="en">' in client.get(reverse("dashboard")).text
    response = client.post(reverse("profile-language"), {"language": "zh-hans", "next": reverse("team-list")})
    assert response.status_code == 302 and response.url == reverse("team-list")
    assert UserProfile.objects.get(user=member).language == "zh-hans"
    assert '<html lang="zh-hans">' in client.get(reverse("dashboard")).text
    # a language cookie of the browser does not override the profile
    client.cookies["django_language"] = "en"
    assert '<html lang="zh-hans">' in client.get(reverse("dashboard")).text


def test_the_language_switcher_does_not_redirect_off_site(client, member):
    client.force_login(member)
    response = client.post(reverse("profile-language"), {"language": "en", "next": "https://evil.example/"})
    assert response.url == reverse("dashboard")


def test_times_are_shown_in_the_users_time_zone(client, member, team, cluster):
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE, applicant=member, team=team, cluster=cluster, payload={"name": "T"}
    )
    Application.objects.filter(pk=application.pk).update(created_at=NOON_UTC)
    client.force_login(member)
    url = reverse("application-detail", args=[application.pk])
    assert "2024-05-01 12:00" in client.get(url).text
    update_profile(member, time_zone="Asia/Shanghai")
    text = client.get(url).text
    assert "2024-05-01 20:00" in text and "2024-05-01 12:00" not in text
    update_profile(member, time_zone="America/New_York")
    assert "2024-05-01 08:00" in client.get(url).text


def test_notifications_are_listed_newest_first_and_marked_read(client, member, outsider):
    first = notify(member, "first")
    notify(member, "second", link=reverse("topic-list"))
    notify(outsider, "not for mia")
    client.force_login(member)
    response = client.get(reverse("notification-list"))
    assert [n.title for n in response.context["page"].object_list] == ["second", "first"]
    assert client.post(reverse("notification-list"), {"ids": [first.pk]}).status_code == 302
    assert list(Notification.objects.filter(user=member, read_at__isnull=True).values_list("title", flat=True)) == [
        "second"
    ]
    client.post(reverse("notification-list"), {"all": "1"})
    assert not Notification.objects.filter(read_at__isnull=True, user=member).exists()
    assert Notification.objects.get(user=outsider).read_at is None


@pytest.mark.parametrize("bad", ["²", "9223372036854775808", "first"])
def test_marking_something_that_is_no_notification_id_read_marks_nothing_and_says_so(client, member, bad):
    first = notify(member, "first")
    client.force_login(member)

    response = client.post(reverse("notification-list"), {"ids": [first.pk, bad]}, follow=True)

    assert "Nothing was marked read" in response.content.decode()
    first.refresh_from_db()
    assert first.read_at is None


def test_the_team_list_shows_every_team_with_its_member_count(client, member, team_admin, outsider):
    client.force_login(member)
    response = client.get(reverse("team-list"))
    assert {team.name: team.member_count for team in response.context["teams"]} == {"payments": 2, "logistics": 1}


def test_team_admins_add_and_remove_members_on_the_team_page(client, team, team_admin, member):
    newcomer = make_user("nina")
    client.force_login(team_admin)
    page = client.get(reverse("team-detail", args=[team.pk]))
    assert reverse("team-member-add", args=[team.pk]) in page.text
    response = client.post(reverse("team-member-add", args=[team.pk]), {"username": "nina", "role": TeamRole.ADMIN})
    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=newcomer).role == TeamRole.ADMIN
    response = client.post(reverse("team-member-remove", args=[team.pk]), {"user": member.pk})
    assert response.status_code == 302
    assert set(team.members.values_list("username", flat=True)) == {"tom", "nina"}


def test_adding_an_unknown_user_is_a_field_error_on_the_team_page(client, team, team_admin):
    client.force_login(team_admin)
    response = client.post(reverse("team-member-add", args=[team.pk]), {"username": "ghost", "role": "member"})
    assert response.status_code == 200
    assert response.context["add_form"].errors == {"username": ["There is no user named ghost."]}


def test_members_see_the_team_page_without_membership_controls(client, team, member):
    client.force_login(member)
    text = client.get(reverse("team-detail", args=[team.pk])).text
    assert "mia" in text and reverse("team-member-add", args=[team.pk]) not in text


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_business_page_renders_in_each_language(client, member, team, topic, language):
    """A smoke check of the templates in both languages (catalog strings with placeholders must still render)."""
    group = ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_SMOKE")
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CHANGE,
        applicant=member,
        team=team,
        cluster=topic.cluster,
        topic=topic,
        payload={"queue_nums": 16},
    )
    update_profile(member, language=language)
    client.force_login(member)
    urls = [
        reverse(name)
        for name in (
            "dashboard",
            "profile",
            "topic-list",
            "consumer-group-list",
            "apply-topic",
            "apply-consumer-group",
            "apply-producer-group",
            "application-list",
            "notification-list",
            "team-list",
        )
    ] + [
        reverse("topic-detail", args=[topic.pk]),
        reverse("topic-apply-change", args=[topic.pk]),
        reverse("topic-associate", args=[topic.pk]),
        reverse("consumer-group-detail", args=[group.pk]),
        reverse("application-detail", args=[application.pk]),
        reverse("team-detail", args=[team.pk]),
        reverse("entry-description", args=["topic", topic.pk]),
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert f'<html lang="{language}">' in response.text, url

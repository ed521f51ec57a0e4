"""After acting, a page sends the user back to ``next`` when it is a URL of this site, else to its fallback page;
``next`` is taken as a URL only (a value that happens to be a URL name, or no URL at all, is not reversed)."""

import pytest
from django.urls import reverse


@pytest.mark.parametrize("next_value", ["1", "dashboard", "topic-list"])
def test_a_next_that_is_no_path_is_answered_with_a_redirect_not_a_server_error(client, member, next_value):
    client.force_login(member)
    response = client.post(f"{reverse('notification-list')}?next={next_value}", {"all": "1"})
    assert response.status_code == 302
    assert response.url == next_value


def test_a_next_on_this_site_is_followed(client, member):
    client.force_login(member)
    response = client.post(reverse("profile-language"), {"language": "en", "next": "/topics/?q=pay"})
    assert response.status_code == 302
    assert response.url == "/topics/?q=pay"


def test_a_next_on_another_host_falls_back(client, member):
    client.force_login(member)
    response = client.post(reverse("notification-list"), {"all": "1", "next": "https://evil.example/"})
    assert response.url == reverse("notification-list")

"""The admins' scrape-token page (/manage/metrics/tokens/): a portal admin issues a token (shown in full once),
sees every token by its prefix, and revokes one, after which Prometheus is refused at once; the page tells where to
scrape and which networks need no token. Other users are kept out (the full matrix is test_authz_pages.py's)."""

import re

import pytest
from django.urls import reverse

from portal.models import AuditEntry, MetricsScrapeToken
from portal.services.metrics import tokens

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client, portal_admin):
    client.force_login(portal_admin)
    return client


def issue_on_the_page(client, label: str = "prometheus-prod") -> str:
    response = client.post(reverse("metrics-token-issue"), {"label": label})
    assert response.status_code == 200
    return re.search(r'<code id="scrape-token" class="mono">([^<]+)</code>', response.content.decode()).group(1)


def scrape(client, secret: str) -> int:
    return client.get(reverse("metrics"), HTTP_AUTHORIZATION=f"Bearer {secret}").status_code


def test_an_admin_issues_a_token_that_scrapes_and_is_shown_only_once(staff, portal_admin):
    secret = issue_on_the_page(staff)
    assert scrape(staff, secret) == 200
    listing = staff.get(reverse("metrics-token-list")).content.decode()
    token = MetricsScrapeToken.objects.get()
    assert f"{token.prefix}…" in listing
    assert "prometheus-prod" in listing
    assert portal_admin.get_username() in listing
    assert secret not in listing
    assert AuditEntry.objects.filter(action="metricstoken.issued", actor=portal_admin).exists()


def test_a_token_revoked_on_the_page_is_refused_at_the_next_scrape(staff, portal_admin):
    secret = issue_on_the_page(staff)
    token = MetricsScrapeToken.objects.get()
    response = staff.post(reverse("metrics-token-revoke", args=[token.pk]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("metrics-token-list")
    assert "revoked" in response.content.decode()
    assert scrape(staff, secret) == 403
    assert AuditEntry.objects.filter(action="metricstoken.revoked", actor=portal_admin).exists()


def test_revoking_a_revoked_token_says_so(staff):
    issue_on_the_page(staff)
    url = reverse("metrics-token-revoke", args=[MetricsScrapeToken.objects.get().pk])
    staff.post(url)
    response = staff.post(url, follow=True)
    assert "This token is already revoked." in response.content.decode()


def test_a_label_too_long_is_refused_and_no_token_issued(staff):
    response = staff.post(reverse("metrics-token-issue"), {"label": "x" * 101}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("metrics-token-list")
    assert not MetricsScrapeToken.objects.exists()


def test_the_page_shows_the_scrape_url_and_the_networks_allowed_without_a_token(staff, settings):
    page = staff.get(reverse("metrics-token-list")).content.decode()
    assert "http://testserver/metrics" in page
    assert "none: every scrape needs a token" in page
    settings.METRICS_ALLOWED_NETWORKS = ["10.1.0.0/16", "192.168.5.0/24"]
    page = staff.get(reverse("metrics-token-list")).content.decode()
    assert "10.1.0.0/16" in page
    assert "192.168.5.0/24" in page


def test_the_manage_menu_links_the_page_for_admins_only(client, staff, member):
    link = f'href="{reverse("metrics-token-list")}"'
    assert link in staff.get(reverse("dashboard")).content.decode()
    client.force_login(member)
    assert link not in client.get(reverse("dashboard")).content.decode()


def test_a_member_may_neither_open_the_page_nor_issue_nor_revoke(client, member, portal_admin):
    token = tokens.issue(by=portal_admin).token
    client.force_login(member)
    assert client.get(reverse("metrics-token-list")).status_code == 403
    assert client.post(reverse("metrics-token-issue"), {"label": "mine"}).status_code == 403
    assert client.post(reverse("metrics-token-revoke", args=[token.pk])).status_code == 403
    assert MetricsScrapeToken.objects.get().is_active

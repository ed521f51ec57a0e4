"""Who may scrape /metrics: a live scrape token issued by a portal admin, or an address in METRICS_ALLOWED_NETWORKS;
nobody by default, signed-in users included."""

import gzip

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from portal.models import AuditEntry, MetricsScrapeToken
from portal.services.metrics import tokens

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.portal.metrics_fixtures"]


def test_an_anonymous_scrape_is_refused_with_the_scheme_to_use(client):
    response = client.get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_a_signed_in_portal_admin_is_no_scraper(client, portal_admin):
    client.force_login(portal_admin)
    assert client.get("/metrics").status_code == 401


def test_an_unknown_token_is_refused(client, scrape_token):
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer mqm_not-a-token").status_code == 403


def test_a_token_issued_by_a_portal_admin_opens_metrics_and_only_its_digest_is_stored(client, scrape_token):
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {scrape_token}").status_code == 200
    stored = MetricsScrapeToken.objects.get()
    assert stored.secret_hash == tokens.digest(scrape_token)
    assert scrape_token not in str(list(MetricsScrapeToken.objects.values()))
    assert stored.last_used_at is not None
    assert AuditEntry.objects.filter(action="metricstoken.issued").exists()


def test_a_revoked_token_stops_working_at_once(client, scrape_token, portal_admin):
    tokens.revoke(MetricsScrapeToken.objects.get(), by=portal_admin)
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {scrape_token}").status_code == 403
    with pytest.raises(ValidationError):
        tokens.revoke(MetricsScrapeToken.objects.get(), by=portal_admin)


def test_only_portal_admins_issue_or_revoke_tokens(member, scrape_token):
    with pytest.raises(PermissionDenied):
        tokens.issue(by=member)
    with pytest.raises(PermissionDenied):
        tokens.revoke(MetricsScrapeToken.objects.get(), by=member)


def test_an_allowed_network_scrapes_without_a_token(client, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.1.0.0/16"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 401


def test_openmetrics_is_answered_when_the_scraper_asks_for_it(client, scrape_token, prod):
    response = client.get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {scrape_token}",
        HTTP_ACCEPT="application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    )
    assert response["Content-Type"].startswith("application/openmetrics-text")
    body = response.content.decode()
    assert body.endswith("# EOF\n")
    assert "mqcloud_warnings_open" in {family.name for family in openmetrics_families(body)}


def test_the_text_format_is_the_default(client, scrape_token):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {scrape_token}")
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert "Content-Encoding" not in response


def test_the_answer_is_gzipped_when_the_scraper_accepts_it(client, scrape_token, prod):
    plain = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {scrape_token}").content
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {scrape_token}", HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.content) == plain


def test_the_metricstoken_command_issues_lists_and_revokes(portal_admin, capsys):
    call_command("metricstoken", "issue", "--by", portal_admin.username, "--label", "prom-1")
    secret = capsys.readouterr().out.strip()
    assert tokens.check(secret) is not None
    call_command("metricstoken", "list")
    assert "prom-1" in capsys.readouterr().out
    call_command("metricstoken", "revoke", secret[: tokens.PREFIX_LENGTH], "--by", portal_admin.username)
    assert tokens.check(secret) is None

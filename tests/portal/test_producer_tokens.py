"""Producer tokens: the owning team issues and revokes them on the producer group's page; the full token is shown
once and only its digest and a short prefix are stored; issuing and revoking are audited; a revoked token
authenticates nothing. Who may open which page is the authorization matrix's business (test_authz_pages.py)."""

import hashlib

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from portal.models import AuditEntry, Cluster, ProducerGroup, ProducerToken
from portal.services import producer_tokens


@pytest.fixture
def group(db, team):
    return ProducerGroup.objects.create(cluster=Cluster.objects.create(name="prod"), team=team, name="PID_ORDERS")


def test_only_a_digest_and_a_short_prefix_of_an_issued_token_are_stored(group, member):
    issued = producer_tokens.issue(group, by=member, label="  order-service  ")

    stored = ProducerToken.objects.get()
    assert issued.secret.startswith("mqp_") and len(issued.secret) == 47
    assert stored.secret_hash == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert stored.prefix == issued.secret[:12] and stored.label == "order-service"
    assert issued.secret not in {value for value in vars(stored).values() if isinstance(value, str)}
    assert producer_tokens.authenticate(issued.secret) == stored


def test_issuing_and_revoking_are_audited_without_the_secret(group, member, team_admin):
    issued = producer_tokens.issue(group, by=member)
    producer_tokens.revoke(issued.token, by=team_admin)

    entries = AuditEntry.objects.order_by("id")
    assert [(entry.action, entry.actor) for entry in entries] == [
        ("producertoken.issued", member),
        ("producertoken.revoked", team_admin),
    ]
    assert all(entry.cluster_id == group.cluster_id for entry in entries)
    assert entries[1].after["revoked_by_id"] == team_admin.pk and entries[1].before["revoked_at"] is None
    for entry in entries:
        assert issued.secret not in str(entry.before) + str(entry.after)
        assert issued.token.secret_hash not in str(entry.before) + str(entry.after)


def test_a_revoked_token_authenticates_nothing_and_cannot_be_revoked_twice(group, member):
    issued = producer_tokens.issue(group, by=member)
    producer_tokens.revoke(issued.token, by=member)

    assert producer_tokens.authenticate(issued.secret) is None
    with pytest.raises(ValidationError):
        producer_tokens.revoke(issued.token, by=member)


def test_only_the_owning_team_and_portal_admins_issue_and_revoke_tokens(group, member, outsider, portal_admin):
    with pytest.raises(PermissionDenied):
        producer_tokens.issue(group, by=outsider)
    issued = producer_tokens.issue(group, by=portal_admin)
    with pytest.raises(PermissionDenied):
        producer_tokens.revoke(issued.token, by=outsider)
    assert ProducerToken.objects.active().count() == 1


def test_a_token_is_shown_in_full_once_then_only_by_its_prefix(client, group, member):
    client.force_login(member)

    issued_page = client.post(reverse("producer-token-issue", args=[group.pk]), {"label": "checkout"})
    token = ProducerToken.objects.get()

    assert issued_page.status_code == 200
    assert "no-store" in issued_page["Cache-Control"]
    secret = issued_page.context["issued"].secret
    assert secret in issued_page.content.decode()
    group_page = client.get(reverse("producer-group-detail", args=[group.pk])).content.decode()
    assert secret not in group_page
    assert f"{token.prefix}…" in group_page and "checkout" in group_page


def test_the_group_page_revokes_a_token(client, group, member):
    issued = producer_tokens.issue(group, by=member)
    client.force_login(member)

    response = client.post(reverse("producer-token-revoke", args=[group.pk, issued.token.pk]))

    assert response.status_code == 302 and response.url == reverse("producer-group-detail", args=[group.pk])
    assert ProducerToken.objects.active().count() == 0
    page = client.get(response.url).content.decode()
    assert "revoked" in page


def test_a_token_of_another_group_is_not_found_under_this_one(client, group, member, team):
    other = ProducerGroup.objects.create(cluster=group.cluster, team=team, name="PID_OTHER")
    issued = producer_tokens.issue(other, by=member)
    client.force_login(member)

    assert client.post(reverse("producer-token-revoke", args=[group.pk, issued.token.pk])).status_code == 404
    assert ProducerToken.objects.active().count() == 1


def test_an_overlong_label_is_refused_with_a_message_and_no_token(client, group, member):
    client.force_login(member)

    response = client.post(reverse("producer-token-issue", args=[group.pk]), {"label": "x" * 101}, follow=True)

    assert not ProducerToken.objects.exists()
    assert "at most 100 characters" in response.content.decode()


def test_tokens_are_listed_only_for_those_who_manage_them(client, group, member, outsider):
    producer_tokens.issue(group, by=member, label="checkout")

    client.force_login(outsider)
    page = client.get(reverse("producer-group-detail", args=[group.pk])).content.decode()
    assert "producer-tokens" not in page and "checkout" not in page

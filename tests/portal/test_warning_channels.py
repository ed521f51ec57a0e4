"""Channels and delivery: each transport against a real server on 127.0.0.1 (aiosmtpd for e-mail, an http.server for
DingTalk, WeCom, Slack and the generic webhook) with the exact payloads; one Delivery row per attempt and never a
second send; failing channels keep their error and are disabled (at once when permanent) with their owner told."""

import base64
import datetime as dt
import hashlib
import hmac
import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection

from portal.models import Cluster, ConsumerGroup, Notification
from portal.models.warnings import Channel, ChannelKind, Delivery, SubjectType, WarningKind
from portal.services.warnings import subscriptions
from portal.services.warnings.channels import (
    create_channel,
    default_channels,
    delete_channel,
    describe,
    set_enabled,
    update_channel,
)
from portal.services.warnings.delivery import deliver, send_test
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules.conditions import Condition, Evaluation
from tests.portal.warning_servers import LOCAL_RECEIVERS, SmtpServer, WebhookServer

T0 = dt.datetime(2026, 11, 22, 7, 0, tzinfo=dt.UTC)
LAG = WarningKind.CONSUMER_LAG
SUMMARY = "order-consumer is 52,000 messages (14 min) behind on orders; 3 of 8 queues stalled"


@pytest.fixture
def smtp(settings):
    with SmtpServer() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        settings.DEFAULT_FROM_EMAIL = "MQCloud <warnings@mqcloud.test>"
        yield server


@pytest.fixture
def hooks(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    with WebhookServer() as server:
        yield server


@pytest.fixture(autouse=True)
def base_url(settings):
    settings.PORTAL_BASE_URL = "https://mqcloud.test"


@pytest.fixture
def own_cluster(db):
    return Cluster.objects.create(name="prod")


@pytest.fixture
def group(own_cluster, team):
    return ConsumerGroup.objects.create(cluster=own_cluster, team=team, name="order-consumer")


@pytest.fixture
def fired(own_cluster, group):
    """A fired consumer-lag event of the member's team's group."""
    evaluation = Evaluation()
    condition = Condition(
        kind=LAG,
        subject_type=SubjectType.CONSUMER_GROUP,
        subject_name="order-consumer",
        summary=SUMMARY,
        details={"topic": "orders", "behind": 52_000},
    )
    evaluation.add(LAG, [condition])
    return reconcile(own_cluster, evaluation, T0).fired[0]


def only_through(user, kind, name, config) -> Channel:
    """Give ``user`` one channel and make it the only one consumer-lag warnings use."""
    channel = create_channel(user, kind=kind, name=name, config=config)
    subscriptions.subscribe(user, LAG, [channel])
    return channel


def warning_url(event) -> str:
    return f"https://mqcloud.test/warnings/{event.warning.pk}/"


# --- e-mail -------------------------------------------------------------------------------------------------------


def test_the_owner_gets_one_e_mail_through_the_real_smtp_server(fired, member, smtp):
    member.email = "mia@example.com"
    member.save()  # no subscription: the defaults, in-app + e-mail to the account address

    report = deliver(fired)

    [mail] = smtp.messages
    assert mail["To"] == "mia@example.com" and mail["From"] == "MQCloud <warnings@mqcloud.test>"
    assert mail["Subject"] == "[Warning] consumer lag: order-consumer (prod)"
    body = mail.get_content()
    assert SUMMARY in body and warning_url(fired) in body and "Cluster: prod" in body
    assert report.sent == 2  # and the in-app one
    assert sorted(Delivery.objects.values_list("channel_kind", "status")) == [("email", "sent"), ("in_app", "sent")]


def test_an_e_mail_channel_may_send_to_another_address(fired, member, smtp):
    only_through(member, ChannelKind.EMAIL, "on-call", {"address": "oncall@example.com"})

    deliver(fired)

    assert [mail["To"] for mail in smtp.messages] == ["oncall@example.com"]


def test_a_refused_address_disables_the_channel_at_once_and_tells_its_owner(fired, member, smtp):
    channel = only_through(member, ChannelKind.EMAIL, "old address", {"address": "gone@example.com"})
    smtp.refuse("gone@example.com")

    report = deliver(fired)

    channel.refresh_from_db()
    assert (report.failed, report.retryable) == (1, 0)
    assert not channel.enabled and channel.disabled_at is not None and "550" in channel.last_error
    [note] = Notification.objects.filter(user=member)
    assert note.title == "Your warning channel old address was disabled" and "550" in note.body
    assert Delivery.objects.get().status == "failed"


def test_the_portals_mail_server_being_down_is_not_held_against_the_users_channel(fired, member, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", 1  # nothing listens there
    settings.WARNING_CHANNEL_MAX_FAILURES = 1
    channel = only_through(member, ChannelKind.EMAIL, "mail", {"address": "mia@example.com"})

    report = deliver(fired)

    channel.refresh_from_db()
    assert (report.failed, report.retryable) == (1, 1)
    assert channel.enabled and channel.consecutive_failures == 0
    assert "127.0.0.1:1" in Delivery.objects.get().error


# --- webhooks -----------------------------------------------------------------------------------------------------


def test_dingtalk_gets_a_markdown_message_signed_as_dingtalk_documents(fired, member, hooks):
    secret = "SEC0123456789abcdef"
    url = hooks.url("/robot/send") + "?access_token=tok123"
    only_through(member, ChannelKind.DINGTALK, "dingtalk", {"url": url, "secret": secret})

    deliver(fired)

    [request] = hooks.requests
    assert request.query["access_token"] == "tok123"
    timestamp = request.query["timestamp"]
    expected = base64.b64encode(
        hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(), hashlib.sha256).digest()
    ).decode()
    assert request.query["sign"] == expected and timestamp.isdigit() and len(timestamp) == 13
    assert request.headers["content-type"] == "application/json; charset=utf-8"
    assert request.json == {
        "msgtype": "markdown",
        "markdown": {
            "title": "[Warning] consumer lag: order-consumer (prod)",
            "text": "\n".join(
                [
                    "### [Warning] consumer lag: order-consumer (prod)",
                    "",
                    SUMMARY,
                    "",
                    "- **Cluster**: prod",
                    "- **Consumer group**: order-consumer",
                    "- **Severity**: warning",
                    "- **Since**: 2026-11-22 07:00 UTC",
                    "",
                    f"[Open in MQCloud]({warning_url(fired)})",
                ]
            ),
        },
    }


def test_an_unsigned_dingtalk_robot_gets_no_signature(fired, member, hooks):
    only_through(member, ChannelKind.DINGTALK, "dingtalk", {"url": hooks.url("/robot/send?access_token=t")})

    deliver(fired)

    assert hooks.requests[0].query == {"access_token": "t"}


def test_a_dingtalk_error_code_is_permanent_except_for_rate_limits(fired, member, hooks):
    channel = only_through(member, ChannelKind.DINGTALK, "dingtalk", {"url": hooks.url("/robot/send")})
    hooks.answer("/robot/send", 200, b'{"errcode": 130101, "errmsg": "send too fast"}')

    first = deliver(fired)
    channel.refresh_from_db()
    assert (first.retryable, channel.enabled, channel.consecutive_failures) == (1, True, 1)

    hooks.answer("/robot/send", 200, b'{"errcode": 310000, "errmsg": "sign not match"}')
    deliver(fired)  # the retry
    channel.refresh_from_db()
    assert not channel.enabled and channel.last_error == "the robot answered errcode 310000"
    assert Notification.objects.filter(user=member, title__contains="dingtalk").count() == 1


def test_wecom_gets_a_markdown_message(fired, member, hooks):
    only_through(member, ChannelKind.WECOM, "wecom", {"url": hooks.url("/cgi-bin/webhook/send?key=k1")})

    deliver(fired)

    [request] = hooks.requests
    assert request.query == {"key": "k1"}
    assert list(request.json) == ["msgtype", "markdown"] and request.json["msgtype"] == "markdown"
    content = request.json["markdown"]["content"]
    assert content.startswith("### [Warning] consumer lag: order-consumer (prod)\n\n" + SUMMARY)
    assert content.endswith(f"[Open in MQCloud]({warning_url(fired)})")


def test_slack_gets_text_and_blocks(fired, member, hooks):
    only_through(member, ChannelKind.SLACK, "slack", {"url": hooks.url("/services/T0/B0/x")})
    hooks.answer("/services/T0/B0/x", 200, b"ok")

    report = deliver(fired)

    assert report.sent == 1
    assert hooks.requests[0].json == {
        "text": f"[Warning] consumer lag: order-consumer (prod): {SUMMARY}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "[Warning] consumer lag: order-consumer (prod)"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": SUMMARY}},
            {
                "type": "section",
                "fields": [
                    {"type": "mrkdwn", "text": "*Cluster*\nprod"},
                    {"type": "mrkdwn", "text": "*Consumer group*\norder-consumer"},
                    {"type": "mrkdwn", "text": "*Severity*\nwarning"},
                    {"type": "mrkdwn", "text": "*Since*\n2026-11-22 07:00 UTC"},
                ],
            },
            {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{warning_url(fired)}|Open in MQCloud>"}]},
        ],
    }


def test_a_revoked_slack_webhook_disables_the_channel(fired, member, hooks):
    channel = only_through(member, ChannelKind.SLACK, "slack", {"url": hooks.url("/services/gone")})
    hooks.answer("/services/gone", 404, b"no_service")

    deliver(fired)

    channel.refresh_from_db()
    assert not channel.enabled and channel.last_error == "HTTP 404 Not Found"


def test_the_generic_webhook_gets_the_documented_payload_signed_with_its_secret(fired, member, hooks):
    only_through(member, ChannelKind.WEBHOOK, "json", {"url": hooks.url("/hook"), "secret": "s3cret"})

    deliver(fired)

    [request] = hooks.requests
    assert request.headers["x-mqcloud-event"] == "fired"
    timestamp = request.headers["x-mqcloud-timestamp"]
    digest = hmac.new(b"s3cret", f"{timestamp}.".encode() + request.body, hashlib.sha256).hexdigest()
    assert request.headers["x-mqcloud-signature"] == f"sha256={digest}"
    warning = fired.warning
    assert request.json == {
        "version": 1,
        "event": {"id": fired.pk, "transition": "fired", "at": "2026-11-22T07:00:00+00:00"},
        "warning": {
            "id": warning.pk,
            "kind": "consumer_lag",
            "kind_label": "consumer lag",
            "cluster": "prod",
            "subject_type": "consumer_group",
            "subject_name": "order-consumer",
            "topic": "orders",
            "severity": "warning",
            "state": "open",
            "opened_at": "2026-11-22T07:00:00+00:00",
            "resolved_at": None,
            "acknowledged_by": None,
            "summary": SUMMARY,
            "details": {"topic": "orders", "behind": 52_000},
            "url": warning_url(fired),
        },
        "recipient": {"username": "mia", "language": "en"},
    }


def test_a_channel_failing_transiently_too_often_in_a_row_is_disabled(fired, member, hooks, settings):
    settings.WARNING_CHANNEL_MAX_FAILURES = 3
    channel = only_through(member, ChannelKind.WEBHOOK, "flaky", {"url": hooks.url("/flaky")})
    hooks.answer("/flaky", 503, b"busy")

    deliver(fired)
    deliver(fired)
    channel.refresh_from_db()
    assert (channel.enabled, channel.consecutive_failures) == (True, 2)

    deliver(fired)
    channel.refresh_from_db()
    assert not channel.enabled and channel.last_error == "HTTP 503 Service Unavailable"
    assert Delivery.objects.filter(status="failed").count() == 3


def test_a_success_clears_the_failure_count(fired, member, hooks):
    channel = only_through(member, ChannelKind.WEBHOOK, "flaky", {"url": hooks.url("/flaky")})
    hooks.answer("/flaky", 500, b"oops")
    deliver(fired)
    hooks.answer("/flaky", 204, b"")

    report = deliver(fired)

    channel.refresh_from_db()
    assert report.sent == 1 and channel.consecutive_failures == 0 and channel.last_success_at is not None
    assert list(Delivery.objects.order_by("id").values_list("status", flat=True)) == ["failed", "sent"]


# --- delivery bookkeeping -----------------------------------------------------------------------------------------


def test_delivering_again_sends_nothing_twice(fired, member, hooks):
    only_through(member, ChannelKind.WEBHOOK, "json", {"url": hooks.url("/hook")})

    deliver(fired)
    again = deliver(fired)

    assert len(hooks.requests) == 1 and again.sent == 0
    assert Delivery.objects.count() == 1


def test_a_disabled_channel_is_skipped_once_and_recorded(fired, member, hooks):
    channel = only_through(member, ChannelKind.WEBHOOK, "json", {"url": hooks.url("/hook")})
    set_enabled(channel, False, by=member)

    deliver(fired)
    deliver(fired)

    assert hooks.requests == []
    assert list(Delivery.objects.values_list("status", "error")) == [("skipped", "The channel is disabled.")]


def test_in_app_delivery_lands_in_the_notification_center(fired, member):
    deliver(fired)

    [note] = Notification.objects.filter(user=member)
    assert note.title == "[Warning] consumer lag: order-consumer (prod)"
    assert note.link == f"/warnings/{fired.warning.pk}/" and SUMMARY in note.body


def test_the_test_button_sends_a_test_message(member, hooks):
    channel = create_channel(member, kind=ChannelKind.WEBHOOK, name="json", config={"url": hooks.url("/hook")})

    assert send_test(channel, by=member) == ""
    assert hooks.requests[0].json["test"] is True

    hooks.answer("/hook", 410, b"gone")
    assert send_test(channel, by=member) == "HTTP 410 Gone"
    channel.refresh_from_db()
    assert channel.enabled and channel.last_error == "HTTP 410 Gone"


def test_only_the_owner_may_test_or_change_a_channel(member, outsider):
    channel = create_channel(member, kind=ChannelKind.WEBHOOK, name="json", config={"url": "https://hooks.test/x"})

    for attempt in (
        lambda: send_test(channel, by=outsider),
        lambda: set_enabled(channel, False, by=outsider),
        lambda: update_channel(channel, by=outsider, name="mine now"),
    ):
        with pytest.raises(PermissionDenied):
            attempt()


# --- configuration ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://hooks.test/x", "Only http and https URLs are allowed."),
        ("https://user:pw@hooks.test/x", "Do not put credentials in the URL."),
        ("https:///x", "Enter a valid URL."),
        ("https://hooks.test:99999/x", "Enter a valid URL."),
        ("https://hooks.test/x#frag", "Enter a valid URL."),
        ("", "Enter the webhook URL."),
    ],
)
def test_webhook_urls_are_validated(member, url, message):
    with pytest.raises(ValidationError) as caught:
        create_channel(member, kind=ChannelKind.DINGTALK, name="d", config={"url": url})

    assert caught.value.message_dict == {"url": [message]}


def test_bad_settings_get_field_errors(member):
    with pytest.raises(ValidationError) as caught:
        create_channel(member, kind=ChannelKind.EMAIL, name="m", config={"address": "not an address"})
    assert list(caught.value.message_dict) == ["address"]

    with pytest.raises(ValidationError) as caught:
        create_channel(member, kind=ChannelKind.WEBHOOK, name="w", config={"url": "https://h.test", "token": "x"})
    assert list(caught.value.message_dict) == ["token"]

    with pytest.raises(ValidationError) as caught:
        create_channel(member, kind=ChannelKind.IN_APP, name="i", config={})
    assert list(caught.value.message_dict) == ["kind"]


def test_webhook_urls_and_secrets_are_stored_encrypted_and_never_described(member):
    channel = create_channel(
        member,
        kind=ChannelKind.DINGTALK,
        name="d",
        config={"url": "https://oapi.dingtalk.com/robot/send?access_token=TOKEN42", "secret": "SECRET42"},
    )

    with connection.cursor() as cursor:
        cursor.execute("SELECT config FROM portal_channel WHERE id = %s", [channel.pk])
        [stored] = cursor.fetchone()
    assert "TOKEN42" not in stored and "SECRET42" not in stored
    assert describe(channel) == "https://oapi.dingtalk.com"


def test_changing_a_channel_keeps_a_secret_left_blank(member):
    channel = create_channel(
        member, kind=ChannelKind.WEBHOOK, name="w", config={"url": "https://h.test/a", "secret": "keep-me"}
    )

    update_channel(channel, by=member, name="renamed", config={"url": "https://h.test/b", "secret": ""})

    channel.refresh_from_db()
    assert channel.name == "renamed"
    assert json.loads(channel.config) == {"url": "https://h.test/b", "secret": "keep-me"}


def test_a_channel_can_be_deleted_by_its_owner_but_the_in_app_one_stays(member, outsider):
    hook = create_channel(member, kind=ChannelKind.WEBHOOK, name="w", config={"url": "https://h.test/a"})
    in_app = default_channels(member)[0]

    with pytest.raises(PermissionDenied):
        delete_channel(hook, by=outsider)
    with pytest.raises(ValidationError):
        delete_channel(in_app, by=member)
    delete_channel(hook, by=member)

    assert list(Channel.objects.filter(owner=member).values_list("kind", flat=True)) == ["in_app"]

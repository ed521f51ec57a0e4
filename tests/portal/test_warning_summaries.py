"""A warning's summary is worded from its figures in the reader's language: on the pages and in the API for the
signed-in user, in each recipient's language in e-mail, in-app and webhook notifications. The rules store figures,
never sentences; a row stored with only an English sentence (before the figures were kept) still shows it.

The warning here is opened as the product opens it: a consumer group's lag written through the stats store, judged
by the real rule (``portal.services.warnings.rules.evaluate``) and reconciled
(``portal.services.warnings.lifecycle``)."""

import html
import re
import zoneinfo

import pytest
from django.urls import reverse
from django.utils import timezone, translation

from portal.models import (
    ChannelKind,
    Cluster,
    ConsumerGroup,
    Membership,
    NameServer,
    Notification,
    TeamRole,
    Topic,
    UserProfile,
    Warning,
    WarningEvent,
)
from portal.models.warnings import SubjectType, Transition, WarningKind
from portal.services import api_tokens
from portal.services.warnings import subscriptions, summaries
from portal.services.warnings.channels import create_channel, default_channels
from portal.services.warnings.delivery import deliver
from portal.services.warnings.lifecycle import reconcile
from portal.services.warnings.rules import evaluate
from stats import keys
from tests.portal.warning_rules.test_warning_rules import lagging_group
from tests.portal.warning_rules.warning_rows import NOW
from tests.portal.warning_servers import LOCAL_RECEIVERS, SmtpServer, WebhookServer
from tests.support.factories import make_user

LAG = WarningKind.CONSUMER_LAG
ENGLISH = (
    "cg_orders is 17,000 messages behind on TopicOrders; the oldest waiting message has waited 6 min 40 s. "
    "Falling behind: consuming 3.3/s while 13/s arrive; the backlog grows by 600 a minute. "
    "Most behind: TopicOrders broker-a/0 (8,500) and TopicOrders broker-a/1 (8,500)."
)
CHINESE = (
    "消费者组 cg_orders 在 Topic TopicOrders 上堆积 17,000 条消息；最早的待消费消息已等待 6 分 40 秒。"
    "越落越远：消费速度 3.3 条/秒，生产速度 13 条/秒；堆积每分钟增加 600 条。"
    "堆积最多的队列：TopicOrders broker-a/0 (8,500) 和 TopicOrders broker-a/1 (8,500)。"
)
OLD_SUMMARY = "cg_legacy is 20,000 messages behind on TopicOrders"


def english_sentences(text: str) -> list[str]:
    return [sentence.strip(" .") for sentence in text.split(". ") if sentence.strip(" .")]


@pytest.fixture
def cluster(db):
    cluster = Cluster.objects.create(name="rules")
    NameServer.objects.create(cluster=cluster, address="127.0.0.1:9876")
    return cluster


@pytest.fixture
def group(cluster, team):
    Topic.objects.create(cluster=cluster, team=team, name="TopicOrders", queue_nums=4)
    return ConsumerGroup.objects.create(cluster=cluster, team=team, name="cg_orders")


@pytest.fixture
def fired(cluster, group) -> WarningEvent:
    """The lag rule's own warning of the team's group, falling behind (the first test of test_warning_rules.py)."""
    lagging_group(cluster, before=(1000, 8000), now=(1500, 10000))
    [event] = reconcile(cluster, evaluate(cluster, NOW), NOW).fired
    return event


def speaking(user, language: str, time_zone: str = "UTC"):
    UserProfile.objects.update_or_create(user=user, defaults={"language": language, "time_zone": time_zone})
    return user


@pytest.fixture
def li(member):
    """A member of the group's team who reads the portal in Chinese."""
    return speaking(member, "zh-hans", "Asia/Shanghai")


@pytest.fixture
def emma(team):
    user = make_user("emma")
    Membership.objects.create(team=team, user=user, role=TeamRole.MEMBER)
    return speaking(user, "en")


def page(client, user, name: str, *args) -> str:
    client.force_login(user)
    response = client.get(reverse(name, args=args))
    assert response.status_code == 200
    return html.unescape(response.text)


# --- pages and API ------------------------------------------------------------------------------------------------


def test_the_rules_warning_is_stored_as_figures_with_its_english_wording_for_search(fired):
    warning = fired.warning
    assert warning.summary == ENGLISH == fired.summary
    assert (warning.details["lag"], warning.details["state"]) == (17_000, "falling_behind")


def test_a_chinese_user_reads_the_rules_warning_in_chinese_on_the_list_and_its_page(client, fired, li):
    listed = page(client, li, "warning-list")
    detail = page(client, li, "warning-detail", fired.warning.pk)

    assert CHINESE[:120] in listed  # the list cuts long summaries
    assert CHINESE in detail
    for text in (listed, detail):
        left = [sentence for sentence in english_sentences(ENGLISH) if sentence in text]
        assert not left, f"English left on a Chinese page: {left}"


def test_an_english_user_reads_the_same_warning_in_english(client, fired, emma):
    detail = page(client, emma, "warning-detail", fired.warning.pk)

    assert ENGLISH in detail
    assert "消费者组 cg_orders" not in detail


def test_the_api_gives_the_figures_and_the_summary_in_the_users_language(client, fired, li, emma):
    url = reverse("api:warning-detail", args=[fired.warning.pk])
    client.force_login(li)
    chinese = client.get(url).json()
    client.force_login(emma)
    english = client.get(url).json()

    assert chinese["summary"] == CHINESE and chinese["events"][0]["summary"] == CHINESE
    assert english["summary"] == ENGLISH and english["events"][0]["summary"] == ENGLISH
    assert chinese["details"] == english["details"] and chinese["details"]["lag"] == 17_000


def test_a_script_with_a_token_gets_the_summary_in_its_accept_language(client, fired, emma):
    """Without a session the request's own language decides (Accept-Language), else English."""
    key = api_tokens.obtain(emma).key
    url = reverse("api:warning-detail", args=[fired.warning.pk])

    asked = client.get(url, headers={"Authorization": f"Token {key}", "Accept-Language": "zh-Hans,zh;q=0.9"})
    unasked = client.get(url, headers={"Authorization": f"Token {key}"})

    assert asked.json()["summary"] == CHINESE and asked.headers["Content-Language"] == "zh-hans"
    assert unasked.json()["summary"] == ENGLISH


def test_an_old_warning_with_only_its_stored_english_summary_still_shows(client, cluster, group, li):
    """Rows stored before the rules kept every figure show the sentence stored with them."""
    now = timezone.now()
    old = Warning.objects.create(
        kind=LAG, cluster=cluster, subject_type=SubjectType.CONSUMER_GROUP, subject_name="cg_legacy",
        consumer_group=group, opened_at=now, last_seen_at=now, last_notified_at=now, summary=OLD_SUMMARY,
        details={"topic": "TopicOrders", "behind": 20_000},
    )  # fmt: skip
    WarningEvent.objects.create(warning=old, transition=Transition.FIRED, at=now, summary=OLD_SUMMARY)

    assert OLD_SUMMARY in page(client, li, "warning-list")
    assert OLD_SUMMARY in page(client, li, "warning-detail", old.pk)
    client.force_login(li)
    assert client.get(reverse("api:warning-detail", args=[old.pk])).json()["summary"] == OLD_SUMMARY


# --- notifications ------------------------------------------------------------------------------------------------


@pytest.fixture
def smtp(settings):
    with SmtpServer() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        yield server


@pytest.fixture
def hooks(settings):
    settings.WEBHOOK_ALLOWED_NETWORKS = LOCAL_RECEIVERS
    with WebhookServer() as server:
        yield server


def test_a_chinese_recipient_is_told_in_chinese_by_e_mail_in_app_and_webhook(fired, li, emma, smtp, hooks):
    li.email, emma.email = "li@example.com", "emma@example.com"
    li.save()
    emma.save()
    webhook = create_channel(li, kind=ChannelKind.WEBHOOK, name="ops", config={"url": hooks.url("/li")})
    subscriptions.subscribe(li, LAG, [*default_channels(li), webhook])

    deliver(fired)

    mails = {mail["To"]: mail.get_content() for mail in smtp.messages}
    assert CHINESE in mails["li@example.com"] and ENGLISH in mails["emma@example.com"]
    assert ENGLISH not in mails["li@example.com"]
    assert CHINESE in Notification.objects.get(user=li).body
    assert ENGLISH in Notification.objects.get(user=emma).body
    [request] = hooks.requests
    assert request.json["warning"]["summary"] == CHINESE
    assert request.json["recipient"] == {"username": li.get_username(), "language": "zh-hans"}


# --- every kind ---------------------------------------------------------------------------------------------------

# One condition of each kind as its rule words it (figures shaped as portal/services/warnings/rules/ stores them),
# with the branches that add clauses switched on.
EXAMPLES = {
    WarningKind.CONSUMER_LAG: ("cg_orders", {
        "minute": "2026-03-02T10:00:00+00:00", "state": "catching_up", "lag": 52_000, "lag_seconds": 840.0,
        "age_measured": False, "broadcasting": True, "clients": 2, "trend_seconds": 300,
        "consumed_per_second": 30.0, "produced_per_second": 10.0, "lag_change_per_minute": -1200.0,
        "pulled_last_minute": None, "thresholds": {"messages": 10_000, "seconds": 300},
        "topics": {
            "TopicA": {"lag": 40_000, "lag_seconds": 840.0, "age_measured": False,
                       "measured_at": "2026-03-02T09:59:00+00:00"},
            "TopicB": {"lag": 12_000, "lag_seconds": 60.0, "age_measured": False,
                       "measured_at": "2026-03-02T10:00:00+00:00"},
        },
        "queues": [{"topic": "TopicA", "broker_name": "broker-a", "queue_id": n, "lag": 9_000 - n,
                    "consumer_offset": 1, "broker_offset": 2, "client_id": "c1"} for n in range(4)],
        "lagging_queues": 6,
    }),
    WarningKind.CLIENT_BLOCKED: ("cg_orders", {
        "minute": "2026-03-02T10:00:00+00:00", "threshold_seconds": 10, "clients": ["c1", "c2"],
        "queues": [{"topic": "TopicA", "broker_name": "broker-a", "queue_id": n, "client_id": f"c{n % 2 + 1}",
                    "blocked_seconds": 95.0, "last_consumed_at": None, "cached_messages": 100, "lag": n * 10}
                   for n in range(5)],
        "blocked_queues": 5,
    }),
    WarningKind.OFFSET_MOVED: ("cg_orders", {
        "events": 3, "window_seconds": 600.0, "last_event_at": "2026-03-02T09:58:07+00:00",
        "queues": [
            {"topic": "TopicA", "broker_name": "broker-a", "queue_id": 0, "offset_request": 10, "offset_new": 500,
             "stored_at": "2026-03-02T09:58:07+00:00"},
            {"topic": "TopicA", "broker_name": "broker-a", "queue_id": 1, "offset_request": 900, "offset_new": 0,
             "stored_at": "2026-03-02T09:58:07+00:00"},
        ],
        "moved_queues": 2,
    }),
    WarningKind.SUBSCRIPTION_MISMATCH: ("cg_orders", {
        "minute": "2026-03-02T09:58:00+00:00", "verdict_carried": True,
        "clients": [
            {"client_id": "c1", "subscription": {"TopicA": "*", "%RETRY%cg_orders": "*"}, "error": ""},
            {"client_id": "c2", "subscription": {"TopicA": "*"}, "error": ""},
            {"client_id": "c3", "subscription": {}, "error": ""},
        ],
    }),
    WarningKind.CONSUME_FAILURES: ("cg_orders", {
        "minute": "2026-03-02T10:00:00+00:00", "sent_back": 1_500, "sent_back_latest_minute": 20,
        "minutes_covered": 45, "threshold": 100, "topics": {"TopicA": 1_000, "TopicB": 500},
    }),
    WarningKind.DEAD_LETTERS: ("cg_orders", {
        "minute": "2026-03-02T10:00:00+00:00", "dead_letters": 12, "dead_letters_total": 40,
        "last_minute": "2026-03-02T09:59:00+00:00", "threshold": 1,
    }),
    WarningKind.CLIENT_CONSUME_FAILURES: ("GID_ORDERS", {
        "window_minutes": 5, "since": "2026-03-02T09:55:00+00:00", "failed_messages": 12, "consumed": 600,
        "failures": {"ValueError": 10, "TimeoutError": 2}, "topics": {"TopicA": 12}, "clients": ["10.0.0.7@1"],
        "last_failure_minute": "2026-03-02T09:59:00+00:00", "threshold": 10,
    }),
    WarningKind.PRODUCE_ERRORS: ("PID_ORDERS", {
        "window_minutes": 5, "since": "2026-03-02T09:55:00+00:00", "failed": 30, "sent": 1_000,
        "exceptions": {"MQBrokerException": 20, "RemotingTimeoutException": 10},
        "brokers": {"MQBrokerException": ["broker-a"], "RemotingTimeoutException": ["broker-a", "broker-b"]},
        "topics": ["TopicA"], "clients": ["10.0.0.7@1"], "last_failure_minute": "2026-03-02T09:59:00+00:00",
        "threshold": 10,
    }),
    WarningKind.TRACE_FAILURES: ("TopicA", {
        "window_minutes": 5, "since": "2026-03-02T09:55:00+00:00", "trace_written": 900, "trace_dropped": 12,
        "trace_failed": 3, "losing_clients": [{"producer_group": "PID_ORDERS", "client_id": "10.0.0.7@1",
        "trace_written": 900, "trace_dropped": 12, "trace_failed": 3}],
        "last_loss_minute": "2026-03-02T09:59:00+00:00", "threshold": 1,
    }),
    WarningKind.TRAFFIC_SURGE: ("TopicA", {
        "minute": "2026-03-02T10:00:00+00:00", "recent_per_minute": 5_000.0, "recent_minutes": 3,
        "baseline_per_minute": 500.0, "baseline_minutes": 60, "ratio": 10.0,
        "thresholds": {"factor": 3, "min_per_minute": 100, "baseline_minutes": 60},
    }),
    WarningKind.TRAFFIC_DROP: ("TopicA", {
        "minute": "2026-03-02T10:00:00+00:00", "recent_per_minute": 10.0, "recent_minutes": 1,
        "baseline_per_minute": 500.0, "baseline_minutes": 60, "ratio": 0.02,
        "thresholds": {"factor": 0.2, "min_baseline_per_minute": 100, "baseline_minutes": 60},
    }),
    WarningKind.NAMESERVER_DOWN: ("10.0.0.1:9876", {
        "address": "10.0.0.1:9876", "down_since": "2026-03-02T09:57:00+00:00", "failed_rounds": 4, "attempts": 3,
        "error": "", "latest_probe": "2026-03-02T10:00:00+00:00", "grace_seconds": 120, "all_down": False,
        "answering": ["10.0.0.2:9876"],
    }),
    WarningKind.BROKER_DOWN: ("broker-a@1", {
        "broker_name": "broker-a", "broker_id": 1, "role": "SLAVE", "address": "10.0.0.5:10921", "listed": False,
        "down_since": "2026-03-02T09:58:00+00:00", "failed_rounds": 3, "attempts": 3, "error": "",
        "latest_probe": "2026-03-02T10:00:00+00:00", "grace_seconds": 120,
    }),
    WarningKind.SLAVE_LAG: ("broker-a@1", {
        "address": "10.0.0.5:10921", "master_address": "10.0.0.5:10911", "behind_bytes": 3 * 1024**3,
        "master_commit_log_max_offset": 10, "slave_commit_log_max_offset": 1, "change_bytes_per_minute": -50 * 1024**2,
        "minute": "2026-03-02T10:00:00+00:00", "threshold_bytes": 1024**3,
    }),
    WarningKind.SERVER_CPU: ("10.0.0.5", {
        "host": "10.0.0.5", "minute": "2026-03-02T10:00:00+00:00", "cpu_percent": [97.0, 95.0],
        "cpu_iowait_percent": 4.0, "span_seconds": 600.0, "load1": 12.5, "threshold_percent": 90,
    }),
    WarningKind.SERVER_MEMORY: ("10.0.0.5", {
        "host": "10.0.0.5", "minute": "2026-03-02T10:00:00+00:00", "used_percent": 94.0, "mem_used": 60 * 1024**3,
        "mem_total": 64 * 1024**3, "swap_used": 1024**3, "threshold_percent": 90,
    }),
    WarningKind.SERVER_DISK: ("10.0.0.5", {
        "host": "10.0.0.5", "minute": "2026-03-02T10:00:00+00:00", "threshold_percent": 85,
        "mounts": {"/data": {"used_percent": 93.0, "used": 930, "available": 70 * 1024**3}},
    }),
    WarningKind.SERVER_LOAD: ("10.0.0.5", {
        "host": "10.0.0.5", "minute": "2026-03-02T10:00:00+00:00", "load1": 20.0, "load5": 15.0, "load15": None,
        "cpu_percent": 88.0, "threshold": 16,
    }),
    WarningKind.SERVER_TCP: ("10.0.0.5", {
        "host": "10.0.0.5", "minute": "2026-03-02T10:00:00+00:00", "established": 30_000, "time_wait": 5_000,
        "total": 36_000, "threshold": 20_000,
    }),
}  # fmt: skip
# Latin words a Chinese summary keeps: RocketMQ's and Linux's own names, units and the time zone.
KEPT = {
    "Topic", "Broker", "NameServer", "Master", "Slave", "CommitLog", "PageCache", "CPU", "I/O", "TCP", "swap", "socket",
    "ESTABLISHED", "TIME_WAIT", "OFFSET_MOVED_EVENT", "RECONSUME_LATER", "SYNC_MASTER", "SLAVE_NOT_AVAILABLE",
    "diskMaxUsedSpaceRatio", "diskSpaceWarningLevelRatio", "GiB", "MiB", "KiB", "CST", "UTC",
}  # fmt: skip


def test_every_kind_covers_every_warning_type():
    assert set(EXAMPLES) == set(WarningKind.values) == set(summaries.RENDERERS)


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_every_kind_reads_in_chinese_with_no_english_word_left(kind):
    subject, details = EXAMPLES[kind]
    derived = f"{keys.retry_topic(subject)} {keys.dlq_topic(subject)}"
    names = set(re.findall(r"[\w%@./:-]+", f"{subject} {details} {derived}"))
    with translation.override("zh-hans"), timezone.override(zoneinfo.ZoneInfo("Asia/Shanghai")):
        chinese = summaries.render(kind, subject, details, stored="stored")
    english = summaries.english(kind, subject, details, stored="stored")

    assert chinese != "stored" and english != "stored"
    words = set(re.findall(r"[A-Za-z][\w%@./:-]*[A-Za-z]", chinese))
    assert not {word for word in words if word not in KEPT and not any(word in name for name in names)}, chinese
    assert re.search(r"[\u4e00-\u9fff]", chinese)


def test_times_of_day_are_shown_in_the_readers_time_zone():
    subject, details = EXAMPLES[WarningKind.DEAD_LETTERS]
    with translation.override("zh-hans"), timezone.override(zoneinfo.ZoneInfo("Asia/Shanghai")):
        assert "最近一条在 17:59 CST" in summaries.render(WarningKind.DEAD_LETTERS, subject, details)
    assert "(the latest at 09:59 UTC; 40 there in all)" in summaries.english(WarningKind.DEAD_LETTERS, subject, details)


def test_figures_that_are_not_the_kinds_show_the_stored_text():
    assert summaries.render(LAG, "cg_orders", {"lag": "many"}, stored="was stored") == "was stored"
    assert summaries.render(LAG, "cg_orders", None, stored="was stored") == "was stored"
    assert summaries.render("retired_kind", "cg_orders", {}, stored="was stored") == "was stored"


def test_plural_forms_follow_the_count():
    subject, details = EXAMPLES[WarningKind.DEAD_LETTERS]
    one = summaries.english(WarningKind.DEAD_LETTERS, subject, {**details, "dead_letters": 1})
    assert one.startswith("1 message of cg_orders reached") and "12 messages of" in summaries.english(
        WarningKind.DEAD_LETTERS, subject, details
    )


def test_a_long_listing_names_the_first_few_and_counts_the_rest():
    subject, details = EXAMPLES[WarningKind.CONSUMER_LAG]
    assert "broker-a/2 (8,998) and 3 more." in summaries.english(LAG, subject, details)
    with translation.override("zh-hans"):
        assert "broker-a/2 (8,998) 等（另有 3 个）。" in summaries.render(LAG, subject, details)

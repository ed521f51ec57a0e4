"""The ingestion API for producers' reports (``POST /api/v1/producer-reports/``) and the SDK's startup check
(``GET /api/v1/producer-reports/registration/?topic=``): authenticated by a producer group's token only; a batch is
checked whole and stored whole or not at all (any bad report: 400 with field errors by report index; another
group's report: 403; no, unknown or revoked token: 401); a valid batch is stored idempotently."""

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Cluster, ProducerGroup, Topic
from portal.services import producer_tokens
from stats.histogram import Histogram
from stats.models import ProducerMinute

URL = reverse("api:producer-reports")
REGISTRATION = reverse("api:producer-registration")


@pytest.fixture
def prod(db):
    return Cluster.objects.create(name="prod")


@pytest.fixture
def orders(prod, team):
    return Topic.objects.create(cluster=prod, team=team, name="ORDERS")


@pytest.fixture
def group(prod, team, orders):
    group = ProducerGroup.objects.create(cluster=prod, team=team, name="PID_ORDERS")
    group.topics.add(orders)
    return group


@pytest.fixture
def token(group, member):
    return producer_tokens.issue(group, by=member).secret


@pytest.fixture
def api(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Producer {token}")
    return client


def this_minute(offset: int = 0) -> str:
    moment = timezone.now().replace(second=0, microsecond=0) + dt.timedelta(minutes=offset)
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def histogram(*costs: float) -> dict:
    recorded = Histogram()
    for cost in costs:
        recorded.record(cost)
    return recorded.to_dict()


def broker(name="broker-a", costs=(1.5, 2.5, 40.0), exceptions=None) -> dict:
    return {"broker_name": name, "count": len(costs), "exceptions": exceptions or {}, "histogram": histogram(*costs)}


def report(**fields) -> dict:
    base = {
        "minute": this_minute(-1),
        "client_id": "10.1.2.3@4711",
        "client_addr": "10.1.2.3",
        "producer_group": "PID_ORDERS",
        "topic": "ORDERS",
        "brokers": [broker(), broker("broker-b", (300.0, 310.0), {"RemotingTimeoutException": 1})],
    }
    base.update(fields)
    return base


def send(api, *reports, body=None):
    return api.post(URL, body if body is not None else {"reports": list(reports)}, format="json")


# --- accepted ----------------------------------------------------------------------------------------------------


def test_a_valid_batch_is_accepted_and_stored_per_broker(api, prod):
    response = send(api, report(), report(client_id="10.1.2.4@1", client_addr="10.1.2.4"))

    assert response.status_code == 202 and response.json() == {"accepted": 2}
    rows = ProducerMinute.objects.order_by("client_id", "broker_name")
    assert [(r.client_id, r.broker_name, r.count, r.exception_count) for r in rows] == [
        ("10.1.2.3@4711", "broker-a", 3, 0),
        ("10.1.2.3@4711", "broker-b", 2, 1),
        ("10.1.2.4@1", "broker-a", 3, 0),
        ("10.1.2.4@1", "broker-b", 2, 1),
    ]
    stored = rows[1]
    assert (stored.cluster_id, stored.producer_group, stored.topic, stored.client_addr) == (
        prod.pk,
        "PID_ORDERS",
        "ORDERS",
        "10.1.2.3",
    )
    assert stored.exceptions == {"RemotingTimeoutException": 1} and stored.max_ms == 310.0
    assert Histogram.from_dict(stored.histogram) == Histogram.from_dict(histogram(300.0, 310.0))


def test_a_batch_sent_again_changes_nothing_and_a_corrected_report_replaces_its_rows(api):
    first = report()
    assert send(api, first).status_code == 202
    assert send(api, first).status_code == 202
    assert ProducerMinute.objects.count() == 2

    corrected = report(brokers=[broker(costs=(9.0,))])
    assert send(api, corrected).status_code == 202
    assert ProducerMinute.objects.count() == 2  # broker-b's row of that minute stays as it was
    assert ProducerMinute.objects.get(broker_name="broker-a").count == 1


def test_a_minute_up_to_two_minutes_ahead_is_accepted_for_clocks_a_little_off(api):
    assert send(api, report(minute=this_minute(2))).status_code == 202


def test_a_minute_may_be_written_with_another_utc_offset(api):
    moment = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    shanghai = moment.astimezone(dt.timezone(dt.timedelta(hours=8))).isoformat()

    assert send(api, report(minute=shanghai)).status_code == 202
    assert ProducerMinute.objects.first().minute == moment


# --- refused: nothing stored -----------------------------------------------------------------------------------


def refused(api, *reports, body=None) -> dict:
    response = send(api, *reports, body=body)
    assert response.status_code == 400, response.content
    assert not ProducerMinute.objects.exists()
    return response.json()


def test_one_bad_report_refuses_the_whole_batch_with_its_index_and_field(api):
    errors = refused(api, report(), report(topic="NO_SUCH_TOPIC"), report(client_id="10.1.2.5@5"))

    assert errors == {"reports": {"1": {"topic": ["Unknown topic NO_SUCH_TOPIC."]}}}


def test_a_topic_of_the_cluster_not_registered_for_the_group_is_refused(api, prod):
    Topic.objects.create(cluster=prod, name="PAYMENTS")

    errors = refused(api, report(topic="PAYMENTS"))

    assert errors["reports"]["0"]["topic"] == ["Topic PAYMENTS is not registered for producer group PID_ORDERS."]


def test_an_unknown_producer_group_is_a_field_error(api):
    errors = refused(api, report(producer_group="PID_TYPO"))

    assert errors["reports"]["0"]["producer_group"] == ["Unknown producer group PID_TYPO."]


def test_another_groups_report_is_forbidden_and_nothing_of_the_batch_is_stored(api, prod, team):
    ProducerGroup.objects.create(cluster=prod, team=team, name="PID_OTHER")

    response = send(api, report(), report(producer_group="PID_OTHER"))

    assert response.status_code == 403
    assert "PID_OTHER" in response.json()["detail"]
    assert not ProducerMinute.objects.exists()


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"v": 1, "counts": {"5": 3}, "sum_ms": 1.0, "max_ms": 0.5}, "min_ms"),  # a field missing
        ({"v": 2, "counts": {}, "sum_ms": 0, "max_ms": 0, "min_ms": 0}, "version"),
        ({"v": 1, "counts": {"99999": 1}, "sum_ms": 1.0, "max_ms": 1.0, "min_ms": 1.0}, "bucket"),
        ({"v": 1, "counts": {"10": -1}, "sum_ms": 1.0, "max_ms": 1.0, "min_ms": 1.0}, "positive"),
        ("not a histogram", "object"),
    ],
)
def test_a_malformed_histogram_is_refused_with_the_reason(api, bad, field):
    errors = refused(api, report(brokers=[{"broker_name": "broker-a", "count": 3, "exceptions": {}, "histogram": bad}]))

    [message] = errors["reports"]["0"]["brokers"]["0"]["histogram"]
    assert field in message


def test_a_count_that_disagrees_with_the_histogram_is_refused(api):
    entry = broker(costs=(1.0, 2.0))
    entry["count"] = 5

    errors = refused(api, report(brokers=[entry]))

    assert errors["reports"]["0"]["brokers"]["0"]["count"] == ["count is 5 but the histogram holds 2 sends."]


def test_more_exceptions_than_sends_are_refused(api):
    errors = refused(api, report(brokers=[broker(costs=(1.0,), exceptions={"MQClientException": 2})]))

    assert errors["reports"]["0"]["brokers"]["0"]["exceptions"] == ["More exceptions than sends."]


@pytest.mark.parametrize(
    ("minute", "message"),
    [
        (lambda: this_minute(3), "This minute is in the future."),
        (lambda: this_minute(-8 * 24 * 60), "This minute is older than the 7 days minute data is kept."),
        (lambda: this_minute(-1).replace(":00Z", ":30Z"), "Expected a whole minute"),
        (lambda: this_minute(-1).removesuffix("Z"), "Expected a whole minute"),
        (lambda: "yesterday", "Expected a UTC time"),
        (lambda: "9999-12-31T23:59:00-14:00", "This minute is in the future."),  # no UTC datetime: year 10000
        (lambda: "0001-01-01T00:00:00+14:00", "This minute is older than"),  # nor year 0
        (lambda: 1763795700, "Expected a UTC time"),
    ],
)
def test_a_minute_far_ahead_too_old_or_not_a_whole_utc_minute_is_refused(api, settings, minute, message):
    settings.MINUTE_RETENTION_DAYS = 7

    errors = refused(api, report(minute=minute()))

    [shown] = errors["reports"]["0"]["minute"]
    assert shown.startswith(message)


def test_missing_null_and_unknown_fields_are_named(api):
    bad = report(client_addr=None, colour="blue")
    del bad["client_id"]
    bad["brokers"] = [{"broker_name": "broker-a", "count": 1, "histogram": histogram(1.0)}]

    errors = refused(api, bad)["reports"]["0"]

    assert errors["client_id"] == ["This field is required."]
    assert errors["client_addr"] == ["Expected the client's IP address."]
    assert errors["colour"] == ["Unknown field."]
    assert errors["brokers"] == {"0": {"exceptions": ["This field is required."]}}


def test_a_broker_listed_twice_in_a_report_is_refused(api):
    errors = refused(api, report(brokers=[broker(), broker()]))

    assert errors["reports"]["0"]["brokers"]["1"]["broker_name"] == ["This broker is listed twice in the report."]


@pytest.mark.parametrize(
    "body",
    [{"reports": []}, {"reports": "all of them"}, {"items": []}, {"reports": [report()], "more": 1}, ["a", "list"]],
    ids=["empty", "not a list", "no reports key", "another key", "not an object"],
)
def test_a_body_that_is_not_a_batch_is_refused(api, body):
    assert set(refused(api, body=body)) == {"reports"}


def test_more_than_a_thousand_reports_in_one_batch_are_refused(api):
    errors = refused(api, *[report(client_id=f"10.0.0.1@{n}") for n in range(1001)])

    assert errors == {"reports": ["Send a list of 1 to 1000 reports."]}


# --- refused: values the database cannot hold (a 400 naming the field, never a 500) ----------------------------

BIGINT_PLUS_ONE = 2**63


def overflowing_histogram(count: int) -> dict:
    """A histogram that is consistent in itself (every value 0 ms) but holds ``count`` sends."""
    return {"v": 1, "counts": {"0": count}, "sum_ms": 0.0, "max_ms": 0.0, "min_ms": 0.0}


def test_a_count_beyond_a_64_bit_integer_is_refused_naming_the_count(api):
    entry = {"broker_name": "broker-a", "count": BIGINT_PLUS_ONE, "exceptions": {}}
    entry["histogram"] = overflowing_histogram(BIGINT_PLUS_ONE)

    errors = refused(api, report(brokers=[entry]))["reports"]["0"]["brokers"]["0"]

    assert errors["count"] == ["Expected a whole number from 0 to 9223372036854775807."]
    assert "at most 9223372036854775807" in errors["histogram"][0]


def test_a_histogram_count_of_hundreds_of_digits_is_refused_naming_the_histogram(api):
    entry = {"broker_name": "broker-a", "count": 1, "exceptions": {}, "histogram": overflowing_histogram(10**400)}

    errors = refused(api, report(brokers=[entry]))["reports"]["0"]["brokers"]["0"]

    assert "positive integer of at most 9223372036854775807" in errors["histogram"][0]


def test_an_exception_count_beyond_a_64_bit_integer_is_refused_naming_the_exceptions(api):
    errors = refused(api, report(brokers=[broker(exceptions={"MQClientException": BIGINT_PLUS_ONE})]))

    assert "number of sends from 1 to 9223372036854775807" in errors["reports"]["0"]["brokers"]["0"]["exceptions"][0]


@pytest.mark.parametrize(
    "bad", ["10.1.2.3@\x00", "10.1.2.3@1\n", "\x1b[31m10.1.2.3@1"], ids=["nul", "newline", "escape"]
)
@pytest.mark.parametrize("field", ["client_id", "producer_group", "topic"])
def test_a_name_with_a_nul_or_control_character_is_refused_naming_it(api, field, bad):
    errors = refused(api, report(**{field: bad.encode().decode("unicode_escape")}))

    assert errors["reports"]["0"][field] == [
        "Expected a non-empty name of at most 255 printable characters, without spaces around it."
    ]


def test_a_broker_or_exception_name_with_a_nul_is_refused_naming_it(api):
    nul_broker = broker("broker-\x00")
    nul_exception = broker("broker-b", costs=(1.0,), exceptions={"MQClient\x00Exception": 1})

    errors = refused(api, report(brokers=[nul_broker, nul_exception]))["reports"]["0"]["brokers"]

    assert list(errors["0"]) == ["broker_name"]
    assert list(errors["1"]) == ["exceptions"]


def test_a_lone_surrogate_in_a_name_refuses_the_body(api):
    body = json.dumps({"reports": [report(client_id="@@")]}).replace("@@", "10.1.2.3@\\ud800")

    response = api.post(URL, body, content_type="application/json")

    assert response.status_code == 400 and "surrogate" in response.json()["detail"]
    assert not ProducerMinute.objects.exists()


def test_a_body_over_64_mib_is_refused_as_too_large_once_the_token_is_checked(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000  # the endpoint has its own, larger limit
    assert send(api, report()).status_code == 202

    padding = " " * (64 * 1024 * 1024)
    response = api.post(URL, '{"reports": []}' + padding, content_type="application/json")

    assert response.status_code == 413
    assert APIClient().post(URL, padding, content_type="application/json").status_code == 401


# --- authentication ----------------------------------------------------------------------------------------------


def test_without_a_producer_token_the_answer_is_401_with_the_producer_challenge(db, member):
    anonymous = APIClient().post(URL, {"reports": [report()]}, format="json")
    signed_in = APIClient()
    signed_in.force_login(member)  # a user's session is no producer credential

    for response in (anonymous, signed_in.post(URL, {"reports": [report()]}, format="json")):
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Producer"


@pytest.mark.parametrize("header", ["Producer mqp_not-a-real-token", "Producer", "Producer a b"])
def test_an_unknown_or_malformed_token_is_refused(db, group, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    assert client.post(URL, {"reports": [report()]}, format="json").status_code == 401
    assert client.get(REGISTRATION, {"topic": "ORDERS"}).status_code == 401


def test_a_revoked_token_is_refused_at_once(api, group, member):
    producer_tokens.revoke(group.tokens.get(), by=member)

    assert send(api, report()).status_code == 401
    assert not ProducerMinute.objects.exists()


def test_a_report_marks_when_its_token_was_last_used(api, group):
    assert group.tokens.get().last_used_at is None

    send(api, report())

    assert group.tokens.get().last_used_at is not None


# --- registration check -----------------------------------------------------------------------------------------


def test_the_registration_check_says_whether_the_group_is_registered_for_the_topic(api, prod):
    Topic.objects.create(cluster=prod, name="PAYMENTS")

    assert api.get(REGISTRATION, {"topic": "ORDERS"}).json() == {
        "registered": True,
        "producer_group": "PID_ORDERS",
        "topic": "ORDERS",
    }
    assert api.get(REGISTRATION, {"topic": "PAYMENTS"}).json()["registered"] is False
    assert api.get(REGISTRATION, {"topic": "NO_SUCH_TOPIC"}).json()["registered"] is False


def test_the_registration_check_needs_a_topic(api):
    response = api.get(REGISTRATION)

    assert response.status_code == 400 and response.json() == {"topic": ["This field is required."]}


def test_the_registration_check_refuses_a_topic_with_a_nul(api):
    response = api.get(REGISTRATION, {"topic": "ORDERS\x00"})

    assert response.status_code == 400 and list(response.json()) == ["topic"]


# --- message trace counts (SDK 1.2) --------------------------------------------------------------------------------


def test_a_report_may_carry_the_minute_s_trace_counts_and_a_traced_minute_may_have_no_sends(api):
    counts = {"written": 120, "dropped": 3, "failed": 0}

    assert send(api, report(trace=counts), report(minute=this_minute(-2), brokers=[], trace=counts)).status_code == 202
    assert ProducerMinute.objects.count() == 2  # the second report's minute had no sends


@pytest.mark.parametrize(
    "trace", [{"written": 1, "dropped": 0}, {"written": -1, "dropped": 0, "failed": 0}, [1, 2, 3], None]
)
def test_malformed_trace_counts_are_refused(api, trace):
    errors = refused(api, report(trace=trace))
    assert "trace" in errors["reports"]["0"]


def test_a_report_without_sends_and_without_trace_counts_is_still_refused(api):
    errors = refused(api, report(brokers=[]))
    assert "brokers" in errors["reports"]["0"]

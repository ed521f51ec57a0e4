"""The endpoints producers call with their group's token (``POST producer-reports/``, ``GET
producer-reports/registration/``), fuzzed with the token of the group (a valid batch mutated in one or a few places,
or a body of any shape), a revoked token and tokens that never existed: a 2xx or 4xx, no error in the logs, and a
refused batch stores nothing (the batch is all or nothing)."""

import datetime as dt
import json

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from hypothesis import strategies as st

from stats.histogram import Histogram
from tests.fuzz import runner, strategies
from tests.fuzz.strategies import FuzzRequest

REPORTS = reverse("api:producer-reports")
REGISTRATION = reverse("api:producer-registration")
TOKENS = ("the group's token", "a revoked token", "an unknown token", "a malformed header")


def valid_report() -> dict:
    histogram = Histogram()
    for cost in (1.5, 2.5, 40.0):
        histogram.record(cost)
    minute = timezone.now().replace(second=0, microsecond=0) - dt.timedelta(minutes=1)
    return {
        "minute": minute.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "client_id": "10.1.2.3@4711",
        "client_addr": "10.1.2.3",
        "producer_group": "PAY_CHECKOUT",
        "topic": "PAY_ORDER_CREATED",
        "brokers": [{"broker_name": "broker-a", "count": 3, "exceptions": {}, "histogram": histogram.to_dict()}],
    }


def _paths(value, prefix=()):
    """Every place in a JSON value (dict keys and list indexes), the value itself first."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, (*prefix, index))


def _replace(value, path, new):
    if not path:
        return new
    head, *rest = path
    copied = dict(value) if isinstance(value, dict) else list(value)
    copied[head] = _replace(value[head], rest, new) if rest else new
    return copied


def _at(value, path):
    for step in path:
        value = value[step]
    return value


@st.composite
def batches(draw, pool: list[str]) -> bytes:
    """A batch of valid reports with up to three places replaced by hostile values or given a hostile field
    beside them, repeated reports and oversized batches included; sometimes a body of any shape."""
    if draw(st.integers(0, 4)) == 0:
        return draw(strategies.json_bodies(pool))[0]
    report = valid_report()
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(list(_paths(report))))
        if path and isinstance(_at(report, path[:-1]), dict) and draw(st.booleans()):
            path = (*path[:-1], draw(strategies.field_names()))
        report = _replace(report, path, draw(strategies.json_values(pool, strategies.field_names())))
    copies = draw(st.sampled_from([1, 1, 1, 2, 1000, 1001]))
    body = {"reports": [report] * copies}
    return json.dumps(body, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")


def authorization(world, token: str) -> str:
    return {
        "the group's token": f"Producer {world.token.secret}",
        "a revoked token": f"Producer {world.revoked.secret}",
        "an unknown token": f"Producer {world.token.secret[:-4]}AAAA",
        "a malformed header": f"Producer {world.token.secret} extra",
    }[token]


@pytest.mark.parametrize("token", TOKENS)
def test_report_batches_get_no_server_error_and_refused_batches_store_nothing(world, token):
    header = {"HTTP_AUTHORIZATION": authorization(world, token)}
    strategy = st.builds(
        lambda body, content_type: FuzzRequest("POST", REPORTS, "", body, content_type, header),
        batches(world.pool),
        st.sampled_from(["application/json"] * 4 + strategies.CONTENT_TYPES),
    )
    client = Client(raise_request_exception=False)
    runner.fuzz(f"api:producer-reports with {token}", client, strategy, world.baseline, runner.examples(2))


@pytest.mark.parametrize("token", TOKENS)
def test_registration_checks_get_no_server_error(world, token):
    header = {"HTTP_AUTHORIZATION": authorization(world, token)}
    strategy = st.builds(
        lambda topic, query: FuzzRequest(
            "GET", REGISTRATION, f"topic={strategies.quoted(topic)}&{query}", None, "", header
        ),
        strategies.hostile_text(world.pool),
        strategies.query_strings(world.pool),
    )
    client = Client(raise_request_exception=False)
    runner.fuzz(f"api:producer-registration with {token}", client, strategy, world.baseline, runner.examples())

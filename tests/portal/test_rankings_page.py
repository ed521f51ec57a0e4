"""The rankings page, the rankings API, the topic list's sort by traffic and the admins' job-runs page, with their
authorization matrix (anonymous, outsider, member, team admin, portal admin; the shared matrices of
test_authz_pages.py and test_authz_api.py follow the same pattern).

Rankings are written as the Spark rankings job writes them: per cluster, kind and closed UTC day, rank 1 first;
the page shows a cluster's ranking or, narrowed to a team, the team's entries numbered among themselves."""

import datetime as dt

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import Cluster, ConsumerGroup, ProducerGroup, Topic
from stats.models import JobRun, JobState, Ranking, RankingKind

DAY = dt.timedelta(days=1)
TODAY = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)  # the end of the latest ranked day
YESTERDAY = TODAY - DAY


def rank(cluster, kind, ranked: list[tuple[str, float]], *, end=TODAY, days=1, detail=None) -> None:
    """One ranking as the job writes it: ``ranked`` best first."""
    Ranking.objects.bulk_create(
        Ranking(
            cluster_id=cluster.pk,
            kind=kind,
            window_start=end - days * DAY,
            window_end=end,
            subject=subject,
            value=value,
            rank=position,
            detail=detail or {},
        )
        for position, (subject, value) in enumerate(ranked, start=1)
    )


def ranked_run(end=TODAY, finished=None) -> JobRun:
    finished = finished or end + dt.timedelta(minutes=7)
    return JobRun.objects.create(
        job="rankings",
        window_start=end - DAY,
        window_end=end,
        state=JobState.SUCCEEDED,
        progress=1.0,
        started_at=finished - dt.timedelta(minutes=1),
        finished_at=finished,
        lease_expires_at=finished,
    )


@pytest.fixture
def prod(db):
    return Cluster.objects.create(name="prod")


@pytest.fixture
def ranked(prod, team, other_team):
    """prod's topics by traffic yesterday and today (today's job run recorded), two of them the team's, one
    another team's, one not registered; and a topic of another cluster."""
    for name, owner in (("ORDERS", team), ("REFUNDS", team), ("LABELS", other_team)):
        Topic.objects.create(cluster=prod, team=owner, name=name, queue_nums=4)
    rank(prod, RankingKind.TOPIC_TRAFFIC_DAY, [("LABELS", 9000), ("ORDERS", 5000), ("GHOST", 700), ("REFUNDS", 60)])
    rank(prod, RankingKind.TOPIC_TRAFFIC_DAY, [("ORDERS", 4000), ("LABELS", 3000)], end=YESTERDAY)
    ranked_run()
    return prod


def shown(response) -> list[tuple]:
    """The rows as the page lists them: (position, subject, linked entry or None, value)."""
    assert response.status_code == 200
    return [(row.position, row.subject, row.entry, row.value) for row in response.context["rows"]]


# --- the rankings page ------------------------------------------------------------------------------------------


def test_the_page_shows_a_clusters_latest_ranking_best_first_with_its_window_and_when_it_was_computed(
    client, member, ranked
):
    client.force_login(member)

    response = client.get(reverse("rankings"), {"cluster": ranked.pk})

    orders, refunds, labels = (Topic.objects.get(name=name) for name in ("ORDERS", "REFUNDS", "LABELS"))
    assert shown(response) == [
        (1, "LABELS", labels, 9000),
        (2, "ORDERS", orders, 5000),
        (3, "GHOST", None, 700),
        (4, "REFUNDS", refunds, 60),
    ]
    page = response.content.decode()
    assert reverse("topic-detail", args=[orders.pk]) in page
    assert "not registered" in page  # GHOST
    assert "Window: 2026-11-21 00:00 to 2026-11-22 00:00." in page  # the viewer's zone is UTC here
    assert "Computed at 2026-11-22 00:07." in page


def test_a_team_ranking_lists_the_teams_entries_numbered_among_themselves_beside_their_cluster_rank(
    client, member, team, ranked
):
    client.force_login(member)

    response = client.get(reverse("rankings"), {"cluster": ranked.pk, "team": team.pk})

    assert [(position, subject, value) for position, subject, _, value in shown(response)] == [
        (1, "ORDERS", 5000),
        (2, "REFUNDS", 60),
    ]
    assert [row.rank for row in response.context["rows"]] == [2, 4]
    assert "Cluster rank" in response.content.decode()


def test_an_earlier_day_can_be_chosen(client, member, ranked):
    client.force_login(member)

    response = client.get(reverse("rankings"), {"cluster": ranked.pk, "window": YESTERDAY.isoformat()})

    assert [subject for _, subject, _, _ in shown(response)] == ["ORDERS", "LABELS"]
    assert response.context["selection"].computed_at is None  # no run of that day recorded
    assert [window.day for window in response.context["selection"].windows] == [
        dt.date(2026, 11, 21),
        dt.date(2026, 11, 20),
    ]


def test_an_unknown_window_shows_the_latest(client, member, ranked):
    client.force_login(member)

    for window in ("2020-01-01T00:00:00+00:00", "2026-99-99T00:00:00", "garbage"):
        response = client.get(reverse("rankings"), {"cluster": ranked.pk, "window": window})
        assert response.context["selection"].window_end == TODAY


def test_consumer_and_producer_rankings_link_to_the_groups_pages(client, member, team, prod):
    group = ConsumerGroup.objects.create(cluster=prod, team=team, name="GID_BILLING")
    producer = ProducerGroup.objects.create(cluster=prod, team=team, name="PID_CHECKOUT")
    rank(prod, RankingKind.CONSUMER_LAG_TIME, [("GID_BILLING", 5400.0)])
    rank(prod, RankingKind.PRODUCER_EXCEPTIONS, [("PID_CHECKOUT", 12)])
    client.force_login(member)

    lag = client.get(reverse("rankings"), {"cluster": prod.pk, "kind": RankingKind.CONSUMER_LAG_TIME})
    noisy = client.get(reverse("rankings"), {"cluster": prod.pk, "kind": RankingKind.PRODUCER_EXCEPTIONS})

    assert shown(lag) == [(1, "GID_BILLING", group, 5400.0)]
    assert reverse("consumer-group-detail", args=[group.pk]) in lag.content.decode()
    assert "Seconds" in lag.content.decode()
    assert shown(noisy) == [(1, "PID_CHECKOUT", producer, 12)]
    assert reverse("producer-group-detail", args=[producer.pk]) in noisy.content.decode()


def test_every_kind_is_offered_and_growth_and_shrink_show_their_figures(client, member, prod):
    rank(prod, RankingKind.TOPIC_SHRINK, [("ORDERS", -4200.0)], detail={"day": 800, "baseline": 5000.0})
    client.force_login(member)

    response = client.get(reverse("rankings"), {"cluster": prod.pk, "kind": RankingKind.TOPIC_SHRINK})

    page = response.content.decode()
    for _kind, label in RankingKind.choices:
        assert str(label) in page
    assert 'title="day: 800, baseline: 5000.0"' in page
    assert shown(response)[0][3] == -4200.0


def test_a_cluster_without_rankings_says_so(client, member, prod):
    client.force_login(member)

    response = client.get(reverse("rankings"))

    assert response.context["cluster"] == prod
    assert response.context["rows"] == []
    assert "No ranking of this kind has been computed for this cluster yet." in response.content.decode()


# --- the topic list sorted by traffic ---------------------------------------------------------------------------


def test_the_topic_list_sorts_by_traffic_rank_and_keeps_its_name_order_otherwise(client, prod, team, ranked):
    other = Cluster.objects.create(name="staging")
    Topic.objects.create(cluster=other, team=team, name="AUDIT", queue_nums=4)
    Topic.objects.create(cluster=prod, team=team, name="IDLE", queue_nums=4)
    rank(other, RankingKind.TOPIC_TRAFFIC_DAY, [("AUDIT", 10)])

    def names(query):
        response = client.get(reverse("topic-list"), query)
        assert response.status_code == 200
        return [(topic.name, getattr(topic, "traffic_rank", "-")) for topic in response.context["page"].object_list]

    assert names({}) == [("AUDIT", "-"), ("IDLE", "-"), ("LABELS", "-"), ("ORDERS", "-"), ("REFUNDS", "-")]
    # each topic by its rank in its own cluster's latest ranking; unranked ones last, by name
    assert names({"sort": "traffic_day"}) == [
        ("AUDIT", 1),
        ("LABELS", 1),
        ("ORDERS", 2),
        ("REFUNDS", 4),
        ("IDLE", None),
    ]
    assert names({"sort": "traffic_day", "cluster": prod.pk, "q": "s"}) == [
        ("LABELS", 1),
        ("ORDERS", 2),
        ("REFUNDS", 4),
    ]
    assert "Traffic rank" in client.get(reverse("topic-list"), {"sort": "traffic_day"}).content.decode()
    assert names({"sort": "nonsense"})[0] == ("AUDIT", "-")  # a page ignores an invalid value


def test_the_api_sorts_topics_by_traffic_too_and_still_orders_by_its_fields(ranked):
    api = APIClient()

    by_traffic = api.get(reverse("api:topic-list"), {"sort": "traffic_day"})
    by_queues = api.get(reverse("api:topic-list"), {"ordering": "-name"})

    assert [topic["name"] for topic in by_traffic.data["results"]] == ["LABELS", "ORDERS", "REFUNDS"]
    assert [topic["name"] for topic in by_queues.data["results"]] == ["REFUNDS", "ORDERS", "LABELS"]
    assert api.get(reverse("api:topic-list"), {"sort": "nonsense"}).status_code == 400


def test_the_seven_day_sort_uses_the_seven_day_ranking(client, prod, team, ranked):
    rank(prod, RankingKind.TOPIC_TRAFFIC_7D, [("REFUNDS", 90000), ("ORDERS", 80000)], days=7)

    response = client.get(reverse("topic-list"), {"sort": "traffic_7d"})

    assert [topic.name for topic in response.context["page"].object_list] == ["REFUNDS", "ORDERS", "LABELS"]


# --- the rankings API -------------------------------------------------------------------------------------------


def test_the_api_returns_the_ranking_the_page_shows(member, team, ranked):
    api = APIClient()
    api.force_login(member)

    whole = api.get(reverse("api:ranking-list"), {"cluster": ranked.pk})
    teams = api.get(reverse("api:ranking-list"), {"cluster": ranked.pk, "team": team.pk})

    assert whole.status_code == 200
    assert [(row["position"], row["subject"], row["value"]) for row in whole.data["results"]] == [
        (1, "LABELS", 9000),
        (2, "ORDERS", 5000),
        (3, "GHOST", 700),
        (4, "REFUNDS", 60),
    ]
    first = whole.data["results"][0]
    assert first["entry"] == Topic.objects.get(name="LABELS").pk
    assert whole.data["results"][2]["entry"] is None
    assert (first["window_start"], first["window_end"], first["computed_at"]) == (
        YESTERDAY,
        TODAY,
        TODAY + dt.timedelta(minutes=7),
    )
    assert [(row["position"], row["rank"], row["subject"]) for row in teams.data["results"]] == [
        (1, 2, "ORDERS"),
        (2, 4, "REFUNDS"),
    ]


def test_the_api_answers_bad_parameters_with_field_errors(member, ranked):
    api = APIClient()
    api.force_login(member)

    assert set(api.get(reverse("api:ranking-list")).data) == {"cluster"}
    assert set(api.get(reverse("api:ranking-list"), {"cluster": ranked.pk, "kind": "best"}).data) == {"kind"}
    stale = api.get(reverse("api:ranking-list"), {"cluster": ranked.pk, "window": "2020-01-01T00:00:00Z"})
    assert stale.status_code == 400 and set(stale.data) == {"window"}
    earlier = api.get(reverse("api:ranking-list"), {"cluster": ranked.pk, "window": "2026-11-21T00:00:00Z"})
    assert [row["subject"] for row in earlier.data["results"]] == ["ORDERS", "LABELS"]
    rank(ranked, RankingKind.TOPIC_TRAFFIC_DAY, [("LABELS", 1)], end=TODAY - 30 * DAY)  # not among the days offered
    old = api.get(reverse("api:ranking-list"), {"cluster": ranked.pk, "window": "2026-10-23T00:00:00Z"})
    assert [(row["subject"], row["window_start"]) for row in old.data["results"]] == [("LABELS", TODAY - 31 * DAY)]


# --- the job runs (admins) --------------------------------------------------------------------------------------


def run(job, start, state, *, started, error="") -> JobRun:
    return JobRun.objects.create(
        job=job,
        window_start=start,
        window_end=start + dt.timedelta(hours=1),
        state=state,
        error=error,
        started_at=started,
        finished_at=None if state == JobState.RUNNING else started + dt.timedelta(minutes=2),
        lease_expires_at=started + dt.timedelta(minutes=15),
    )


def test_the_job_runs_page_lists_failures_with_their_errors_and_whether_they_were_run_again(client, portal_admin):
    now = timezone.now().replace(microsecond=0)
    hour = now.replace(minute=0, second=0) - dt.timedelta(hours=3)
    run("hourly", hour, JobState.FAILED, started=now - dt.timedelta(hours=2), error="Py4JJavaError: out of memory")
    run("hourly", hour, JobState.SUCCEEDED, started=now - dt.timedelta(hours=1))
    run("daily", hour, JobState.FAILED, started=now - dt.timedelta(minutes=30), error="RollupsMissing: run daily")
    run("hourly", hour + dt.timedelta(hours=1), JobState.RUNNING, started=now - dt.timedelta(hours=1))  # lease gone
    run("hourly", hour - dt.timedelta(days=30), JobState.FAILED, started=now - dt.timedelta(days=30), error="old")
    client.force_login(portal_admin)

    response = client.get(reverse("job-run-list"))

    failures = [(f.job, f.error, f.recovered) for f in response.context["failures"]]
    assert failures == [
        ("daily", "RollupsMissing: run daily", False),
        ("hourly", "Py4JJavaError: out of memory", True),
    ]
    page = response.content.decode()
    assert "Py4JJavaError: out of memory" in page and "lease expired" in page
    assert len(response.context["page"].object_list) == 5
    failed = client.get(reverse("job-run-list"), {"state": "failed", "job": "hourly"})
    assert [r.error for r in failed.context["page"].object_list] == ["Py4JJavaError: out of memory", "old"]


# --- who may open what ------------------------------------------------------------------------------------------

ACTORS = ("anonymous", "outsider", "member", "team_admin", "portal_admin")
LOGIN = "302 to login"

PAGES = {
    # (GET, POST) per actor; monitoring data needs a login, the job runs are the admins'
    "rankings": ((LOGIN, 200, 200, 200, 200), (LOGIN, 405, 405, 405, 405)),
    "job-run-list": ((LOGIN, 403, 403, 403, 200), (LOGIN, 405, 405, 405, 405)),
}
API = {
    ("api:ranking-list", "GET"): (401, 200, 200, 200, 200),
    ("api:ranking-list", "POST"): (401, 405, 405, 405, 405),
}


@pytest.fixture
def actors(outsider, member, team_admin, portal_admin, ranked):
    return {"outsider": outsider, "member": member, "team_admin": team_admin, "portal_admin": portal_admin}


def outcome(response):
    if response.status_code == 302 and response.url.startswith(reverse("login")):
        return LOGIN
    return response.status_code


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_actor_gets_the_page_the_matrix_says(client, actors, name, method):
    seen = {}
    for actor in ACTORS:
        with transaction.atomic():
            client.logout()
            if actor != "anonymous":
                client.force_login(actors[actor])
            response = client.get(reverse(name)) if method == "GET" else client.post(reverse(name))
            seen[actor] = outcome(response)
            transaction.set_rollback(True)
    expected = PAGES[name][0 if method == "GET" else 1]
    assert seen == dict(zip(ACTORS, expected, strict=True))


@pytest.mark.parametrize(("name", "method"), sorted(API))
def test_each_actor_gets_the_endpoint_answer_the_matrix_says(actors, team, name, method):
    url = reverse(name)
    query = {"cluster": Cluster.objects.get(name="prod").pk, "team": team.pk}
    seen = {}
    for actor in ACTORS:
        api = APIClient()
        if actor != "anonymous":
            api.force_login(actors[actor])
        response = api.get(url, query) if method == "GET" else api.post(url, query, format="json")
        seen[actor] = response.status_code
        if response.status_code == 401:
            assert response["WWW-Authenticate"] == "Token"
    assert seen == dict(zip(ACTORS, API[(name, method)], strict=True))

"""Server time of the topic list (search + pagination) and of a topic page with 10,000 topics and 10,000 consumer
groups registered, on the default database engine (SQLite unless DATABASE_URL says otherwise).

The data goes into a throwaway test database; requests go through the full Django stack in-process (middleware,
views, templates), which is the server's share of a page view. Prints page_topic_list_p95_ms and
page_topic_detail_p95_ms (aim: below 150 ms)."""

import random
import statistics
import tempfile
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import setup_test_environment, teardown_test_environment
from django.urls import reverse

TOPICS = 10_000
GROUPS = 10_000
TEAMS = 50
REQUESTS = 200


def _seed() -> tuple[list[int], object]:
    from portal.models import Cluster, ConsumerGroup, Membership, NameServer, Subscription, Team, Topic

    cluster = Cluster.objects.create(name="bench")
    NameServer.objects.create(cluster=cluster, address="127.0.0.1:9876")
    teams = Team.objects.bulk_create([Team(name=f"team-{i:02d}") for i in range(TEAMS)])
    topics = Topic.objects.bulk_create(
        [
            Topic(
                cluster=cluster,
                team=teams[i % TEAMS],
                name=f"TOPIC_{i:05d}_{random.choice(['ORDER', 'PAY', 'USER', 'SHIP'])}",
                queue_nums=8,
                description=f"Events of service {i}",
            )
            for i in range(TOPICS)
        ],
        batch_size=2000,
    )
    groups = ConsumerGroup.objects.bulk_create(
        [ConsumerGroup(cluster=cluster, team=teams[i % TEAMS], name=f"GID_{i:05d}") for i in range(GROUPS)],
        batch_size=2000,
    )
    Subscription.objects.bulk_create(
        [Subscription(consumer_group=group, topic=topics[i % TOPICS]) for i, group in enumerate(groups)],
        batch_size=2000,
    )
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(team=teams[0], user=user)
    return [topic.pk for topic in topics], user


def _p95_ms(client: Client, urls: list[str]) -> float:
    costs = []
    for url in urls:
        started = time.perf_counter()
        response = client.get(url)
        costs.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{url} answered {response.status_code}")
    return statistics.quantiles(costs, n=20)[-1]


def run() -> dict[str, float]:
    setup_test_environment()
    with tempfile.TemporaryDirectory() as tmp:
        if connection.vendor == "sqlite":
            connection.settings_dict.setdefault("TEST", {})["NAME"] = str(Path(tmp) / "bench.sqlite3")
        old_name = connection.creation.create_test_db(verbosity=0)
        try:
            topic_ids, user = _seed()
            client = Client()
            client.force_login(user)
            rng = random.Random(7)
            list_url = reverse("topic-list")
            list_urls = [
                f"{list_url}?q={rng.choice(['ORDER', 'PAY', 'TOPIC_0', 'service 12', ''])}&page={rng.randint(1, 20)}"
                for _ in range(REQUESTS)
            ]
            detail_urls = [reverse("topic-detail", args=[rng.choice(topic_ids)]) for _ in range(REQUESTS)]
            _p95_ms(client, list_urls[:10] + detail_urls[:10])  # warm-up: templates, query plans
            return {
                "page_topic_list_p95_ms": _p95_ms(client, list_urls),
                "page_topic_detail_p95_ms": _p95_ms(client, detail_urls),
            }
        finally:
            connection.creation.destroy_test_db(old_name, verbosity=0)
            teardown_test_environment()

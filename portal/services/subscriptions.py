"""A consumer group's subscriptions from both sides, and where they differ.

The registry holds what was applied for (or imported); the clients report what they really subscribe
(GET_CONSUMER_RUNNING_INFO, stored by the collector each minute as ``stats.models.ClientMinute``). They drift
apart: a group created with mqadmin has nothing registered, an application says ``TagA`` while the code says
``TagA || TagB``, a client is deployed with another subscription than its siblings. The last is RocketMQ's
"inconsistent subscription": the broker keeps one subscription per group, and rebalancing hands every subscribed
topic's queues to all clients, so messages go to clients that filter them away and some queues are never consumed.

Expressions are compared as RocketMQ reads them: a TAG expression is its set of tags (``TagB||TagA`` is
``TagA || TagB``; blank is ``*``), a SQL92 one its text. Retry and dead-letter topics (``%RETRY%group``) are
subscribed by the clients themselves, so they are listed apart and never judged.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models import RegistryState, Subscription, Topic
from portal.models.validation import validate_tag_expression
from stats import keys
from stats.models import ClientMinute
from stats.queries.clients import latest_clients

TAG = "TAG"


class Difference(models.TextChoices):
    UNREGISTERED = "unregistered", _("not registered")
    EXPRESSION_DIFFERS = "expression_differs", _("expression differs from the registry")
    NOT_SUBSCRIBED = "not_subscribed", _("no client subscribes it")
    INCONSISTENT = "inconsistent", _("inconsistent subscription")


@dataclass(frozen=True)
class Reported:
    """One expression the clients report for a topic, and which clients report it. ``expression_type`` is
    ``TAG`` or ``SQL92`` (empty in minutes collected before the type was kept)."""

    expression: str
    expression_type: str
    clients: tuple[str, ...]


@dataclass(frozen=True)
class TopicSubscription:
    """One topic, subscribed in the registry, by clients, or both. ``topic_id`` is the registry's topic of that
    name on the cluster (None: not in the registry); ``not_subscribing`` the answering clients that leave out a
    topic others subscribe."""

    topic: str
    topic_id: int | None
    registered: str | None
    reported: tuple[Reported, ...] = ()
    not_subscribing: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()


@dataclass(frozen=True)
class SubscriptionCheck:
    """A group's subscriptions in the latest collected minute (``minute`` None: no recent collection, only the
    registry is known). ``clients`` are the online clients, ``unanswered`` those that did not report (their
    subscriptions are unknown); ``group_topics`` the retry and dead-letter topics the clients subscribe."""

    minute: dt.datetime | None
    topics: list[TopicSubscription]
    clients: tuple[str, ...] = ()
    unanswered: tuple[str, ...] = ()
    group_topics: tuple[str, ...] = ()

    @property
    def answered(self) -> bool:
        """Whether at least one online client reported its subscription."""
        return len(self.unanswered) < len(self.clients)

    @property
    def inconsistent(self) -> bool:
        return any(Difference.INCONSISTENT in topic.differences for topic in self.topics)

    @property
    def unregistered(self) -> list[TopicSubscription]:
        return [topic for topic in self.topics if Difference.UNREGISTERED in topic.differences]

    @property
    def differs(self) -> bool:
        return any(topic.differences for topic in self.topics)


def normalized(expression: str, expression_type: str = TAG) -> tuple:
    """What an expression selects, as the broker parses it (SubscriptionData's tag set): equal for equivalent
    expressions. An unknown type is taken as TAG, every client's default."""
    expression = (expression or "").strip()
    if (expression_type or TAG) != TAG:
        return (expression_type, expression)
    if expression in ("", "*"):
        return (TAG, "*")
    return (TAG, frozenset(tag.strip() for tag in expression.split("||") if tag.strip()))


def compare(
    registered: dict[str, tuple[int, str]],
    clients: Iterable[ClientMinute],
    minute: dt.datetime | None,
    topic_ids: dict[str, int] | None = None,
) -> SubscriptionCheck:
    """Judge the registry's subscriptions (topic name -> (topic id, tag expression)) against the clients' reports
    of ``minute``. ``topic_ids`` names the registry's topics of the cluster, to link topics only clients
    subscribe."""
    topic_ids = topic_ids or {}
    clients = list(clients) if minute is not None else []
    answering = [client for client in clients if not client.error]
    by_topic: dict[str, dict[tuple, list[ClientMinute]]] = defaultdict(lambda: defaultdict(list))
    group_topics: set[str] = set()
    for client in answering:
        for topic, expression in client.subscription.items():
            if keys.is_group_topic(topic):
                group_topics.add(topic)
                continue
            expression_type = client.expression_types.get(topic, "")
            by_topic[topic][normalized(expression, expression_type)].append(client)
    topics = []
    for topic in sorted(set(registered) | set(by_topic)):
        reported = tuple(
            Reported(
                members[0].subscription[topic],
                members[0].expression_types.get(topic, ""),
                tuple(sorted(member.client_id for member in members)),
            )
            for members in sorted(by_topic.get(topic, {}).values(), key=lambda m: (-len(m), m[0].client_id))
        )
        subscribing = {client for report in reported for client in report.clients}
        not_subscribing = tuple(sorted(c.client_id for c in answering if c.client_id not in subscribing))
        topic_id, expression = registered.get(topic, (topic_ids.get(topic), None))
        differences = []
        if expression is None:
            differences.append(Difference.UNREGISTERED)
        elif reported and any(normalized(expression) != normalized(r.expression, r.expression_type) for r in reported):
            differences.append(Difference.EXPRESSION_DIFFERS)
        elif not reported and answering:
            differences.append(Difference.NOT_SUBSCRIBED)
        if len(reported) > 1 or (reported and not_subscribing):
            differences.append(Difference.INCONSISTENT)
        topics.append(
            TopicSubscription(
                topic=topic,
                topic_id=topic_id,
                registered=expression,
                reported=reported,
                not_subscribing=not_subscribing if reported else (),
                differences=tuple(differences),
            )
        )
    return SubscriptionCheck(
        minute=minute,
        topics=topics,
        clients=tuple(sorted(client.client_id for client in clients)),
        unanswered=tuple(sorted(client.client_id for client in clients if client.error)),
        group_topics=tuple(sorted(group_topics)),
    )


def group_subscriptions(group, minute: dt.datetime | None, clients: Iterable[ClientMinute]) -> SubscriptionCheck:
    """The group's registered subscriptions judged against its clients of ``minute`` (as ``group_now`` reads
    them), with the registry's topics that only clients subscribe linked."""
    registered = {
        sub.topic.name: (sub.topic_id, sub.tag_expression)
        for sub in Subscription.objects.filter(consumer_group=group).select_related("topic")
    }
    clients = list(clients)
    reported = {topic for client in clients for topic in client.subscription if topic not in registered}
    topic_ids = dict(
        Topic.objects.filter(cluster_id=group.cluster_id, name__in=reported).values_list("name", "pk")
        if reported
        else ()
    )
    return compare(registered, clients, minute, topic_ids)


def current_group_subscriptions(group, now: dt.datetime) -> SubscriptionCheck:
    """:func:`group_subscriptions` for the cluster's latest collected minute."""
    minute, clients = latest_clients(group.cluster_id, [group.name], now)
    return group_subscriptions(group, minute, clients.get(group.name, []))


def importable(check: SubscriptionCheck, active_topics: dict[str, int]) -> dict[int, str]:
    """Topic id -> tag expression of the subscriptions a group's clients all report, when every online client
    answered and they subscribe alike (otherwise there is no one subscription to import): TAG expressions the
    registry accepts, to topics active in the registry (``active_topics``: name -> id). SQL92 subscriptions and
    topics the registry lacks stay client-only, shown as unregistered."""
    if check.minute is None or not check.clients or check.unanswered or check.inconsistent:
        return {}
    found = {}
    for topic in check.topics:
        if not topic.reported or topic.topic not in active_topics:
            continue
        (report,) = topic.reported
        if (report.expression_type or TAG) != TAG:
            continue
        try:
            validate_tag_expression(report.expression)
        except ValidationError:
            continue
        found[active_topics[topic.topic]] = report.expression.strip()
    return found


def active_topics(cluster) -> dict[str, int]:
    """Name -> id of the cluster's topics that are active in the registry."""
    return dict(Topic.objects.filter(cluster=cluster, state=RegistryState.ACTIVE).values_list("name", "pk"))

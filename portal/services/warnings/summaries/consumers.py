"""What consumer-group warnings say: lag (how far behind, why, and which queues), blocked clients, offsets moved by
the broker, mismatched subscriptions, messages sent back for retry and dead letters."""

from __future__ import annotations

from collections import defaultdict

from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from portal.services.warnings.summaries.words import (
    CLIENT,
    CLIENT_ONLINE,
    LISTED,
    MESSAGE,
    QUEUE,
    TIME,
    clock,
    count,
    counted,
    duration,
    full_stop,
    join_sentences,
    listing,
    rate,
    where,
)
from stats import keys


def _lag_state(details: dict) -> str:
    """What a lagging group is doing (its rule's ``state``), in one sentence."""
    state, clients = details["state"], details["clients"]
    if state == "stopped":
        return _("Stopped: no consumer client is online, so nothing is consumed until one starts.")
    if clients is None:
        online = _("clients could not be counted")
    else:
        online = counted(CLIENT_ONLINE, clients)
    elapsed = details["trend_seconds"] or 0
    consumed, produced = details["consumed_per_second"], details["produced_per_second"]
    change = details["lag_change_per_minute"]
    if state == "stalled":
        if elapsed:
            return _("Stalled: %(online)s, but the committed offsets have not moved in %(duration)s.") % {
                "online": online,
                "duration": duration(elapsed),
            }
        return _("Stalled: %(online)s, but nothing was pulled in the last minute.") % {"online": online}
    if state in ("catching_up", "falling_behind"):
        if state == "catching_up":
            text = _("Slow but catching up: consuming %(rate)s") % {"rate": rate(consumed or 0)}
        else:
            text = _("Falling behind: consuming %(rate)s") % {"rate": rate(consumed or 0)}
        if produced is not None:
            text += _(" while %(rate)s arrive") % {"rate": rate(produced)}
        if state == "catching_up":
            shrink = -(change or 0)
            text += _("; the backlog shrinks by %(messages)s a minute") % {"messages": count(round(shrink))}
            if shrink > 0:
                text += _(" and clears in about %(duration)s") % {"duration": duration(details["lag"] / shrink * 60)}
        elif change is not None:
            text += _("; the backlog grows by %(messages)s a minute") % {"messages": count(round(change))}
        return text + full_stop()
    pulled = details["pulled_last_minute"]
    if pulled is not None:
        online += _(", %(rate)s pulled in the last minute") % {"rate": rate(pulled / 60)}
    return _("Consuming (%(online)s); no trend yet, it only now passed the threshold.") % {"online": online}


def consumer_lag(group: str, details: dict) -> str:
    topics = sorted(details["topics"].items(), key=lambda item: -item[1]["lag"])
    values = {"group": group, "lag": count(details["lag"])}
    if len(topics) == 1:
        text = _("%(group)s is %(lag)s messages behind on %(topic)s") % {**values, "topic": topics[0][0]}
    else:
        named = listing([f"{topic}: {count(figures['lag'])}" for topic, figures in topics])
        text = _("%(group)s is %(lag)s messages behind on %(topics)s topics (%(listing)s)") % {
            **values,
            "topics": len(topics),
            "listing": named,
        }
    age = details["lag_seconds"]
    if age is not None:
        if details["age_measured"]:
            text += _("; the oldest waiting message has waited %(duration)s") % {"duration": duration(age)}
        else:
            text += _("; over %(messages)s messages for at least %(duration)s") % {
                "messages": count(details["thresholds"]["messages"]),
                "duration": duration(age),
            }
    parts = [text + full_stop()]
    if details["broadcasting"]:
        parts.append(
            _("Broadcasting group: each client consumes every message, and this is its furthest-behind client.")
        )
    carried = [topic for topic, figures in topics if figures["measured_at"] != details["minute"]]
    if carried:
        parts.append(
            _("Not read this minute for %(topics)s (a broker did not answer): the last reading stands.")
            % {"topics": listing(carried)}
        )
    parts.append(_lag_state(details))
    queues = details["queues"]
    if queues:
        named = [f"{q['topic']} {where(q['broker_name'], q['queue_id'])} ({count(q['lag'])})" for q in queues]
        total = details.get("lagging_queues", len(queues))
        parts.append(_("Most behind: %(queues)s.") % {"queues": listing(named, total=total)})
    return join_sentences(*parts)


def client_blocked(group: str, details: dict) -> str:
    queues = details["queues"]
    named = []
    for q in queues[:LISTED]:
        values = {
            "queue": f"{q['topic']} {where(q['broker_name'], q['queue_id'])}",
            "client": q["client_id"],
            "cached": count(q["cached_messages"]),
            "lag": count(q["lag"] or 0),
        }
        if q["lag"]:
            named.append(_("%(queue)s on %(client)s (%(cached)s cached, %(lag)s behind)") % values)
        else:
            named.append(_("%(queue)s on %(client)s (%(cached)s cached)") % values)
    total = details["blocked_queues"]
    first = _(
        "%(queues)s of %(group)s not consumed for up to %(duration)s while messages wait, on %(clients)s: %(listing)s."
    ) % {
        "queues": counted(QUEUE, total),
        "group": group,
        "duration": duration(queues[0]["blocked_seconds"]),
        "clients": counted(CLIENT, len(details["clients"])),
        "listing": listing(named, total=total),
    }
    return join_sentences(
        first,
        _(
            "A consume callback is probably stuck (a hung call, a lock, an endless loop); the client still holds the "
            "queues, so no other client takes them over."
        ),
    )


def offset_moved(group: str, details: dict) -> str:
    named = []
    for q in details["queues"][:LISTED]:
        requested, new = q["offset_request"], q["offset_new"]
        if new > requested:
            effect = _("%(messages)s messages skipped") % {"messages": count(new - requested)}
        else:
            effect = _("%(messages)s messages to be consumed again") % {"messages": count(requested - new)}
        named.append(
            _("%(queue)s: asked for %(requested)s, moved to %(new)s, %(effect)s")
            % {
                "queue": f"{q['topic']} {where(q['broker_name'], q['queue_id'])}",
                "requested": count(requested),
                "new": count(new),
                "effect": effect,
            }
        )
    first = _(
        "%(group)s asked for offsets outside the queues %(times)s in the last %(window)s (OFFSET_MOVED_EVENT), the "
        "latest at %(time)s; the broker moved it: %(listing)s."
    ) % {
        "group": group,
        "times": counted(TIME, details["events"]),
        "window": duration(details["window_seconds"]),
        "time": clock(details["last_event_at"], seconds=True),
        "listing": listing(named, total=details.get("moved_queues", len(details["queues"]))),
    }
    return join_sentences(
        first,
        _(
            "Messages may have been skipped or will be consumed twice; check the committed offsets (a reset, a "
            "restored broker, expired messages)."
        ),
    )


def subscription_mismatch(group: str, details: dict) -> str:
    alike: dict[tuple, list[str]] = defaultdict(list)
    for client in sorted(details["clients"], key=lambda c: c["client_id"]):
        shown = tuple(sorted((t, e) for t, e in client["subscription"].items() if not keys.is_group_topic(t)))
        alike[shown].append(client["client_id"])
    parts = []
    for subscription, ids in sorted(alike.items(), key=lambda item: (-len(item[1]), item[0])):
        what = pgettext("list separator", ", ").join(f"{topic} ({expression})" for topic, expression in subscription)
        parts.append(
            _("%(clients)s (%(ids)s) to %(topics)s")
            % {
                "clients": counted(CLIENT, len(ids)),
                "ids": listing(ids, 2),
                "topics": what or _("nothing"),
            }
        )
    sentences = [
        _("The clients of %(group)s subscribe differently: %(subscriptions)s.")
        % {"group": group, "subscriptions": pgettext("between clauses", "; ").join(parts)},
        _(
            "Rebalancing spreads every subscribed topic's queues over all clients, so messages go to clients that do "
            "not subscribe to them (and are filtered away) and some queues are never consumed. Give every client of a "
            "group the same subscription."
        ),
    ]
    if details.get("verdict_carried"):
        sentences.append(
            _("(Clients not all reachable this minute; verdict of %(time)s.)") % {"time": clock(details["minute"])}
        )
    return join_sentences(*sentences)


def consume_failures(group: str, details: dict) -> str:
    topics = sorted(details["topics"].items(), key=lambda item: -item[1])
    covered = details["minutes_covered"]
    if covered >= 60:
        span = _("the last hour")
    else:
        span = _("the last hour (%(minutes)s of its minutes collected)") % {"minutes": covered}
    first = _(
        "%(group)s sent %(messages)s messages back for retry in %(span)s (%(topics)s), %(latest)s in the latest "
        "minute: its consumer returned RECONSUME_LATER or threw for them."
    ) % {
        "group": group,
        "messages": count(details["sent_back"]),
        "span": span,
        "topics": listing([f"{topic}: {count(n)}" for topic, n in topics]),
        "latest": count(details["sent_back_latest_minute"]),
    }
    second = _("They come back through %(retry)s and, retried too often, end in %(dlq)s.") % {
        "retry": keys.retry_topic(group),
        "dlq": keys.dlq_topic(group),
    }
    return join_sentences(first, second)


def dead_letters(group: str, details: dict) -> str:
    values = {
        "messages": counted(MESSAGE, details["dead_letters"]),
        "group": group,
        "dlq": keys.dlq_topic(group),
        "time": clock(details["last_minute"]),
    }
    if details["dead_letters_total"] is not None:
        return _(
            "%(messages)s of %(group)s reached its dead-letter queue %(dlq)s in the last hour (the latest at %(time)s; "
            "%(total)s there in all): they failed every retry and will not be consumed again unless someone resends "
            "them."
        ) % {**values, "total": count(details["dead_letters_total"])}
    return (
        _(
            "%(messages)s of %(group)s reached its dead-letter queue %(dlq)s in the last hour (the latest at "
            "%(time)s): they failed every retry and will not be consumed again unless someone resends them."
        )
        % values
    )


def client_consume_failures(group: str, details: dict) -> str:
    failures = sorted(details["failures"].items(), key=lambda item: -item[1])
    topics = sorted(details["topics"].items(), key=lambda item: -item[1])
    failed, consumed, clients = details["failed_messages"], details["consumed"], details["clients"]
    text = _(
        "The listeners of %(group)s failed %(failed)s of %(consumed)s in the last %(window)s: %(failures)s, on "
        "%(topics)s, in %(clients)s (%(ids)s)."
    ) % {
        "group": group,
        "failed": counted(MESSAGE, failed),
        "consumed": count(consumed),
        "window": duration(int(details["window_minutes"]) * 60),
        "failures": listing([f"{name} ×{count(n)}" for name, n in failures]),
        "topics": listing([f"{topic}: {count(n)}" for topic, n in topics]),
        "clients": counted(CLIENT, len(clients)),
        "ids": listing(clients),
    }
    return join_sentences(
        text,
        _("Their SDK consumers asked for these messages again; retried too often, they end in %(dlq)s.")
        % {"dlq": keys.dlq_topic(group)},
    )

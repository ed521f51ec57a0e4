"""What a warning says, in words: its summary rendered from its kind, its subject and the figures the rule kept
(``details``), in the active language and time zone.

The rules (``rules/``) store figures, never sentences, so one warning reads in English on one user's page,
in Chinese on another's and in each recipient's language in their notifications. Every sentence is a translated
template with named placeholders; numbers, durations, rates and lists are worded per language by the helpers below.

A warning whose figures cannot be read as its kind's (rows stored before the rules kept every figure, or a condition
made by hand) shows the text stored with it: :func:`render` falls back to ``stored``. The English rendering is what is
stored (:func:`english`), for the list's text search and for readers of the table.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable

from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext_lazy, pgettext

from portal.models.warnings import WarningKind
from stats import keys

logger = logging.getLogger(__name__)

MASTER_ID = 0
# Items a list names before "and N more".
LISTED = 3
# What breaks a rendering when a warning's figures are not its kind's: the stored text is shown instead.
_UNREADABLE = (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError)


# --- words per language ---------------------------------------------------------------------------------------------


def count(value: float) -> str:
    """12345 -> "12,345"; 2.5 -> "2.5" (grouped by thousands in both languages)."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def counted(forms, value: float) -> str:
    """ "N things", ``forms`` one of the ngettext_lazy pairs below (a fraction is plural in English)."""
    return forms % {"n": int(value) if float(value).is_integer() else 2, "count": count(value)}


# "N things", each in the forms a language counts them in.
CLIENT_ONLINE = ngettext_lazy("%(count)s client online", "%(count)s clients online", "n")
QUEUE = ngettext_lazy("%(count)s queue", "%(count)s queues", "n")
CLIENT = ngettext_lazy("%(count)s client", "%(count)s clients", "n")
TIME = ngettext_lazy("%(count)s time", "%(count)s times", "n")
MESSAGE = ngettext_lazy("%(count)s message", "%(count)s messages", "n")
SEND = ngettext_lazy("%(count)s send", "%(count)s sends", "n")
MINUTE = ngettext_lazy("%(count)s minute", "%(count)s minutes", "n")
PROBE_ROUND = ngettext_lazy("%(count)s probe round", "%(count)s probe rounds", "n")
QUICK_ATTEMPT = ngettext_lazy("%(count)s quick attempt", "%(count)s quick attempts", "n")


def duration(seconds: float) -> str:
    """A span for people: "45 s", "6 min 40 s", "2 h 5 min", "3 d 4 h" (in Chinese "6 分 40 秒")."""
    seconds = round(seconds)
    if seconds < 60:
        return _("%(seconds)s s") % {"seconds": seconds}
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        if secs:
            return _("%(minutes)s min %(seconds)s s") % {"minutes": minutes, "seconds": secs}
        return _("%(minutes)s min") % {"minutes": minutes}
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        if minutes:
            return _("%(hours)s h %(minutes)s min") % {"hours": hours, "minutes": minutes}
        return _("%(hours)s h") % {"hours": hours}
    days, hours = divmod(hours, 24)
    if hours:
        return _("%(days)s d %(hours)s h") % {"days": days, "hours": hours}
    return _("%(days)s d") % {"days": days}


def rate(per_second: float) -> str:
    """Messages per second: "12.5/s" (below 10 with one decimal)."""
    value = f"{per_second:,.1f}" if per_second < 10 else f"{per_second:,.0f}"
    return _("%(value)s/s") % {"value": value}


def size(value: float) -> str:
    """Bytes for people: "512 B", "3.2 MiB" (unit symbols are the same in every language)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def listing(items: list[str], limit: int = LISTED, total: int | None = None) -> str:
    """ "a, b and c"; beyond ``limit``: "a, b, c and 4 more" (``total``: how many there are, when ``items`` holds
    only the first of them)."""
    total = len(items) if total is None else max(total, len(items))
    separator = pgettext("list separator", ", ")
    if total > limit:
        return _("%(items)s and %(more)s more") % {"items": separator.join(items[:limit]), "more": total - limit}
    if len(items) <= 1:
        return "".join(items)
    return _("%(items)s and %(last)s") % {"items": separator.join(items[:-1]), "last": items[-1]}


def clock(iso: str, seconds: bool = False) -> str:
    """A stored instant as a time of day in the active time zone, with the zone: "09:58 UTC"."""
    moment = timezone.localtime(dt.datetime.fromisoformat(iso))
    return moment.strftime("%H:%M:%S %Z" if seconds else "%H:%M %Z")


def _sentences(*parts: str) -> str:
    """Sentences one after the other (Chinese sets none of the space English puts between them)."""
    separator = "" if (translation.get_language() or "").startswith("zh") else " "
    return separator.join(part for part in parts if part)


def _full_stop() -> str:
    return pgettext("end of a sentence", ".")


def _where(broker_name: str, queue_id: int) -> str:
    return f"{broker_name}/{queue_id}"


# --- consumer groups ----------------------------------------------------------------------------------------------


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
        return text + _full_stop()
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
    parts = [text + _full_stop()]
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
        named = [f"{q['topic']} {_where(q['broker_name'], q['queue_id'])} ({count(q['lag'])})" for q in queues]
        total = details.get("lagging_queues", len(queues))
        parts.append(_("Most behind: %(queues)s.") % {"queues": listing(named, total=total)})
    return _sentences(*parts)


def client_blocked(group: str, details: dict) -> str:
    queues = details["queues"]
    named = []
    for q in queues[:LISTED]:
        values = {
            "queue": f"{q['topic']} {_where(q['broker_name'], q['queue_id'])}",
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
    return _sentences(
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
                "queue": f"{q['topic']} {_where(q['broker_name'], q['queue_id'])}",
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
    return _sentences(
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
    return _sentences(*sentences)


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
    return _sentences(first, second)


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


# --- producer groups and topics -------------------------------------------------------------------------------------


def produce_errors(group: str, details: dict) -> str:
    exceptions = sorted(details["exceptions"].items(), key=lambda item: -item[1])
    brokers = details["brokers"]
    named = [f"{name} ×{count(n)} ({', '.join(sorted(brokers.get(name, [])))})" for name, n in exceptions]
    failed, sent, clients = details["failed"], details["sent"], details["clients"]
    values = {
        "sends": counted(SEND, failed),
        "group": group,
        "window": duration(int(details["window_minutes"]) * 60),
    }
    if sent:
        text = _("%(sends)s of %(group)s failed in the last %(window)s (%(share)s of %(sent)s)") % {
            **values,
            "share": f"{failed / sent:.1%}",
            "sent": count(sent),
        }
    else:
        text = _("%(sends)s of %(group)s failed in the last %(window)s") % values
    text += _(": %(exceptions)s, on %(topics)s, from %(clients)s (%(ids)s).") % {
        "exceptions": listing(named),
        "topics": listing(details["topics"]),
        "clients": counted(CLIENT, len(clients)),
        "ids": listing(clients),
    }
    return _sentences(
        text, _("The application saw these exceptions; unless it retried them, those messages were not stored.")
    )


def _recent(details: dict) -> dict:
    return {
        "messages": count(round(details["recent_per_minute"])),
        "minutes": counted(MINUTE, details["recent_minutes"]),
        "baseline": count(round(details["baseline_per_minute"])),
        "window": duration(int(details["thresholds"]["baseline_minutes"]) * 60),
    }


def traffic_surge(topic: str, details: dict) -> str:
    values = {"topic": topic, **_recent(details)}
    if details["baseline_per_minute"]:
        first = _(
            "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, %(ratio)s times its "
            "baseline of %(baseline)s a minute over the %(window)s before."
        ) % {**values, "ratio": f"{details['recent_per_minute'] / details['baseline_per_minute']:.1f}"}
    else:
        first = (
            _(
                "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, up from nothing in "
                "the %(window)s before."
            )
            % values
        )
    return _sentences(
        first, _("Check its producers (a retry storm, a backfill, a loop) and whether its consumers keep up.")
    )


def traffic_drop(topic: str, details: dict) -> str:
    fell = 100 * (1 - details["recent_per_minute"] / details["baseline_per_minute"])
    first = _(
        "%(topic)s is receiving %(messages)s messages a minute over the last %(minutes)s, %(fell)s%% less than its "
        "baseline of %(baseline)s a minute over the %(window)s before."
    ) % {"topic": topic, "fell": f"{fell:.0f}", **_recent(details)}
    return _sentences(first, _("A producer may have stopped or be failing to send."))


# --- name servers and brokers ---------------------------------------------------------------------------------------


def _down_for(details: dict) -> str:
    """How long a run of failed probe rounds covers: from its first round to the end of the latest."""
    first = dt.datetime.fromisoformat(details["down_since"])
    latest = dt.datetime.fromisoformat(details["latest_probe"])
    return duration((latest - first).total_seconds() + 60)


def _probes_failed(details: dict) -> dict:
    return {
        "duration": _down_for(details),
        "rounds": counted(PROBE_ROUND, details["failed_rounds"]),
        "attempts": counted(QUICK_ATTEMPT, details["attempts"]),
        "error": details["error"] or _("no answer"),
    }


def nameserver_down(address: str, details: dict) -> str:
    first = _(
        "Name server %(address)s has not answered for %(duration)s: %(rounds)s of %(attempts)s each failed (%(error)s)."
    ) % {"address": address, **_probes_failed(details)}
    if details["all_down"]:
        second = _(
            "No name server of the cluster answers: clients cannot refresh topic routes, new clients cannot start, "
            "and brokers cannot register."
        )
    else:
        second = _("Clients fall back on %(addresses)s.") % {"addresses": listing(details["answering"])}
    return _sentences(first, second)


def broker_down(subject: str, details: dict) -> str:
    name = details["broker_name"]
    sentences = [
        _(
            "Broker %(broker)s (%(role)s, %(address)s) has not answered for %(duration)s: %(rounds)s of %(attempts)s "
            "each failed (%(error)s)."
        )
        % {"broker": subject, "role": details["role"], "address": details["address"], **_probes_failed(details)}
    ]
    if not details["listed"]:
        sentences.append(_("The name servers no longer list it."))
    if details["broker_id"] == MASTER_ID:
        sentences.append(
            _(
                "%(name)s takes no new messages (producers send to the other masters) and its messages can only be "
                "read from its slave, if it has one."
            )
            % {"name": name}
        )
    else:
        sentences.append(
            _("Consumers it served read from the master of %(name)s again; %(name)s has no copy while it is down.")
            % {"name": name}
        )
    return _sentences(*sentences)


def slave_lag(subject: str, details: dict) -> str:
    name = subject.rpartition("@")[0]
    behind, change = details["behind_bytes"], details["change_bytes_per_minute"]
    values = {
        "slave": subject,
        "address": details["address"],
        "behind": size(behind),
        "master": f"{name}@{MASTER_ID}",
        "master_address": details["master_address"],
        "threshold": size(details["threshold_bytes"]),
    }
    if change is None:
        trend = ""
    elif change > 0:
        trend = _(", and falls further behind by %(bytes)s a minute") % {"bytes": size(change)}
    elif change < 0:
        trend = _(", catching up by %(bytes)s a minute (about %(duration)s to go)") % {
            "bytes": size(-change),
            "duration": duration(behind / -change * 60),
        }
    else:
        trend = _(", neither catching up nor falling further behind")
    first = (
        _("Slave %(slave)s (%(address)s) is %(behind)s of commit log behind its master %(master)s (%(master_address)s)")
        % values
        + trend
        + _(" (threshold %(threshold)s).") % values
    )
    return _sentences(
        first,
        _(
            "Messages not yet copied are lost if the master's disk is, a SYNC_MASTER answers SLAVE_NOT_AVAILABLE "
            "meanwhile, and consumers sent to the slave read stale data."
        ),
    )


# --- servers --------------------------------------------------------------------------------------------------------


def _on_host(host: str, text: str) -> str:
    return _("%(host)s: %(text)s") % {"host": host, "text": text}


def server_cpu(host: str, details: dict) -> str:
    readings = details["cpu_percent"]
    text = _("CPU %(percent)s%% busy") % {"percent": f"{readings[0]:.0f}"}
    if details["cpu_iowait_percent"]:
        text += _(" (%(percent)s%% waiting for I/O)") % {"percent": f"{details['cpu_iowait_percent']:.0f}"}
    text += _(", over %(threshold)s%% in the last %(readings)s readings (%(duration)s)") % {
        "threshold": f"{details['threshold_percent']:g}",
        "readings": len(readings),
        "duration": duration(details["span_seconds"]),
    }
    if details["load1"] is not None:
        text += _("; load %(load)s") % {"load": f"{details['load1']:.2f}"}
    text += _full_stop()
    return _on_host(host, _sentences(text, _("Busy CPUs slow every send and pull the brokers on this host answer.")))


def server_memory(host: str, details: dict) -> str:
    text = _("memory %(percent)s%% used (%(used)s of %(total)s)") % {
        "percent": f"{details['used_percent']:.0f}",
        "used": size(details["mem_used"]),
        "total": size(details["mem_total"]),
    }
    if details["swap_used"]:
        text += _(", %(swap)s swapped out") % {"swap": size(details["swap_used"])}
    text += _full_stop()
    consequence = _(
        "The brokers' page cache (the recent messages consumers read) shrinks, and pulls go to disk or to the slave."
    )
    return _on_host(host, _sentences(text, consequence))


def server_disk(host: str, details: dict) -> str:
    mounts = sorted(details["mounts"].items(), key=lambda item: (-item[1]["used_percent"], item[0]))
    named = [
        _("%(mount)s %(percent)s%% used (%(free)s free)")
        % {"mount": mount, "percent": f"{figures['used_percent']:.0f}", "free": size(figures["available"])}
        for mount, figures in mounts
    ]
    consequence = _(
        "A broker deletes old commit-log files early past 75% (diskMaxUsedSpaceRatio) and refuses new messages past "
        "90% (diskSpaceWarningLevelRatio)."
    )
    return _on_host(host, _sentences(listing(named) + _full_stop(), consequence))


def server_load(host: str, details: dict) -> str:
    text = _("load average %(load1)s (5 min %(load5)s, 15 min %(load15)s), at or over %(threshold)s") % {
        "load1": f"{details['load1']:.2f}",
        "load5": f"{details['load5'] or 0:.2f}",
        "load15": f"{details['load15'] or 0:.2f}",
        "threshold": f"{details['threshold']:g}",
    }
    if details["cpu_percent"] is not None:
        text += _("; CPU %(percent)s%% busy") % {"percent": f"{details['cpu_percent']:.0f}"}
    text += _full_stop()
    return _on_host(host, _sentences(text, _("Processes wait for CPU or disk: broker requests queue up.")))


def server_tcp(host: str, details: dict) -> str:
    text = _("%(established)s established TCP connections (threshold %(threshold)s)") % {
        "established": count(details["established"]),
        "threshold": count(details["threshold"]),
    }
    if details["time_wait"] is not None:
        text += _(", %(sockets)s in TIME_WAIT") % {"sockets": count(details["time_wait"])}
    if details["total"] is not None:
        text += _(", %(sockets)s sockets in all") % {"sockets": count(details["total"])}
    text += _full_stop()
    return _on_host(host, _sentences(text, _("Clients may be reconnecting in a loop or leaking connections.")))


RENDERERS: dict[str, Callable[[str, dict], str]] = {
    WarningKind.CONSUMER_LAG: consumer_lag,
    WarningKind.CLIENT_BLOCKED: client_blocked,
    WarningKind.OFFSET_MOVED: offset_moved,
    WarningKind.SUBSCRIPTION_MISMATCH: subscription_mismatch,
    WarningKind.CONSUME_FAILURES: consume_failures,
    WarningKind.DEAD_LETTERS: dead_letters,
    WarningKind.PRODUCE_ERRORS: produce_errors,
    WarningKind.TRAFFIC_SURGE: traffic_surge,
    WarningKind.TRAFFIC_DROP: traffic_drop,
    WarningKind.NAMESERVER_DOWN: nameserver_down,
    WarningKind.BROKER_DOWN: broker_down,
    WarningKind.SLAVE_LAG: slave_lag,
    WarningKind.SERVER_CPU: server_cpu,
    WarningKind.SERVER_MEMORY: server_memory,
    WarningKind.SERVER_DISK: server_disk,
    WarningKind.SERVER_LOAD: server_load,
    WarningKind.SERVER_TCP: server_tcp,
}


# --- entry points ---------------------------------------------------------------------------------------------------


def render(kind: str, subject_name: str, details, stored: str = "") -> str:
    """The summary of a warning of ``kind`` about ``subject_name`` with these figures, in the active language and
    time zone; ``stored`` (the text kept with the row) when the figures are not readable as the kind's."""
    renderer = RENDERERS.get(kind)
    if renderer is None or not isinstance(details, dict):
        return stored
    try:
        return renderer(subject_name, details)
    except _UNREADABLE:
        logger.debug("summary of %s %s falls back on its stored text", kind, subject_name, exc_info=True)
        return stored


def english(kind: str, subject_name: str, details, stored: str = "") -> str:
    """The summary as stored with the warning and its events: in English, times in UTC."""
    with translation.override("en"), timezone.override(dt.UTC):
        return render(kind, subject_name, details, stored)


def of_warning(warning) -> str:
    """A warning's summary as it is now (its latest figures)."""
    return render(warning.kind, warning.subject_name, warning.details, warning.summary)


def of_event(event) -> str:
    """What the rules saw at one transition of a warning (the event's snapshot)."""
    snapshot = event.snapshot if isinstance(event.snapshot, dict) else {}
    return render(event.warning.kind, event.warning.subject_name, snapshot.get("details"), event.summary)

"""What producer-group warnings say: the send exceptions the SDK reported, by exception, broker, topic and client."""

from __future__ import annotations

from django.utils.translation import gettext as _

from portal.services.warnings.summaries.words import CLIENT, SEND, count, counted, duration, join_sentences, listing


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
    return join_sentences(
        text, _("The application saw these exceptions; unless it retried them, those messages were not stored.")
    )

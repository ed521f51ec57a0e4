"""What message trace warnings say: the trace records a topic's SDK clients dropped or could not write, and by whom."""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext_lazy

from portal.services.warnings.summaries.words import CLIENT, count, counted, duration, join_sentences, listing

TRACE_RECORD = ngettext_lazy("%(count)s trace record", "%(count)s trace records", "n")


def trace_failures(topic: str, details: dict) -> str:
    dropped, failed = details["trace_dropped"], details["trace_failed"]
    clients = [client["client_id"] for client in details["losing_clients"]]
    text = _(
        "%(records)s of %(topic)s were lost in the last %(window)s: %(dropped)s dropped by the clients and "
        "%(failed)s not written to the trace topic, by %(clients)s (%(ids)s)."
    ) % {
        "records": counted(TRACE_RECORD, dropped + failed),
        "topic": topic,
        "window": duration(int(details["window_minutes"]) * 60),
        "dropped": count(dropped),
        "failed": count(failed),
        "clients": counted(CLIENT, len(clients)),
        "ids": listing(clients),
    }
    return join_sentences(
        text,
        _(
            "The messages keep no gap in their delivery, only in their trace: a client drops records when its trace "
            "buffer is full, and fails to write them when the trace topic refuses them."
        ),
    )

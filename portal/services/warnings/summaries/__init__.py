"""What a warning says, in words: its summary rendered from its kind, its subject and the figures the rule kept
(``details``), in the active language and time zone.

The rules (``rules/``) store figures, never sentences, so one warning reads in English on one user's page,
in Chinese on another's and in each recipient's language in their notifications. Every sentence is a translated
template with named placeholders; numbers, durations, rates and lists are worded per language by :mod:`.words`.
One module per family of warnings words its kinds, as ``rules/`` judges them: :mod:`.consumers`, :mod:`.producers`,
:mod:`.tracing`, :mod:`.traffic`, :mod:`.health` (name servers, brokers, slave lag) and :mod:`.servers`; this module
picks the wording of a warning's kind and renders it in the reader's language and time zone (or in English and UTC,
to be stored).

A warning whose figures cannot be read as its kind's (rows stored before the rules kept every figure, or a condition
made by hand) shows the text stored with it: :func:`render` falls back to ``stored``. The English rendering is what is
stored (:func:`english`), for the list's text search and for readers of the table.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from django.utils import timezone, translation

from portal.models.warnings import WarningKind
from portal.services.warnings.summaries import consumers, health, producers, servers, tracing, traffic

logger = logging.getLogger(__name__)

# What breaks a rendering when a warning's figures are not its kind's: the stored text is shown instead.
_UNREADABLE = (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError)


RENDERERS: dict[str, Callable[[str, dict], str]] = {
    WarningKind.CONSUMER_LAG: consumers.consumer_lag,
    WarningKind.CLIENT_BLOCKED: consumers.client_blocked,
    WarningKind.OFFSET_MOVED: consumers.offset_moved,
    WarningKind.SUBSCRIPTION_MISMATCH: consumers.subscription_mismatch,
    WarningKind.CONSUME_FAILURES: consumers.consume_failures,
    WarningKind.DEAD_LETTERS: consumers.dead_letters,
    WarningKind.CLIENT_CONSUME_FAILURES: consumers.client_consume_failures,
    WarningKind.PRODUCE_ERRORS: producers.produce_errors,
    WarningKind.TRACE_FAILURES: tracing.trace_failures,
    WarningKind.TRAFFIC_SURGE: traffic.traffic_surge,
    WarningKind.TRAFFIC_DROP: traffic.traffic_drop,
    WarningKind.NAMESERVER_DOWN: health.nameserver_down,
    WarningKind.BROKER_DOWN: health.broker_down,
    WarningKind.SLAVE_LAG: health.slave_lag,
    WarningKind.SERVER_CPU: servers.server_cpu,
    WarningKind.SERVER_MEMORY: servers.server_memory,
    WarningKind.SERVER_DISK: servers.server_disk,
    WarningKind.SERVER_LOAD: servers.server_load,
    WarningKind.SERVER_TCP: servers.server_tcp,
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

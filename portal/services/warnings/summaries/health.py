"""What name-server and broker warnings say: a server that stopped answering the probes (for how long, and what
clients and producers do meanwhile) and a slave behind its master."""

from __future__ import annotations

import datetime as dt

from django.utils.translation import gettext as _

from portal.services.warnings.summaries.words import (
    PROBE_ROUND,
    QUICK_ATTEMPT,
    counted,
    duration,
    join_sentences,
    listing,
    size,
)

# The broker id of a master (MixAll.MASTER_ID): a down master stops taking messages, a down slave only serving reads.
MASTER_ID = 0


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
    return join_sentences(first, second)


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
    return join_sentences(*sentences)


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
    return join_sentences(
        first,
        _(
            "Messages not yet copied are lost if the master's disk is, a SYNC_MASTER answers SLAVE_NOT_AVAILABLE "
            "meanwhile, and consumers sent to the slave read stale data."
        ),
    )

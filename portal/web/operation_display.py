"""How an application's page shows a message or consumer-group operation: what it asks for, how far it is (the
progress card and the JSON the page polls), its messages one by one, and what the approval stored as its outcome
(``payload["outcome"]``, written by ``portal.services.applications``: messages planned, offsets per queue before
and after a reset, consumption enabled or not, the group's settings after the change)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from django.core.paginator import Page
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from portal.models import Application, ApplicationKind, ApplicationState
from portal.services.applications.messages import ITEM_KINDS
from portal.services.messages import operations
from portal.web.message_forms import GroupSettingsForm
from portal.web.paging import paginate
from stats.keys import dlq_topic

K = ApplicationKind
MESSAGE_KINDS = frozenset(ITEM_KINDS)
OFFSET_KINDS = frozenset({K.OFFSET_RESET, K.SKIP_RETRY_BACKLOG})
GROUP_KINDS = frozenset({K.GROUP_PAUSE, K.GROUP_RESUME, K.GROUP_SETTINGS})
OPERATION_KINDS = MESSAGE_KINDS | OFFSET_KINDS | GROUP_KINDS


@dataclass
class OperationView:
    """The operation card's context (``operation`` in the template)."""

    request: list[tuple[str, str]]
    outcome: list[tuple[str, str]]
    queues: list[dict] = field(default_factory=list)
    status: dict | None = None  # message operations only
    items: Page | None = None
    source_topic: str = ""
    can_run_again: bool = False


def progress_status(application: Application) -> dict:
    """A message operation's progress as the page shows it and polls it: counts, the share handled (sent or failed)
    and whether anything is still to go (``running``: the page keeps polling)."""
    progress = operations.operation_progress(application)
    running = application.state == ApplicationState.APPROVED and not progress.done
    return {**dataclasses.asdict(progress), "fraction": round(progress.fraction, 4), "running": running}


def _setting_label(name: str) -> str:
    return str(GroupSettingsForm.base_fields[name].label)


def _shown(value) -> str:
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    return "—" if value is None else str(value)


def _moment(value: str) -> str:
    if value == "newest":
        return _("the newest message (skip the backlog)")
    moment = parse_datetime(value or "")
    return date_format(localtime(moment), "Y-m-d H:i:s") if moment else str(value)


def _target(payload: dict) -> str:
    if (payload.get("to") or "retry") == "origin":
        return _("its original topic")
    return _("the retry topic of %(group)s") % {"group": payload.get("group")}


def _request(application: Application) -> list[tuple[str, str]]:
    """What the operation asks for, as (label, text) rows."""
    payload, kind, rows = application.payload or {}, application.kind, []
    if kind in (K.MESSAGE_RESEND, K.DEAD_LETTER_RESEND):
        ids = payload.get("msg_ids", [])
        label = ngettext("%(count)d message", "%(count)d messages", len(ids)) % {"count": len(ids)}
        rows += [(_("Messages"), f"{label}\n" + "\n".join(ids)), (_("Resent to"), _target(payload))]
    elif kind == K.REDELIVER_RANGE:
        rows += [
            (_("Topic"), payload.get("topic", "")),
            (_("Stored from"), _moment(payload.get("begin", ""))),
            (_("Stored until"), _moment(payload.get("end", ""))),
            (_("Resent to"), _target(payload)),
        ]
    elif kind == K.OFFSET_RESET:
        queue = payload.get("queue")
        where = _("every queue of the topic")
        if queue:
            where = _("%(broker)s queue %(queue)s") % {"broker": queue["broker_name"], "queue": queue["queue_id"]}
        rows += [
            (_("Topic"), payload.get("topic", "")),
            (_("Reset to"), _moment(payload.get("when", ""))),
            (_("Queues"), where),
        ]
    elif kind == K.GROUP_SETTINGS:
        changes = [(name, value) for name, value in payload.items() if name in GroupSettingsForm.setting_names]
        rows += [(_setting_label(name), _shown(value)) for name, value in changes]
    return rows


def _outcome(application: Application) -> tuple[list[tuple[str, str]], list[dict]]:
    """What the approval stored as done: (label, text) rows, and per queue offsets for a reset."""
    outcome = (application.payload or {}).get("outcome")
    if not outcome:
        return [], []
    kind = application.kind
    if kind in MESSAGE_KINDS:
        by = _("the approval") if outcome.get("sent_by_approval") else _("a background run")
        return [(_("Messages planned"), str(outcome.get("messages", 0))), (_("Sent by"), by)], []
    if kind in OFFSET_KINDS:
        if outcome.get("online"):
            how = _("the brokers told the online clients (C++ layout)") if outcome.get("cplus") else None
            how = how or _("the brokers told the online clients")
        else:
            how = _("no client online: the committed offsets were written directly")
        queues = []
        for queue in outcome.get("queues", []):
            before = queue.get("previous_offset")
            moved = None if before is None else queue["offset"] - before
            queues.append({**queue, "moved": moved})
        return [(_("How"), how)], queues
    if "consume_enable" in outcome:
        state = _("enabled") if outcome["consume_enable"] else _("paused")
        return [(_("Consumption on the brokers"), state)], []
    if "settings" in outcome:
        return [(_setting_label(name), _shown(value)) for name, value in outcome["settings"].items()], []
    return [], []


def _source_topic(application: Application) -> str:
    """The topic the operation's messages are read from (their message pages are under it)."""
    payload = application.payload or {}
    if application.kind == K.MESSAGE_RESEND and application.topic:
        return application.topic.name
    if application.kind == K.DEAD_LETTER_RESEND:
        return dlq_topic(payload.get("group") or application.consumer_group.name)
    return payload.get("topic", "")


def operation_view(request, application: Application) -> OperationView | None:
    """The operation card of ``application``'s page (None for an application that is no operation); its messages
    are paged by the ``page`` query parameter."""
    if application.kind not in OPERATION_KINDS:
        return None
    outcome, queues = _outcome(application)
    view = OperationView(request=_request(application), outcome=outcome, queues=queues)
    if application.kind in MESSAGE_KINDS:
        view.status = progress_status(application)
        view.items = paginate(request, application.message_items.order_by("index"))
        view.source_topic = _source_topic(application)
        view.can_run_again = operations.may_run_again(request.user, application)
    return view

"""One message's trace records put in order: its sends (Pub), each consumer group's consume attempts (a SubBefore
joined to its SubAfter by request id), its transaction end and its recall.

Pure data, built from records already read (monitor.trace.reader reads them): the portal's message page, its API
and the queryMsgTraceById CLI all show this.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from monitor.trace.records import MalformedTraceRecord, TraceRecord, TraceType

__all__ = ["ConsumeLeg", "EndTransactionLeg", "MessageTimeline", "PubLeg", "RecallLeg", "TraceEntry", "build_timeline"]

DEFAULT_SLOW_MS = 1000  # a send or a consume taking this long is worth a look


@dataclass(frozen=True)
class TraceEntry:
    """A record as read from the trace topic. ``client_host`` is the IP of the client that wrote it (the trace
    message's born host), which is what mqadmin shows as the client host."""

    record: TraceRecord
    client_host: str


@dataclass(frozen=True)
class PubLeg:
    producer_group: str
    client_host: str
    send_time: int  # ms
    cost_ms: int
    success: bool
    store_host: str
    msg_type: str
    topic: str
    tags: str
    keys: str
    offset_msg_id: str
    region_id: str


@dataclass(frozen=True)
class ConsumeLeg:
    """One consume attempt of a group: begun (SubBefore) and, once done, finished (SubAfter). An attempt whose
    SubBefore is missing (lost, or not yet written) has no retry count; one whose SubAfter is missing is not done."""

    consumer_group: str
    request_id: str
    client_host: str
    time: int | None  # ms the consume began (SubBefore), else when it ended
    retry_times: int | None
    cost_ms: int | None = None
    success: bool | None = None
    context_code: int | None = None
    context_name: str | None = None
    finished_time: int | None = None

    @property
    def done(self) -> bool:
        return self.success is not None


@dataclass(frozen=True)
class EndTransactionLeg:
    producer_group: str
    client_host: str
    time: int
    transaction_id: str
    transaction_state: str
    from_transaction_check: bool
    msg_type: str
    store_host: str


@dataclass(frozen=True)
class RecallLeg:
    producer_group: str
    client_host: str
    time: int
    success: bool


Leg = PubLeg | ConsumeLeg


@dataclass
class MessageTimeline:
    """Everything the trace topic says about one message id; ``entries`` keeps the records in the order read."""

    msg_id: str
    pubs: list[PubLeg] = field(default_factory=list)
    consumers: dict[str, list[ConsumeLeg]] = field(default_factory=dict)  # by group, attempts in time order
    end_transactions: list[EndTransactionLeg] = field(default_factory=list)
    recalls: list[RecallLeg] = field(default_factory=list)
    malformed: list[MalformedTraceRecord] = field(default_factory=list)
    entries: list[TraceEntry] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.entries)

    def consumed_by(self) -> list[str]:
        """The groups with at least one finished consume attempt (a SubAfter)."""
        return sorted(group for group, legs in self.consumers.items() if any(leg.done for leg in legs))

    def missing_legs(self, subscribed_groups: Iterable[str]) -> list[str]:
        """Of the groups subscribed to the topic, those that have not finished consuming it ("not consumed by
        group X yet"): no SubAfter of theirs is in the trace."""
        consumed = set(self.consumed_by())
        return sorted({group for group in subscribed_groups if group not in consumed})

    def slow_legs(self, threshold_ms: int = DEFAULT_SLOW_MS) -> list[Leg]:
        """Sends and consume attempts that took at least ``threshold_ms``, in time order."""
        legs: list[Leg] = [leg for leg in self.pubs if leg.cost_ms >= threshold_ms]
        legs += [
            leg
            for attempts in self.consumers.values()
            for leg in attempts
            if leg.cost_ms is not None and leg.cost_ms >= threshold_ms
        ]
        return sorted(legs, key=lambda leg: (leg.send_time if isinstance(leg, PubLeg) else leg.time) or 0)

    def json_fields(self) -> dict:
        return {
            "msgId": self.msg_id,
            "pubs": self.pubs,
            "consumers": self.consumers,
            "endTransactions": self.end_transactions,
            "recalls": self.recalls,
            "malformed": self.malformed,
        }


def _pub(entry: TraceEntry) -> PubLeg:
    r = entry.record
    return PubLeg(
        producer_group=r.group or "",
        client_host=r.client_host or entry.client_host,
        send_time=r.timestamp or 0,
        cost_ms=r.cost_ms or 0,
        success=bool(r.success),
        store_host=r.store_host or "",
        msg_type=r.msg_type or "",
        topic=r.topic or "",
        tags=r.tags or "",
        keys=r.keys or "",
        offset_msg_id=r.offset_msg_id or "",
        region_id=r.region_id or "",
    )


def _consume_leg(request_id: str, before: TraceEntry | None, after: TraceEntry | None) -> ConsumeLeg:
    b, a = (before.record if before else None), (after.record if after else None)
    return ConsumeLeg(
        consumer_group=(b and b.group) or (a and a.group) or "",
        request_id=request_id,
        client_host=(before or after).client_host,
        time=b.timestamp if b else a.timestamp,
        retry_times=b.retry_times if b else None,
        cost_ms=a.cost_ms if a else None,
        success=a.success if a else None,
        context_code=a.context_code if a else None,
        context_name=a.context_name if a else None,
        finished_time=a.timestamp if a else None,
    )


def _consume_legs(befores: dict[str, TraceEntry], afters: dict[str, TraceEntry]) -> dict[str, list[ConsumeLeg]]:
    by_group: dict[str, list[ConsumeLeg]] = {}
    for request_id in {**befores, **afters}:
        leg = _consume_leg(request_id, befores.get(request_id), afters.get(request_id))
        by_group.setdefault(leg.consumer_group, []).append(leg)
    return {
        group: sorted(legs, key=lambda leg: (leg.time or 0, leg.request_id)) for group, legs in sorted(by_group.items())
    }


def build_timeline(
    msg_id: str, entries: Iterable[TraceEntry], malformed: Iterable[MalformedTraceRecord] = ()
) -> MessageTimeline:
    """The timeline of ``msg_id`` from trace entries (others' records are left out, as mqadmin leaves them)."""
    timeline = MessageTimeline(msg_id, malformed=list(malformed))
    befores: dict[str, TraceEntry] = {}
    afters: dict[str, TraceEntry] = {}
    for entry in entries:
        r = entry.record
        if r.msg_id != msg_id:
            continue
        timeline.entries.append(entry)
        if r.trace_type is TraceType.Pub:
            timeline.pubs.append(_pub(entry))
        elif r.trace_type is TraceType.SubBefore:
            befores[r.request_id or ""] = entry
        elif r.trace_type is TraceType.SubAfter:
            afters[r.request_id or ""] = entry
        elif r.trace_type is TraceType.EndTransaction:
            timeline.end_transactions.append(
                EndTransactionLeg(
                    producer_group=r.group or "",
                    client_host=entry.client_host,
                    time=r.timestamp or 0,
                    transaction_id=r.transaction_id or "",
                    transaction_state=r.transaction_state or "",
                    from_transaction_check=bool(r.from_transaction_check),
                    msg_type=r.msg_type or "",
                    store_host=r.store_host or "",
                )
            )
        else:
            timeline.recalls.append(RecallLeg(r.group or "", entry.client_host, r.timestamp or 0, bool(r.success)))
    timeline.pubs.sort(key=lambda leg: leg.send_time)
    timeline.end_transactions.sort(key=lambda leg: leg.time)
    timeline.consumers = _consume_legs(befores, afters)
    return timeline

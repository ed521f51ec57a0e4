"""Re-deliver a past time range of a topic to one consumer group: each message stored in the range is resent to
the group's retry topic (%RETRY%group), which every push consumer of the group reads and no other group does; the
group's clients see each one as a message of the original topic (see resend).

A long range is resumable. Messages are taken in a fixed order (queue by queue, oldest first) and numbered from 0;
the caller gives each number its deterministic producer id (``uniq_key_for``, e.g. send.make_uniq_key of the
operation and the number) and, after a crash, the number to resume at: the messages before it were recorded as
sent and are skipped, the one at it may have been in flight when the crash came, so the broker's index is asked
for its id before it is sent again (resend.already_sent).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from monitor.messages.resend import already_sent, resend
from monitor.messages.search import CancelFn, ProgressFn, by_time_range
from monitor.messages.send import SendResult
from monitor.remoting.admin import MQAdmin, retry_topic
from monitor.remoting.message import MessageExt


@dataclass(frozen=True)
class Redelivered:
    """Message number ``index`` of the range and its copy in the retry topic: ``result`` is None when the index
    showed it had been sent before (a resumed run), ``offset_msg_id`` is then the stored copy's."""

    index: int
    source: MessageExt
    uniq_key: str
    result: SendResult | None
    offset_msg_id: str


def redeliver(
    admin: MQAdmin,
    topic: str,
    group: str,
    begin_ms: int,
    end_ms: int | None,
    *,
    uniq_key_for: Callable[[int], str],
    start_index: int = 0,
    broker_name: str | None = None,
    queue_id: int | None = None,
    progress: ProgressFn = None,
    cancelled: CancelFn = None,
) -> Iterator[Redelivered]:
    """Resend every message of ``topic`` (one broker's queues, one queue) stored within [begin_ms, end_ms] to
    ``%RETRY%group``, yielding each as it is done; progress and cancel as in search.by_time_range (a cancel raises
    SearchCancelled between two messages). Messages numbered below ``start_index`` are skipped."""
    target = retry_topic(group)
    messages = by_time_range(
        admin,
        topic,
        begin_ms,
        end_ms,
        broker_name=broker_name,
        queue_id=queue_id,
        progress=progress,
        cancelled=cancelled,
    )
    for index, msg in enumerate(messages):
        if index < start_index:
            continue
        uniq_key = uniq_key_for(index)
        if index == start_index and start_index > 0:
            copy = already_sent(admin, target, uniq_key)
            if copy is not None:
                yield Redelivered(index, msg, uniq_key, None, copy.msg_id)
                continue
        result = resend(admin, msg, to="retry", group=group, uniq_key=uniq_key)
        yield Redelivered(index, msg, uniq_key, result, result.offset_msg_id)

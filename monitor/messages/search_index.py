"""A complete search of one topic's key index: every message indexed under a key, however many there are.

What one broker answers to QUERY_MESSAGE (4.9.4 and 5.x alike: QueryMessageProcessor, DefaultMessageStore.
queryMessage, IndexService.queryOffset, IndexFile.selectPhyOffset):

- at most min(maxNum, maxMsgsNumBatch) records (64 by default; a unique-key query replaces maxNum with
  defaultQueryMaxNum, 32), so a key with more messages needs more than one question;
- the NEWEST of them: the index chains a key's entries newest first and the walk stops when the answer is full,
  and the answer is then sorted by commit-log offset;
- matched by the key's hash (String.hashCode of "topic#key"), so messages of another key can come along;
- filtered on the INDEX time, which is the store time cut to whole seconds counted from the index file's first
  entry (an int of seconds in each entry): an entry's index time is at most 999 ms before its store time.

So each broker is asked for [begin - 999 ms, end] of index time, and whenever its answer is full the question is
asked again below the oldest message it held. Every entry left out of a full answer was indexed before every
entry in it, and the broker stamps store times in commit-log order, so what is left out was stored no later than
the oldest message answered: asking again up to that time loses nothing. When such a question brings nothing new,
more than a full answer's worth of messages share one second of index time and no narrower question can tell
them apart: that second of the topic's queues on the broker is read through with pulls (search_scan) and
filtered by key, and the search goes on below it. Messages are de-duplicated by commit-log offset per broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from monitor.messages.search_progress import Tracker
from monitor.messages.search_scan import QueueRef, broker_addr, scan_queue, topic_queues
from monitor.remoting.admin import MAX_TIMESTAMP, MQAdmin
from monitor.remoting.errors import RemotingClientError
from monitor.remoting.message import MessageExt

QUERY_BATCH = 64  # maxNum mqadmin asks for, and the default maxMsgsNumBatch that caps it
INDEX_SECOND = 1000  # the index keeps time in whole seconds

Matcher = Callable[[MessageExt], bool]


class _BrokerIndexSearch:
    """One broker's part of the search."""

    def __init__(self, admin: MQAdmin, topic: str, key: str, broker_name: str, addr: str, tracker: Tracker):
        self.admin, self.topic, self.key, self.tracker = admin, topic, key, tracker
        self.broker_name, self.addr = broker_name, addr
        self.seen: set[int] = set()  # commit-log offsets already answered or scanned
        self._cap: int | None = None
        self._queues: list[QueueRef] | None = None

    @property
    def queues(self) -> list[QueueRef]:
        if self._queues is None:
            self._queues = topic_queues(self.admin, self.topic, self.broker_name)
        return self._queues

    def full(self, count: int) -> bool:
        """Whether an answer of `count` records may have left some out: it holds as many as the broker gives."""
        if count >= QUERY_BATCH:
            return True
        if count == 0:
            return False
        if self._cap is None:
            self._cap = self._batch_limit()
        return count >= self._cap

    def _batch_limit(self) -> int:
        """The broker's maxMsgsNumBatch, if it was configured below what we ask for."""
        try:
            config = self.admin.get_broker_config(self.addr)
            return min(QUERY_BATCH, int(config.get("maxMsgsNumBatch", QUERY_BATCH)))
        except (RemotingClientError, ValueError):
            return QUERY_BATCH

    def fresh(self, messages: list[MessageExt]) -> list[MessageExt]:
        """The messages not answered before; a message listing the key twice is indexed, and answered, twice."""
        new = []
        for msg in messages:
            if msg.commit_log_offset not in self.seen:
                self.seen.add(msg.commit_log_offset)
                new.append(msg)
        return new

    def floor(self, begin_ms: int) -> int:
        """Where this broker's messages start, for the progress fraction only: the time range's begin, else the
        oldest message of the topic on the broker."""
        if begin_ms > 0 or not self.tracker.wants_progress:
            return begin_ms
        oldest = []
        for ref in self.queues:
            try:
                stamp = self.admin.get_earliest_msg_store_time(self.addr, self.topic, ref.queue_id)
            except RemotingClientError:
                continue
            if stamp > 0:
                oldest.append(stamp)
        return min(oldest, default=begin_ms)

    def scan_second(self, begin_ms: int, end_ms: int, matches: Matcher) -> Iterator[MessageExt]:
        """Read [begin_ms, end_ms] of store time of the topic's queues on this broker, keeping the key's messages."""
        if begin_ms > end_ms:
            return
        for ref in self.queues:
            for msg in scan_queue(self.admin, ref, begin_ms, end_ms, self.tracker, lambda fraction: None):
                if matches(msg) and msg.commit_log_offset not in self.seen:
                    self.seen.add(msg.commit_log_offset)
                    yield msg

    def run(
        self, begin_ms: int, end_ms: int | None, matches: Matcher, report: Callable[[float, str], None]
    ) -> Iterator[MessageExt]:
        top = int(time.time() * 1000) if end_ms is None else end_ms
        last = MAX_TIMESTAMP if end_ms is None else end_ms
        bottom = self.floor(begin_ms)

        def wanted(msg: MessageExt) -> bool:
            return matches(msg) and begin_ms <= msg.store_timestamp <= last

        low, high = max(0, begin_ms - INDEX_SECOND + 1), last
        while high >= low:
            self.tracker.check()
            answer = self.admin.query_message_on_broker(self.addr, self.topic, self.key, QUERY_BATCH, low, high)
            new = self.fresh(answer)
            yield from filter(wanted, new)
            if not self.full(len(answer)):
                return
            oldest = min(m.store_timestamp for m in answer)
            if new:
                high = min(high, oldest)
            else:
                window = (max(begin_ms, oldest - INDEX_SECOND + 1), min(last, oldest))
                yield from self.scan_second(*window, matches)
                high = oldest - INDEX_SECOND
            done = (top - min(high, top)) / (top - bottom) if top > bottom else 0.0
            report(min(done, 1.0), f"{self.broker_name} up to {high}")


def search_index(
    admin: MQAdmin,
    topic: str,
    key: str,
    matches: Matcher,
    begin_ms: int,
    end_ms: int | None,
    tracker: Tracker,
) -> Iterator[MessageExt]:
    """Every message of `topic` indexed under `key` that `matches` and was stored within [begin_ms, end_ms]
    (end None: up to now and on), broker by broker."""
    route = admin.examine_topic_route_info(topic)
    brokers = sorted((bd.broker_name, broker_addr(bd)) for bd in route.broker_datas if broker_addr(bd))
    for number, (name, addr) in enumerate(brokers):
        search = _BrokerIndexSearch(admin, topic, key, name, addr, tracker)

        def report(fraction: float, note: str, number: int = number) -> None:
            tracker.report((number + fraction) / len(brokers), note)

        for msg in search.run(begin_ms, end_ms, matches, report):
            tracker.found += 1
            yield msg
        tracker.report((number + 1) / len(brokers), name, force=True)

"""What a slave broker copies from its master: topics, consumer offsets, delay offsets and subscription groups over
the wire (SlaveSynchronize, every ``slave_sync_interval`` seconds), and the commit log straight from the master's
store, byte for byte (the sandbox's one in-process shortcut: there is no HA protocol)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from monitor.remoting.body import (
    ConsumerOffsetSerializeWrapper,
    DelayOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    WireBean,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.errors import ProtocolError, RemotingError
from monitor.remoting.message import decode_messages
from monitor.sandbox.broker.tables import ConsumerOffsetManager, SubscriptionGroupManager, TopicConfigManager
from monitor.sandbox.store import DEFAULT_SEGMENT_BYTES

log = logging.getLogger(__name__)

# How often a slave copies new commit-log records from its master (a real HA link streams continuously).
REPLICATION_INTERVAL = 0.05


class SlaveSynchronization:
    """Mixed into :class:`~monitor.sandbox.broker.core.Broker`: the slave's periodic copies from its master."""

    async def _synchronize_periodically(self) -> None:
        while True:
            await self.synchronize_from_master()
            await asyncio.sleep(self.slave_sync_interval)

    async def synchronize_from_master(self) -> None:
        """SlaveSynchronize.syncAll: topics, consumer offsets, delay offsets and subscription groups from the
        master whose address the name server gave; a failing part is logged and the next one still runs."""
        master_addr = self.master_addr
        if master_addr is None or master_addr == self.addr:
            return
        parts = (
            (
                RequestCode.GET_ALL_TOPIC_CONFIG,
                TopicConfigSerializeWrapper.decode,
                self.topics.replace_all,
                self.topics,
            ),
            (
                RequestCode.GET_ALL_CONSUMER_OFFSET,
                ConsumerOffsetSerializeWrapper.decode,
                self.offsets.merge,
                self.offsets,
            ),
            (RequestCode.GET_ALL_DELAY_OFFSET, DelayOffsetSerializeWrapper.decode, self.schedule.adopt, None),
            (
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                SubscriptionGroupWrapper.decode,
                self.groups.replace_all,
                self.groups,
            ),
        )
        for code, decode, apply, table in parts:
            try:
                answer = await self._client.invoke(master_addr, self._request(code))
                if answer.code == ResponseCode.SUCCESS:
                    await self._synchronize_part(code, answer.body, decode, apply, table)
                else:
                    log.warning("%s: master %s answered %s to %s", self.name, master_addr, answer.code, code.name)
            except (RemotingError, ProtocolError) as exc:
                log.warning("%s: %s from master %s failed: %s", self.name, code.name, master_addr, exc)

    async def _synchronize_part(
        self,
        code: RequestCode,
        body: bytes,
        decode: Callable[[bytes], WireBean],
        apply: Callable[[WireBean], object],
        table: TopicConfigManager | SubscriptionGroupManager | ConsumerOffsetManager | None,
    ) -> None:
        """Apply one part of the master's state. Bodies are decoded on a worker thread: at 10,000 entries a table
        is a megabyte or two of fastjson. A master whose table has not changed sends the same bytes again, so a
        body equal to the one applied last time to ``table``, which has not changed here since, needs no decoding
        at all: applying it again would change nothing (a putAll of the same offsets included)."""
        if table is not None and self._synchronized.get(code) == (body, table.revision):
            return
        apply(await asyncio.get_running_loop().run_in_executor(None, decode, body))
        if table is not None:
            self._synchronized[code] = (body, table.revision)

    async def _replicate(self) -> None:
        while True:
            self.replicate_once()
            await asyncio.sleep(REPLICATION_INTERVAL)

    def replicate_once(self) -> int:
        """Copy the master's new commit-log records and dispatch them; returns how many records were copied.
        Counted as puts, as the real slave's dispatcher counts them."""
        copied = 0
        target = self.master.store.commit_log_max_offset if self.master.store is not None else 0
        while self.store.commit_log_max_offset < target:
            started = time.monotonic()
            try:
                start, data = self.master.store.records_since(self.store.commit_log_max_offset, DEFAULT_SEGMENT_BYTES)
            except ValueError as exc:  # the master no longer holds what we need, or we are ahead of it
                if not self._replication_stalled:
                    log.error("%s: replication from %s stalled: %s", self.name, self.master.name, exc)
                self._replication_stalled = True
                return copied
            self._replication_stalled = False
            if not data:
                break
            self.store.append_records(start, data)
            records = decode_messages(data, decompress=False)
            for record in records:
                self.messages_stored(record.topic, record.queue_id, 1, record.store_size, started)
            copied += len(records)
        return copied

"""getMessage's scan of a consume queue: the records a pull returns from a found offset, within 4.9.4's in-memory
transfer limits, filtered by tag codes, with the FOUND / NO_MATCHED_MESSAGE / MESSAGE_WAS_REMOVING status."""

from monitor.sandbox.store.commitlog import CommitLog
from monitor.sandbox.store.consumequeue import ConsumeQueue
from monitor.sandbox.store.results import GetMessageStatus, GetResult

_MAX_TRANSFER_BYTES = 256 * 1024  # maxTransferBytesOnMessageInMemory
_MAX_TRANSFER_COUNT = 32  # maxTransferCountOnMessageInMemory
_MAX_FILTER_ENTRIES = 16000 // 20  # getMessage scans at most max(16000 bytes, maxMsgNums units) of consume queue


def scan(queue: ConsumeQueue, log: CommitLog, offset: int, max_msgs: int, codes: frozenset[int] | None) -> GetResult:
    """Entry by entry from `offset` (within the queue's retained entries) to the end of its consume-queue file."""
    status = GetMessageStatus.NO_MATCHED_MESSAGE
    file_end = queue.roll_next_file(offset)
    limit = min(min(file_end, queue.max_offset) - offset, max(_MAX_FILTER_ENTRIES, max_msgs))
    min_physical_offset = log.min_offset
    skip_below: int | None = None  # nextPhyFileStartOffset: records below it are gone
    found: list[bytearray] = []
    total = 0
    base = offset - queue.start
    scanned = 0
    while scanned < limit:
        physical_offset = queue.physical[base + scanned]
        size = queue.sizes[base + scanned]
        if skip_below is not None and physical_offset < skip_below:
            scanned += 1
            continue
        if total and (
            len(found) >= max_msgs or total + size > _MAX_TRANSFER_BYTES or len(found) >= _MAX_TRANSFER_COUNT
        ):
            break
        if codes is not None and queue.tags[base + scanned] not in codes:
            if not total:
                status = GetMessageStatus.NO_MATCHED_MESSAGE
            scanned += 1
            continue
        if physical_offset < min_physical_offset:
            # 4.9.4 skips to the next commit-log file; here every record below the minimum is gone.
            if not total:
                status = GetMessageStatus.MESSAGE_WAS_REMOVING
            skip_below = min_physical_offset
            scanned += 1
            continue
        found.append(log.read(physical_offset, size))
        total += size
        status = GetMessageStatus.FOUND
        skip_below = None
        scanned += 1
    return GetResult(
        status=status,
        next_begin_offset=offset + scanned,
        min_offset=queue.min_offset,
        max_offset=queue.max_offset,
        body=b"".join(found),
        message_count=len(found),
    )

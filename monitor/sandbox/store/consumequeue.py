"""A consume queue, one per (topic, queue id): logical offset -> (commit-log offset, size, tags code), in "files" of
`file_entries` entries because the real files' boundaries show through a pull, a deletion and a search by time."""

import bisect
from array import array

from monitor.sandbox.store.commitlog import CommitLog


class ConsumeQueue:
    """One ConsumeQueue: entries from the first retained file on (`start`), `min_offset` kept the 4.9.4 way."""

    __slots__ = ("file_entries", "file_mtimes", "min_offset", "physical", "sizes", "start", "tags")

    def __init__(self, first_offset: int, file_entries: int):
        self.file_entries = file_entries
        self.start = first_offset  # logical offset of physical[0]
        self.min_offset = first_offset
        self.physical = array("q")
        self.sizes = array("i")
        self.tags = array("q")
        self.file_mtimes: list[int] = []  # per retained file, the store time of its newest entry

    @property
    def max_offset(self) -> int:
        return self.start + len(self.physical)

    def append(self, physical_offset: int, size: int, tags_code: int, store_timestamp: int) -> None:
        file_index = self.max_offset // self.file_entries - self.start // self.file_entries
        if file_index == len(self.file_mtimes):
            self.file_mtimes.append(store_timestamp)
        else:
            self.file_mtimes[file_index] = store_timestamp
        self.physical.append(physical_offset)
        self.sizes.append(size)
        self.tags.append(tags_code)

    def delete_expired(self, min_physical_offset: int) -> None:
        """ConsumeQueue.deleteExpiredFile then correctMinOffset, after the commit log dropped older records."""
        while self.start // self.file_entries < (self.max_offset - 1) // self.file_entries:
            file_end = (self.start // self.file_entries + 1) * self.file_entries
            if self.physical[file_end - 1 - self.start] >= min_physical_offset:
                break
            dropped = file_end - self.start
            del self.physical[:dropped], self.sizes[:dropped], self.tags[:dropped], self.file_mtimes[0]
            self.start = file_end
        first_kept = bisect.bisect_left(self.physical, min_physical_offset)
        if first_kept < len(self.physical):
            self.min_offset = self.start + first_kept

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_entries - offset % self.file_entries

    def offset_by_time(self, timestamp: int, log: CommitLog) -> int:
        """ConsumeQueue.getOffsetInQueueByTime of 4.9.4 (SEARCH_OFFSET_BY_TIMESTAMP).

        That is not "the first message stored at or after timestamp": it picks the first consume-queue file last
        written at or after the time (else the last file), binary-searches it, and answers an exact hit, else the
        nearer of the two neighbours (the earlier one on a tie). A time after every message therefore gives the
        last message's offset, not the max offset, and a queue whose records are all gone gives the file start - 1.
        """
        if not self.physical:
            return 0
        file_number = next(
            (number for number, mtime in enumerate(self.file_mtimes) if mtime >= timestamp),
            len(self.file_mtimes) - 1,
        )
        file_from = (self.start // self.file_entries + file_number) * self.file_entries
        low = self.min_offset - file_from if self.min_offset > file_from else 0
        high = min(file_from + self.file_entries, self.max_offset) - 1 - file_from
        min_physical_offset = log.min_offset
        target = left = right = -1
        left_time = right_time = -1
        while high >= low:
            middle = (low + high) // 2
            physical_offset = self.physical[file_from + middle - self.start]
            if physical_offset < min_physical_offset:
                low, left = middle + 1, middle
                continue
            store_time = log.store_timestamp(physical_offset)
            if store_time == timestamp:
                target = middle
                break
            if store_time > timestamp:
                high, right, right_time = middle - 1, middle, store_time
            else:
                low, left, left_time = middle + 1, middle, store_time
        if target != -1:
            found = target
        elif left_time == -1:
            found = right
        elif right_time == -1:
            found = left
        else:
            found = right if abs(timestamp - left_time) > abs(timestamp - right_time) else left
        if found == -1 and file_from == 0:
            return 0  # Java's (fileFromOffset - 1) / 20 rounds toward zero
        return file_from + found

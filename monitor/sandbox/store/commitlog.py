"""The commit log: every record laid end to end at the byte position that is its commit-log offset, in segments
standing in for the real 1 GiB files (dropped whole, oldest first, when the store is over its cap)."""

import bisect

from monitor.remoting.message import BORNHOST_V6_FLAG, MESSAGE_MAGIC_CODE
from monitor.sandbox.store.records import (
    BORN_HOST_POSITION,
    INT,
    LONG,
    PHYSICAL_OFFSET_POSITION,
    SIZE_AND_MAGIC,
    SYS_FLAG_POSITION,
)


class CommitLog:
    """Records laid end to end in segments; a segment is closed once it reaches segment_bytes, so boundaries depend
    only on the record sizes and a slave appending the same records gets the same segments."""

    def __init__(self, segment_bytes: int):
        self.segment_bytes = segment_bytes
        self.starts = [0]
        self.segments = [bytearray()]

    @property
    def min_offset(self) -> int:
        return self.starts[0]

    @property
    def max_offset(self) -> int:
        return self.starts[-1] + len(self.segments[-1])

    @property
    def empty(self) -> bool:
        return self.max_offset == 0

    def rebase(self, offset: int) -> None:
        """Start an empty log at `offset` (a slave's first copy of a master that already dropped older records)."""
        self.starts = [offset]
        self.segments = [bytearray()]

    def append(self, *parts: bytes) -> None:
        if len(self.segments[-1]) >= self.segment_bytes:
            self.starts.append(self.max_offset)
            self.segments.append(bytearray())
        segment = self.segments[-1]
        for part in parts:
            segment += part

    def _locate(self, offset: int) -> tuple[bytearray, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return self.segments[index], offset - self.starts[index]

    def read(self, offset: int, size: int) -> bytearray:
        segment, position = self._locate(offset)
        return segment[position : position + size]

    def store_timestamp(self, offset: int) -> int:
        """CommitLog.pickupStoreTimestamp: the record's store time, -1 once it has been dropped."""
        if offset < self.min_offset:
            return -1
        segment, position = self._locate(offset)
        (sys_flag,) = INT.unpack_from(segment, position + SYS_FLAG_POSITION)
        born_host_size = 20 if sys_flag & BORNHOST_V6_FLAG else 8
        return LONG.unpack_from(segment, position + BORN_HOST_POSITION + born_host_size)[0]

    def record_size_at(self, offset: int) -> int | None:
        """The size of the record starting exactly at `offset`, None if no retained record starts there.

        A record names its own commit-log offset, so checking the magic code and that field rejects offsets that
        fall inside a record (the real store would read garbage there)."""
        if not self.min_offset <= offset < self.max_offset:
            return None
        segment, position = self._locate(offset)
        if position + PHYSICAL_OFFSET_POSITION + 8 > len(segment):
            return None
        size, magic = SIZE_AND_MAGIC.unpack_from(segment, position)
        (physical_offset,) = LONG.unpack_from(segment, position + PHYSICAL_OFFSET_POSITION)
        if magic != MESSAGE_MAGIC_CODE or physical_offset != offset:
            return None
        return size

    def copy_from(self, offset: int, max_bytes: int | None) -> bytes:
        """Bytes from `offset` (a record start) to the end, or to the end of the last whole segment that keeps the
        copy within max_bytes (always at least the rest of the first segment), so copies end on a record."""
        index = bisect.bisect_right(self.starts, offset) - 1
        parts = [self.segments[index][offset - self.starts[index] :]]
        copied = len(parts[0])
        for segment in self.segments[index + 1 :]:
            if max_bytes is not None and copied + len(segment) > max_bytes:
                break
            parts.append(segment)
            copied += len(segment)
        return b"".join(parts)

    def drop_first(self) -> bytearray:
        self.starts.pop(0)
        return self.segments.pop(0)

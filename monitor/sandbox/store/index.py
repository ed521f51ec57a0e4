"""The key index (4.9.4's IndexService and its one IndexFile): "topic#key" -> commit-log offsets for UNIQ_KEY and
every KEYS word, which QUERY_MESSAGE reads.

One deliberate difference: a real IndexFile chains entries by String.hashCode of "topic#key" and returns every
entry of the same hash, so a query can bring messages of another key whose hash collides; this index matches the
key itself (hashing every key of every put in Python would slow the store down for a case only crafted keys hit,
and clients filter what they get by key anyway)."""

from monitor.remoting.message import KEY_SEPARATOR
from monitor.sandbox.store.commitlog import CommitLog
from monitor.sandbox.store.records import JAVA_INT_MAX, rolled_back

MAX_MSGS_NUM_BATCH = 64  # MessageStoreConfig.maxMsgsNumBatch default


def index_keys(topic: str, sys_flag: int, properties: dict[str, str]) -> list[str]:
    """The index entries IndexService.buildIndex adds for a record: UNIQ_KEY, then each KEYS word; none for a
    rolled-back transaction message. A key listed twice is indexed twice, and queries then return the record twice,
    as the real index does."""
    if rolled_back(sys_flag):
        return []
    keys = []
    uniq_key = properties.get("UNIQ_KEY")
    if uniq_key is not None:
        keys.append(f"{topic}#{uniq_key}")
    keys.extend(f"{topic}#{key}" for key in properties.get("KEYS", "").split(KEY_SEPARATOR) if key)
    return keys


class KeyIndex:
    """Maps "topic#key" to commit-log offsets (oldest first); also what IndexService reports of its newest entry."""

    def __init__(self):
        self.entries: dict[str, int | list[int]] = {}
        self.begin_timestamp: int | None = None
        self.last_update_timestamp = 0
        self.last_update_phyoffset = 0

    def add(self, keys: list[str], physical_offset: int, store_timestamp: int) -> None:
        for key in keys:
            held = self.entries.get(key)
            if held is None:
                self.entries[key] = physical_offset
            elif isinstance(held, int):
                self.entries[key] = [held, physical_offset]
            else:
                held.append(physical_offset)
        if keys:
            if self.begin_timestamp is None:
                self.begin_timestamp = store_timestamp
            self.last_update_timestamp = store_timestamp
            self.last_update_phyoffset = physical_offset

    def remove_oldest(self, counts: dict[str, int]) -> None:
        """Forget the oldest `count` offsets of each key (their records were just dropped, oldest first)."""
        for key, count in counts.items():
            held = self.entries[key]
            if isinstance(held, int) or count >= len(held):
                del self.entries[key]
            else:
                del held[:count]

    def offsets(self, key: str) -> list[int]:
        held = self.entries.get(key)
        if held is None:
            return []
        return [held] if isinstance(held, int) else held

    def indexed_time(self, store_timestamp: int) -> int:
        """The time an IndexFile entry reads back: its store time truncated to whole seconds after the file's
        first key (IndexFile keeps a 32-bit second count, not the time itself)."""
        begin = self.begin_timestamp or 0
        seconds = min(max(store_timestamp - begin, 0) // 1000, JAVA_INT_MAX)
        return begin + seconds * 1000

    def query(
        self,
        topic: str,
        key: str,
        max_num: int,
        begin: int,
        end: int,
        log: CommitLog,
        batch_limit: int = MAX_MSGS_NUM_BATCH,
    ) -> list[int]:
        """IndexService.queryOffset: the commit-log offsets of the newest min(max_num, maxMsgsNumBatch) records of
        `topic` indexed under `key` whose indexed time is within [begin, end], oldest first. The walk goes newest
        first and stops at the first entry indexed before `begin` (IndexFile.selectPhyOffset)."""
        matched: list[int] = []
        for physical_offset in reversed(self.offsets(f"{topic}#{key}")):
            if len(matched) >= min(max_num, batch_limit):
                break
            indexed_time = self.indexed_time(log.store_timestamp(physical_offset))
            if begin <= indexed_time <= end:
                matched.append(physical_offset)
            if indexed_time < begin:
                break
        return sorted(matched)

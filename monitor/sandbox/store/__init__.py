"""The sandbox broker's message store: an in-memory copy of what RocketMQ 4.9.4's DefaultMessageStore does.

A sandbox broker answers PULL_MESSAGE, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, SEARCH_OFFSET_BY_TIMESTAMP and the offset
queries with what a real 4.9.4 broker would send, so clients and the control plane cannot tell the difference. That
means this store keeps the same three structures as the real one and follows the same rules, ported from 4.9.4
(DefaultMessageStore, CommitLog, ConsumeQueue, IndexService/IndexFile, MessageDecoder):

* **Commit log**: every record, encoded exactly as CommitLog writes it (the layout monitor.remoting.message
  decodes), appended at a byte position that *is* its commit-log offset. Offset message ids are therefore genuine:
  store host + the offset at which the record really sits. A slave copies these bytes verbatim and ends up with the
  same records at the same offsets.
* **Consume queues**, one per (topic, queue id): logical offset -> (commit-log offset, size, tags hash code), kept in
  "files" of `consume_queue_file_entries` entries (300,000 in 4.9.4) because file boundaries show through the
  real store's answers: a pull never scans past the end of the file holding its offset, files are deleted whole,
  and a search by time first picks a file.
* **Key index**: "topic#key" -> commit-log offsets for UNIQ_KEY and every space-separated KEYS entry, for
  QUERY_MESSAGE.

Memory is bounded. The commit log is a list of segments (bytearrays, `segment_bytes` each, holding whole records)
standing in for the real 1 GiB files; when the retained bytes exceed `max_bytes` the oldest segments are dropped, as
the real store deletes whole files, and the consume queues are then cleaned the 4.9.4 way (ConsumeQueue
.deleteExpiredFile: drop every file but the last whose last entry points below the new commit-log minimum, then move
the minimum to the first entry that still has its record). So, like the real store, a queue whose records are all
gone keeps its old minimum and pulls there answer OFFSET_FOUND_NULL / MESSAGE_WAS_REMOVING rather than
OFFSET_TOO_SMALL. The cap counts record bytes only; on top of them the queues take 20 bytes per message and the
key index about 170 per key (UNIQ_KEY and each KEYS word), some 360 bytes per typical message. The newest segment is
never dropped.

Where this store knowingly differs from 4.9.4:

* Segments carry no end-of-file blank, so commit-log offsets stay contiguous where the real log skips to the next
  1 GiB boundary.
* Pulls use the "message in memory" transfer limits (32 messages, 256 KiB): everything here is in memory.
* Delayed messages (DELAY property) are stored in their own topic: the rewrite to SCHEDULE_TOPIC_XXXX and the
  delivery service are the broker's business, not emulated here.
* The index matches keys exactly; the real one matches a 32-bit hash and can return another key's messages.
  It models one index file (a real one holds 20 million keys before the next starts), whose first key's store
  time is the base of the whole-second times that the begin/end filter compares.
* A consume-queue file's "last modified" time (used by the search by time) is the store time of its newest entry.
* A slave whose record for a queue does not continue its consume queue (the master deleted and recreated the
  topic) restarts that queue at the record's offset; the real slave writes the entry anyway and corrupts the queue.
* Java's HashMap is modelled up to its bucket order and resizing; bins with nine or more colliding keys (which
  Java turns into trees) are not, and no message's properties come near that.

Thread safety: one lock around every public method, so many connections can put and pull at once.

One module per structure: `commitlog`, `consumequeue` and `index` hold the three, `records` the record layout,
`properties` the stored properties and tag codes, `pull` getMessage's scan, `results` what the store answers, and
`messagestore` the store that ties them together; the names below are what the broker uses.
"""

from monitor.sandbox.store.messagestore import (
    CONSUME_QUEUE_FILE_ENTRIES,
    DEFAULT_MAX_BYTES,
    DEFAULT_SEGMENT_BYTES,
    MAX_MESSAGE_SIZE,
    MessageStore,
)
from monitor.sandbox.store.properties import java_properties_string, stored_properties
from monitor.sandbox.store.results import (
    GetMessageStatus,
    GetResult,
    PutMessageError,
    PutMessageStatus,
    PutResult,
    QueryResult,
    QueueFigures,
)

__all__ = [
    "CONSUME_QUEUE_FILE_ENTRIES",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_SEGMENT_BYTES",
    "MAX_MESSAGE_SIZE",
    "GetMessageStatus",
    "GetResult",
    "MessageStore",
    "PutMessageError",
    "PutMessageStatus",
    "PutResult",
    "QueryResult",
    "QueueFigures",
    "java_properties_string",
    "stored_properties",
]

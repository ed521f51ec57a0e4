"""What the message store answers: 4.9.4's GetMessageStatus and PutMessageStatus, and the results of a put, a pull,
a query by key and a queue's figures, as the broker's processors turn them into responses."""

import enum
from dataclasses import dataclass


class GetMessageStatus(enum.Enum):
    """GetMessageStatus of 4.9.4, in its order; the broker sends the name as the pull response remark.

    NO_MATCHED_LOGIC_QUEUE is never produced: 4.9.4's findConsumeQueue creates a missing queue on the spot, so a
    pull from an unknown queue answers NO_MESSAGE_IN_QUEUE, and so does this store (without creating anything).
    """

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutMessageStatus(enum.Enum):
    """The 4.9.4 PutMessageStatus values a put can fail with; SendMessageProcessor maps them to response codes."""

    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"  # the store is a slave
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"  # topic, body or properties too long, or a batch the store refuses


class PutMessageError(Exception):
    """A put the real store would refuse; `status` says which PutMessageStatus it would have answered."""

    def __init__(self, status: PutMessageStatus, reason: str):
        super().__init__(f"{status.value}: {reason}")
        self.status = status
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PutResult:
    """What SEND_MESSAGE answers: for a batch, msg_id joins every offset id with commas and the offsets are the
    first message's, as 4.9.4's batch append reports them."""

    msg_id: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_timestamp: int
    wrote_bytes: int  # for TOPIC_PUT_SIZE statistics
    msg_num: int = 1


@dataclass(frozen=True, slots=True)
class GetResult:
    """DefaultMessageStore.getMessage's answer; `body` is the found records laid end to end (the pull body)."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes = b""
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class QueryResult:
    """DefaultMessageStore.queryMessage's answer. The index figures are 0 unless the index had a match, as in 4.9.4
    (the broker sends them in the QUERY_MESSAGE response header either way)."""

    body: bytes
    message_count: int
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(frozen=True, slots=True)
class QueueFigures:
    """One queue's line of a TopicStatsTable (GET_TOPIC_STATS_INFO), computed as AdminBrokerProcessor does."""

    min_offset: int
    max_offset: int
    last_update_timestamp: int

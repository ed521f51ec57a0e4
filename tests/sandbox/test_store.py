"""Specification of monitor.sandbox.store: the sandbox broker's message store must answer like RocketMQ 4.9.4's.

The captures pin the stored bytes: the first message of the capture, sent by the C++ client to an empty broker, must
come out byte for byte as the real broker served it, and the Java ones up to their offsets. The pull statuses, search
by time and key queries follow DefaultMessageStore / ConsumeQueue / IndexService of 4.9.4 rule by rule; each test
says which rule it pins.
"""

import base64
import itertools
import struct
import threading

import pytest

from monitor.remoting.javahash import java_string_hash as java_hash_code
from monitor.remoting.message import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_ZLIB_TYPE,
    STOREHOSTADDRESS_V6_FLAG,
    decode_messages,
    decode_offset_msg_id,
    decode_properties,
)
from monitor.sandbox.store import (
    GetMessageStatus,
    MessageStore,
    PutMessageError,
    PutMessageStatus,
    QueryResult,
    QueueFigures,
    java_properties_string,
    stored_properties,
)
from tests.fixtures import captured

MASTER = "127.0.0.1:10911"
SLAVE = "127.0.0.1:11911"
BORN = "127.0.0.1:50000"
CLUSTER = "DefaultCluster"
S = GetMessageStatus


def request_body(exchange: dict) -> bytes:
    request = exchange["request"]
    return base64.b64decode(request["body_b64"]) if request.get("body_b64") else request["body_text"].encode()


def properties(tags: str | None = "TagA", keys: str | None = None, uniq: str | None = None, **more: str) -> str:
    """Stored properties for a message sent with these, the way the broker rewrites a SEND header."""
    sent = {"KEYS": keys, "UNIQ_KEY": uniq, "WAIT": "true", "TAGS": tags, **more}
    return stored_properties("\x02".join(f"{k}\x01{v}" for k, v in sent.items() if v is not None), CLUSTER)


def put(store: MessageStore, queue_id: int = 0, body: bytes = b"hello", topic: str = "TopicTest", **kwargs):
    ts = kwargs.pop("ts", None)
    sys_flag = kwargs.pop("sys_flag", 0)
    return store.put_message(topic, queue_id, body, properties(**kwargs), 0, sys_flag, 1_700_000_000_000, BORN, 0, ts)


def pull_all(store: MessageStore, topic: str, queue_id: int) -> list:
    messages, offset = [], store.min_offset(topic, queue_id)
    while (result := store.get_message(topic, queue_id, offset, 32)).status is S.FOUND:
        messages += decode_messages(result.body, decompress=False)
        offset = result.next_begin_offset
    return messages


def encode_batch(messages: list[tuple[int, bytes, bytes]]) -> bytes:
    """A batch body as the Java client's MessageDecoder.encodeMessages writes it (magic and CRC left 0)."""
    out = b""
    for flag, body, props in messages:
        size = 20 + len(body) + 2 + len(props)
        out += struct.pack(">iiiii", size, 0, 0, flag, len(body)) + body + struct.pack(">h", len(props)) + props
    return out


def small_store(**kwargs) -> MessageStore:
    """A store with tiny segments and consume-queue files, so eviction and file boundaries show up quickly."""
    options = {"max_bytes": 2000, "segment_bytes": 500, "consume_queue_file_entries": 4, **kwargs}
    return MessageStore(MASTER, **options)


# --- what the real broker stored -----------------------------------------------------------------------------------


def test_the_first_captured_message_is_stored_byte_for_byte_as_the_real_broker_served_it():
    send, pulled = captured("SEND_MESSAGE_cpp_client"), captured("PULL_MESSAGE_mqadmin_queryMsgByOffset")
    header = send["request"]["header"]["extFields"]
    expected = base64.b64decode(pulled["response"]["body_b64"])
    (record,) = decode_messages(expected)
    store = MessageStore(MASTER)
    result = store.put_message(
        header["topic"], header["queueId"], request_body(send), stored_properties(header["properties"], CLUSTER),
        header["flag"], header["sysFlag"], int(header["bornTimestamp"]), send["connection"]["client"],
        int(header["reconsumeTimes"]), store_timestamp=record.store_timestamp,
    )  # fmt: skip
    reply = send["response"]["header"]["extFields"]
    assert (result.msg_id, result.queue_id, result.queue_offset) == (reply["msgId"], 0, 0)
    assert result.wrote_bytes == len(expected)
    assert store.get_message("TopicTest", 0, 0, 1).body == expected
    assert store.view_by_offset(0) == expected


@pytest.mark.parametrize(
    ("send_name", "served_name"),
    [("SEND_MESSAGE_V2", "VIEW_MESSAGE_BY_ID"), ("SEND_MESSAGE_V2_compressed_body", "PULL_MESSAGE_compressed_body")],
)
def test_java_messages_are_stored_like_the_real_broker_up_to_their_offsets(send_name, served_name):
    send = captured(send_name)
    header = send["request"]["header"]["extFields"]
    uniq = decode_properties(header["i"])["UNIQ_KEY"]
    served = base64.b64decode(captured(served_name)["response"]["body_b64"])
    position = 0
    for message in decode_messages(served, decompress=False):
        if message.uniq_key == uniq:
            expected = bytearray(served[position : position + message.store_size])
            break
        position += message.store_size
    struct.pack_into(">qq", expected, 20, 0, 0)  # a fresh store puts it at queue offset 0, commit-log offset 0
    store = MessageStore(MASTER)
    store.put_message(
        header["b"], int(header["e"]), request_body(send), stored_properties(header["i"], CLUSTER), int(header["h"]),
        int(header["f"]), int(header["g"]), send["connection"]["client"], int(header["j"]), message.store_timestamp,
    )  # fmt: skip
    assert store.view_by_offset(0) == bytes(expected)
    if send_name.endswith("compressed_body"):  # stored and served still deflated, sysFlag 769 intact
        (stored,) = decode_messages(store.view_by_offset(0), decompress=False)
        assert stored.sys_flag == COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE
        assert stored.body == request_body(send)


# --- properties the way the broker rewrites them --------------------------------------------------------------------


def test_send_properties_drop_wait_add_cluster_and_come_out_in_java_hashmap_order():
    java = "KEYS\x01K\x02UNIQ_KEY\x01U\x02WAIT\x01true\x02TAGS\x01TagA"
    cpp = "KEYS\x01K\x02TAGS\x01TagA\x02UNIQ_KEY\x01U\x02WAIT\x01true\x02"  # the C++ client's order, trailing \x02
    expected = "KEYS\x01K\x02UNIQ_KEY\x01U\x02CLUSTER\x01DefaultCluster\x02TAGS\x01TagA"  # what the captures show
    assert stored_properties(java, CLUSTER) == stored_properties(cpp, CLUSTER) == expected


def test_batch_header_properties_keep_wait():
    assert stored_properties("WAIT\x01true", CLUSTER, batch=True) == "CLUSTER\x01DefaultCluster\x02WAIT\x01true"


def test_hashmap_order_follows_bucket_then_insertion_and_changes_when_the_table_grows():
    # UNIQ_KEY and CLUSTER share bucket 12 of 16: the one put first comes first.
    assert list(decode_properties(java_properties_string({"CLUSTER": "c", "UNIQ_KEY": "u"}))) == ["CLUSTER", "UNIQ_KEY"]
    # KEYS sits in bucket 7 of 16 but 23 of 32, TRAN_MSG in 9 of both: a 13th entry grows the table and flips them.
    twelve = {"KEYS": "k", "TRAN_MSG": "t", **{f"P{n}": "x" for n in range(10)}}
    thirteen = {**twelve, "P10": "x"}
    order_12 = list(decode_properties(java_properties_string(twelve)))
    order_13 = list(decode_properties(java_properties_string(thirteen)))
    assert order_12.index("KEYS") < order_12.index("TRAN_MSG")
    assert order_13.index("TRAN_MSG") < order_13.index("KEYS")


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", 0),
        ("a", 97),
        ("Aa", 2112),
        ("BB", 2112),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # a surrogate pair: two UTF-16 units
    ],
)
def test_java_hash_code_is_string_hashcode_over_utf16_units(text, code):
    assert java_hash_code(text) == code


# --- put and get ---------------------------------------------------------------------------------------------------


def test_pulled_records_decode_to_what_was_put():
    store = MessageStore(MASTER)
    sent = []
    for n in range(20):
        result = store.put_message(
            "TopicTest", n % 2, f"body {n}".encode(), properties(keys=f"K{n}", uniq=f"U{n}"), n, 0,
            1_700_000_000_000 + n, BORN, n % 3, 1_800_000_000_000 + n,
        )  # fmt: skip
        sent.append((n, result))
    for queue_id in (0, 1):
        messages = pull_all(store, "TopicTest", queue_id)
        expected = [(n, result) for n, result in sent if n % 2 == queue_id]
        assert len(messages) == len(expected) == 10
        for queue_offset, (message, (n, result)) in enumerate(zip(messages, expected, strict=True)):
            assert (message.topic, message.queue_id, message.queue_offset) == ("TopicTest", queue_id, queue_offset)
            assert result.queue_offset == queue_offset
            assert message.commit_log_offset == result.commit_log_offset
            assert (message.body, message.flag, message.sys_flag) == (f"body {n}".encode(), n, 0)
            assert (message.born_timestamp, message.born_host) == (1_700_000_000_000 + n, BORN)
            assert (message.store_timestamp, message.store_host) == (1_800_000_000_000 + n, MASTER)
            assert message.reconsume_times == n % 3
            assert message.properties == {"KEYS": f"K{n}", "UNIQ_KEY": f"U{n}", "CLUSTER": CLUSTER, "TAGS": "TagA"}
            assert message.msg_id == result.msg_id


def test_offset_msg_ids_decode_to_the_store_host_and_the_record_they_name():
    store = MessageStore(MASTER)
    results = [put(store, body=b"x" * n) for n in range(1, 6)]
    offsets = [result.commit_log_offset for result in results]
    assert offsets[0] == 0 and all(a < b for a, b in itertools.pairwise(offsets))
    for result in results:
        host, offset = decode_offset_msg_id(result.msg_id)
        assert (host, offset) == (MASTER, result.commit_log_offset)
        (viewed,) = decode_messages(store.view_by_offset(offset))
        assert viewed.msg_id == result.msg_id
    assert store.view_by_offset(offsets[1] + 4) is None  # inside a record
    assert store.view_by_offset(store.commit_log_max_offset) is None


def test_ipv6_hosts_set_the_v6_flags_and_give_a_56_character_msg_id():
    store = MessageStore("[::1]:10911")
    result = store.put_message("T", 0, b"b", properties(), 0, 0, 1, "[fe80::1]:4000")
    assert len(result.msg_id) == 56 and decode_offset_msg_id(result.msg_id) == ("[::1]:10911", 0)
    (message,) = decode_messages(store.get_message("T", 0, 0, 1).body)
    assert message.sys_flag == BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
    assert (message.born_host, message.store_host) == ("[fe80::1]:4000", "[::1]:10911")


def test_puts_the_real_store_refuses_fail_with_its_status():
    store = MessageStore(MASTER, max_message_size=100)
    with pytest.raises(PutMessageError) as refused:
        put(store, topic="T" * 128)
    assert refused.value.status is PutMessageStatus.MESSAGE_ILLEGAL
    with pytest.raises(PutMessageError, match="MESSAGE_ILLEGAL"):
        put(store, body=b"x" * 101)
    with pytest.raises(PutMessageError, match="MESSAGE_ILLEGAL"):
        put(store, keys="k" * 40000)
    with pytest.raises(PutMessageError) as refused:
        put(MessageStore(SLAVE, slave=True))
    assert refused.value.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.commit_log_max_offset == 0 and store.topics() == []


# --- every GetMessageStatus, and next_begin_offset as 4.9.4 computes it ----------------------------------------------


def test_a_queue_never_written_answers_no_message_in_queue_from_offset_zero():
    # findConsumeQueue creates missing queues in 4.9.4, so NO_MATCHED_LOGIC_QUEUE never comes back.
    result = MessageStore(MASTER).get_message("Nothing", 3, 7, 32)
    assert (result.status, result.next_begin_offset, result.min_offset, result.max_offset) == (
        S.NO_MESSAGE_IN_QUEUE, 0, 0, 0,
    )  # fmt: skip


def test_pulling_at_or_past_the_end_overflows_one_or_badly():
    store = MessageStore(MASTER)
    for _ in range(3):
        put(store)
    at_end = store.get_message("TopicTest", 0, 3, 32)
    assert (at_end.status, at_end.next_begin_offset, at_end.max_offset) == (S.OFFSET_OVERFLOW_ONE, 3, 3)
    past = store.get_message("TopicTest", 0, 9, 32)
    assert (past.status, past.next_begin_offset) == (S.OFFSET_OVERFLOW_BADLY, 3)


def test_found_returns_at_most_max_msgs_and_never_more_than_32_or_256_kib():
    store = MessageStore(MASTER)
    for _ in range(40):
        put(store, body=b"x" * 100)
    for _ in range(3):
        put(store, body=b"y" * 200_000)
    first = store.get_message("TopicTest", 0, 0, 5)
    assert (first.status, first.message_count, first.next_begin_offset) == (S.FOUND, 5, 5)
    capped = store.get_message("TopicTest", 0, 5, 100)
    assert (capped.message_count, capped.next_begin_offset) == (32, 37)
    big = store.get_message("TopicTest", 0, 37, 100)  # 3 small + one 200 KB record fit; the next would pass 256 KiB
    assert [len(m.body) for m in decode_messages(big.body)] == [100, 100, 100, 200_000]
    assert big.next_begin_offset == 41
    alone = store.get_message("TopicTest", 0, 41, 100)  # a record is always served, however big
    assert (alone.message_count, alone.next_begin_offset) == (1, 42)


def test_a_pull_stops_at_the_end_of_the_consume_queue_file_holding_its_offset():
    store = small_store(max_bytes=10**6)
    for _ in range(10):
        put(store)
    result = store.get_message("TopicTest", 0, 2, 32)
    assert (result.message_count, result.next_begin_offset) == (2, 4)


def test_tag_filtering_matches_tags_hash_codes_and_skips_what_does_not_match():
    store = MessageStore(MASTER)
    for tags in ["TagA", "TagB", None, "TagC", "TagA"]:
        put(store, tags=tags, body=(tags or "none").encode())

    def bodies(expression, offset=0):
        result = store.get_message("TopicTest", 0, offset, 32, expression)
        return [m.body.decode() for m in decode_messages(result.body)], result.next_begin_offset

    everything = (["TagA", "TagB", "none", "TagC", "TagA"], 5)
    assert bodies(None) == bodies("*") == bodies("") == everything
    assert bodies("TagA") == (["TagA", "TagA"], 5)
    assert bodies(" TagB ||TagC") == (["TagB", "TagC"], 5)  # trimmed like FilterAPI, untagged never matches a tag
    assert bodies("TagA", offset=1) == (["TagA"], 5)


def test_no_matched_message_after_scanning_at_most_800_entries():
    store = MessageStore(MASTER)
    for _ in range(1000):
        put(store, body=b"")
    result = store.get_message("TopicTest", 0, 0, 32, "TagB")
    assert (result.status, result.next_begin_offset, result.body) == (S.NO_MATCHED_MESSAGE, 800, b"")
    wide = store.get_message("TopicTest", 0, 0, 900, "TagB")  # maxMsgNums units when that is more
    assert wide.next_begin_offset == 900


def test_eviction_advances_min_offsets_and_older_offsets_are_too_small():
    store = small_store()
    results = [put(store, keys=f"K{n % 3}") for n in range(60)]
    log_min = store.commit_log_min_offset
    assert log_min > 0 and store.commit_log_max_offset - log_min <= 2000
    first_kept = next(n for n, result in enumerate(results) if result.commit_log_offset >= log_min)
    assert store.min_offset("TopicTest", 0) == first_kept
    assert store.max_offset("TopicTest", 0) == 60
    too_small = store.get_message("TopicTest", 0, 0, 32)
    assert (too_small.status, too_small.next_begin_offset, too_small.min_offset) == (
        S.OFFSET_TOO_SMALL, first_kept, first_kept,
    )  # fmt: skip
    assert [m.queue_offset for m in pull_all(store, "TopicTest", 0)] == list(range(first_kept, 60))
    assert store.view_by_offset(0) is None
    assert store.earliest_store_time("TopicTest", 0) == results[first_kept].store_timestamp


def test_a_queue_whose_records_all_aged_out_answers_offset_found_null_then_message_was_removing():
    # 4.9.4 deletes every consume-queue file but the last whose entries all point below the commit-log minimum, and
    # moves the minimum only to an entry whose record still exists: for an idle queue there is none, so the minimum
    # stays in a deleted file (OFFSET_FOUND_NULL, next = the next file) and the last file's records are gone. That
    # takes one commit-log file holding all of the queue's records, so its minimum had no chance to move before.
    store = small_store(segment_bytes=1200)
    last = [put(store, queue_id=0) for _ in range(6)][-1]  # entries 0-3 in file 0, 4-5 in file 1
    while store.commit_log_min_offset <= last.commit_log_offset:
        put(store, queue_id=1)
    assert (store.min_offset("TopicTest", 0), store.max_offset("TopicTest", 0)) == (0, 6)
    null = store.get_message("TopicTest", 0, 0, 32)
    assert (null.status, null.next_begin_offset) == (S.OFFSET_FOUND_NULL, 4)
    removing = store.get_message("TopicTest", 0, 4, 32)
    assert (removing.status, removing.next_begin_offset, removing.body) == (S.MESSAGE_WAS_REMOVING, 6, b"")
    assert store.earliest_store_time("TopicTest", 0) == -1
    assert store.queue_figures("TopicTest", 0).last_update_timestamp == -1
    assert store.search_offset("TopicTest", 0, 0) == 3  # the last file's start - 1, as 4.9.4 answers


def test_a_slave_keeps_the_requested_offset_on_every_miss_unless_offset_check_in_slave():
    master = small_store()
    for _ in range(60):
        put(master)
    min_offset = master.min_offset("TopicTest", 0)
    for check, expected in [(False, [0, 60, 99]), (True, [min_offset, 60, 60])]:
        slave = small_store(slave=True, offset_check_in_slave=check)
        slave.replicate_from(master)
        misses = [slave.get_message("TopicTest", 0, offset, 32) for offset in (0, 60, 99)]
        assert [m.status for m in misses] == [S.OFFSET_TOO_SMALL, S.OFFSET_OVERFLOW_ONE, S.OFFSET_OVERFLOW_BADLY]
        assert [m.next_begin_offset for m in misses] == expected
        assert slave.get_message("Nothing", 0, 5, 32).next_begin_offset == (0 if check else 5)


# --- search by time, store times, figures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timestamp", "offset"),
    [
        (3000, 2),  # exact hit
        (2600, 2),  # between 2000 and 3000: the nearer one
        (2500, 1),  # a tie goes to the earlier message (not "first at or after")
        (500, 0),  # before everything: the first message
        (4500, 4),  # file 0 was last written at 4000, so file 1 is searched
        (99_999, 9),  # after everything: the last message, not the max offset 10
    ],
)
def test_search_offset_by_timestamp_follows_consume_queue_get_offset_in_queue_by_time(timestamp, offset):
    store = small_store(max_bytes=10**6)
    for n in range(10):
        put(store, ts=1000 * (n + 1))
    assert store.search_offset("TopicTest", 0, timestamp) == offset


def test_store_times_and_topic_stats_figures():
    store = MessageStore(MASTER)
    assert store.search_offset("TopicTest", 0, 5) == 0
    assert store.earliest_store_time("TopicTest", 0) == -1
    assert store.queue_figures("TopicTest", 0) == QueueFigures(0, 0, 0)
    for n in range(3):
        put(store, ts=5000 + n)
    figures = store.queue_figures("TopicTest", 0)
    assert (figures.min_offset, figures.max_offset, figures.last_update_timestamp) == (0, 3, 5002)
    assert store.earliest_store_time("TopicTest", 0) == 5000
    assert [store.message_store_timestamp("TopicTest", 0, n) for n in (-1, 0, 2, 3)] == [-1, 5000, 5002, -1]
    assert store.topics() == ["TopicTest"] and store.queue_ids("TopicTest") == [0]


# --- query by key ---------------------------------------------------------------------------------------------------


def test_query_by_key_and_by_uniq_key_returns_the_topics_records_oldest_first():
    store = MessageStore(MASTER)
    put(store, keys="order-1 shared", uniq="U1", body=b"a")
    put(store, keys="order-2", uniq="U2", body=b"b")
    put(store, queue_id=3, keys="shared", uniq="U3", body=b"c")
    last_keyed = put(store, topic="Other", keys="shared", uniq="U4", body=b"d")
    put(store, tags=None, body=b"no keys")

    def query(key, topic="TopicTest"):
        result = store.query_by_key(topic, key, 32, 0, 2**63 - 1)
        return [m.body for m in decode_messages(result.body)], result

    assert query("shared")[0] == [b"a", b"c"]
    assert query("U3")[0] == [b"c"]
    assert query("shared", "Other")[0] == [b"d"]
    assert query("order")[0] == []
    bodies, result = query("order-1")
    assert bodies == [b"a"] and result.message_count == 1
    # The index figures are those of the newest record with any key, whatever its topic; the last put had none.
    assert (result.index_last_update_timestamp, result.index_last_update_phyoffset) == (
        last_keyed.store_timestamp, last_keyed.commit_log_offset,
    )  # fmt: skip


def test_query_returns_the_newest_64_at_most_and_nothing_found_reports_zeros():
    store = MessageStore(MASTER)
    results = [put(store, keys="same", uniq=f"U{n}") for n in range(70)]
    found = decode_messages(store.query_by_key("TopicTest", "same", 100, 0, 2**63 - 1).body)
    assert [m.commit_log_offset for m in found] == [r.commit_log_offset for r in results[6:]]
    assert len(decode_messages(store.query_by_key("TopicTest", "same", 3, 0, 2**63 - 1).body)) == 3
    assert store.query_by_key("TopicTest", "missing", 32, 0, 2**63 - 1) == QueryResult(b"", 0, 0, 0)


def test_query_time_range_compares_whole_seconds_after_the_index_files_first_key():
    store = MessageStore(MASTER)
    put(store, keys="k", ts=10_500)  # the index's first key: times read back as 10_500 + whole seconds
    put(store, keys="k", ts=12_400, body=b"second")  # reads back as 11_500

    def bodies(begin, end):
        return [m.body for m in decode_messages(store.query_by_key("TopicTest", "k", 32, begin, end).body)]

    assert bodies(12_000, 20_000) == []
    assert bodies(11_500, 20_000) == [b"second"]
    assert bodies(0, 11_000) == [b"hello"]


def test_the_query_walk_stops_at_the_first_entry_older_than_begin_even_if_the_clock_went_back():
    store = MessageStore(MASTER)
    put(store, keys="first", ts=1_000)
    put(store, keys="k", ts=20_000, body=b"matching")
    put(store, keys="k", ts=5_000, body=b"clock went back")  # IndexFile.selectPhyOffset breaks here
    assert store.query_by_key("TopicTest", "k", 32, 10_000, 30_000).message_count == 0
    assert store.query_by_key("TopicTest", "k", 32, 0, 30_000).message_count == 2


def test_a_key_listed_twice_is_indexed_twice_and_the_record_comes_back_twice():
    store = MessageStore(MASTER)
    put(store, keys="dup dup")
    assert len(decode_messages(store.query_by_key("TopicTest", "dup", 32, 0, 2**63 - 1).body)) == 2


def test_aged_out_records_leave_the_index():
    store = small_store()
    for n in range(60):
        put(store, keys=f"K{n % 3} only-{n}", uniq=f"U{n}")
    log_min = store.commit_log_min_offset
    for key in ["U0", "only-0", "K0", "K1", "K2", "U59"]:
        found = decode_messages(store.query_by_key("TopicTest", key, 64, 0, 2**63 - 1).body)
        assert all(m.commit_log_offset >= log_min for m in found)
    assert store.query_by_key("TopicTest", "U0", 32, 0, 2**63 - 1).message_count == 0
    assert store.query_by_key("TopicTest", "U59", 32, 0, 2**63 - 1).message_count == 1


# --- batches --------------------------------------------------------------------------------------------------------


def test_a_batch_is_split_into_messages_with_their_own_flags_bodies_and_properties():
    batch_properties = stored_properties("WAIT\x01true", CLUSTER, batch=True)
    body = encode_batch(
        [
            (1, b"first", b"KEYS\x01k1\x02UNIQ_KEY\x01B1\x02TAGS\x01TagA"),
            (2, b"second", b"UNIQ_KEY\x01B2\x02"),  # a trailing separator: none is added
            (3, b"", b""),
        ]
    )
    store = MessageStore(MASTER)
    put(store)
    result = store.put_messages_batch("TopicTest", 0, body, batch_properties, 0, 1234, BORN, 0, 99)
    messages = pull_all(store, "TopicTest", 0)[1:]
    assert [(m.flag, m.body, m.queue_offset, m.store_timestamp, m.born_timestamp) for m in messages] == [
        (1, b"first", 1, 99, 1234), (2, b"second", 2, 99, 1234), (3, b"", 3, 99, 1234),
    ]  # fmt: skip
    raw = [store.view_by_offset(m.commit_log_offset) for m in messages]
    tail = "CLUSTER\x01DefaultCluster\x02WAIT\x01true"
    expected_props = ["KEYS\x01k1\x02UNIQ_KEY\x01B1\x02TAGS\x01TagA\x02" + tail, "UNIQ_KEY\x01B2\x02" + tail, tail]
    assert [r[-len(p) :].decode() for r, p in zip(raw, expected_props, strict=True)] == expected_props
    assert result.msg_id == ",".join(m.msg_id for m in messages)
    assert (result.queue_offset, result.commit_log_offset, result.msg_num) == (1, messages[0].commit_log_offset, 3)
    assert result.wrote_bytes == sum(m.store_size for m in messages)
    assert store.query_by_key("TopicTest", "B2", 32, 0, 2**63 - 1).message_count == 1
    assert store.get_message("TopicTest", 0, 1, 32, "TagA").message_count == 1


@pytest.mark.parametrize(
    ("body", "props", "sys_flag"),
    [
        (encode_batch([(0, b"x", b"")])[:-3], "", 0),  # truncated
        (encode_batch([(0, b"x", b"")]), "DELAY\x013", 0),  # delayed
        (encode_batch([(0, b"x", b"")]), "", 4),  # transactional
        (encode_batch([(0, b"x" * 200, b"")]), "", 0),  # over the maximum size
    ],
)
def test_batches_the_real_store_refuses_are_illegal(body, props, sys_flag):
    store = MessageStore(MASTER, max_message_size=100)
    with pytest.raises(PutMessageError) as refused:
        store.put_messages_batch("TopicTest", 0, body, props, sys_flag, 1, BORN)
    assert refused.value.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.commit_log_max_offset == 0


# --- transactions and deleted topics ---------------------------------------------------------------------------------


def test_prepared_and_rolled_back_transaction_messages_stay_out_of_the_consume_queue():
    store = MessageStore(MASTER)
    prepared = put(store, sys_flag=0x4, uniq="P")
    rolled_back = put(store, sys_flag=0xC, uniq="R")
    committed = put(store, sys_flag=0x8, uniq="C")
    assert (prepared.queue_offset, rolled_back.queue_offset, committed.queue_offset) == (0, 0, 0)
    assert store.max_offset("TopicTest", 0) == 1
    assert decode_messages(store.get_message("TopicTest", 0, 0, 32).body)[0].uniq_key == "C"
    assert store.query_by_key("TopicTest", "P", 32, 0, 2**63 - 1).message_count == 1  # prepared ones are indexed
    assert store.query_by_key("TopicTest", "R", 32, 0, 2**63 - 1).message_count == 0  # rolled back ones are not


def test_deleting_a_topic_drops_its_queues_but_not_its_records():
    store = MessageStore(MASTER)
    first = put(store, uniq="U1")
    store.delete_topic("TopicTest")
    assert store.topics() == [] and store.max_offset("TopicTest", 0) == 0
    assert store.view_by_offset(first.commit_log_offset) is not None
    assert store.query_by_key("TopicTest", "U1", 32, 0, 2**63 - 1).message_count == 1
    assert put(store).queue_offset == 0


# --- slave replication ----------------------------------------------------------------------------------------------


def assert_same_stores(master: MessageStore, slave: MessageStore, topic: str = "TopicTest") -> None:
    assert (slave.commit_log_min_offset, slave.commit_log_max_offset) == (
        master.commit_log_min_offset, master.commit_log_max_offset,
    )  # fmt: skip
    assert slave.records_since(0) == master.records_since(0)
    assert slave.topics() == master.topics()
    for queue_id in master.queue_ids(topic):
        low = master.min_offset(topic, queue_id)
        assert slave.queue_figures(topic, queue_id) == master.queue_figures(topic, queue_id)
        assert slave.get_message(topic, queue_id, low, 32) == master.get_message(topic, queue_id, low, 32)


def test_a_slave_replicates_the_masters_records_byte_for_byte_at_the_same_offsets():
    master, slave = MessageStore(MASTER), MessageStore(SLAVE, slave=True)
    results = [put(master, queue_id=n % 4, keys=f"K{n}", uniq=f"U{n}", body=b"m%d" % n) for n in range(50)]
    assert slave.replicate_from(master) == master.commit_log_max_offset
    assert_same_stores(master, slave)
    for result in results[::7]:
        assert slave.view_by_offset(result.commit_log_offset) == master.view_by_offset(result.commit_log_offset)
    assert slave.query_by_key("TopicTest", "K7", 32, 0, 2**63 - 1) == master.query_by_key(
        "TopicTest", "K7", 32, 0, 2**63 - 1
    )
    put(master, queue_id=1)
    assert slave.replicate_from(master) > 0 and slave.replicate_from(master) == 0
    assert_same_stores(master, slave)


def test_a_slave_started_after_the_master_dropped_records_copies_what_is_left_and_keeps_up():
    master, slave = small_store(), small_store(slave=True)
    for n in range(40):
        put(master, queue_id=n % 2, keys=f"K{n % 5}")
    slave.replicate_from(master)
    assert slave.commit_log_min_offset == master.commit_log_min_offset > 0
    assert_same_stores(master, slave)
    for n in range(40):
        put(master, queue_id=n % 2, keys=f"K{n % 5}")
        if n % 7 == 0:
            slave.replicate_from(master)
    slave.replicate_from(master)
    assert_same_stores(master, slave)


def test_replication_refuses_gaps_and_misplaced_records():
    master, slave = small_store(), small_store(slave=True)
    put(master)
    slave.replicate_from(master)
    for _ in range(60):
        put(master)
    with pytest.raises(ValueError, match="not a retained record start"):
        slave.replicate_from(master)  # the slave fell behind what the master still holds
    start, data = master.records_since(0)
    with pytest.raises(ValueError):
        MessageStore(SLAVE).append_records(start + 1, data)
    with pytest.raises(ValueError):
        master.records_since(master.commit_log_min_offset + 1)


def test_a_slave_restarts_a_queue_the_master_deleted_and_recreated():
    master, slave = MessageStore(MASTER), MessageStore(SLAVE, slave=True)
    for _ in range(3):
        put(master)
    slave.replicate_from(master)
    master.delete_topic("TopicTest")
    put(master, body=b"again")
    slave.replicate_from(master)
    assert (slave.min_offset("TopicTest", 0), slave.max_offset("TopicTest", 0)) == (0, 1)
    assert decode_messages(slave.get_message("TopicTest", 0, 0, 32).body)[0].body == b"again"


# --- concurrency ----------------------------------------------------------------------------------------------------


def test_concurrent_puts_and_pulls_keep_offsets_dense_and_records_intact():
    store = MessageStore(MASTER, max_bytes=10**8)
    errors = []

    def producer(worker):
        try:
            for n in range(500):
                put(store, queue_id=n % 4, body=b"w%d-%d" % (worker, n))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def consumer():
        offsets = dict.fromkeys(range(4), 0)
        for _ in range(300):
            for queue_id in range(4):
                result = store.get_message("TopicTest", queue_id, offsets[queue_id], 32)
                offsets[queue_id] = result.next_begin_offset if result.status is S.FOUND else offsets[queue_id]

    threads = [threading.Thread(target=producer, args=(w,)) for w in range(8)] + [threading.Thread(target=consumer)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    records = decode_messages(store.records_since(0)[1], decompress=False)
    assert len(records) == 4000
    position = 0
    for record in records:
        assert record.commit_log_offset == position
        position += record.store_size
    for queue_id in range(4):
        assert [r.queue_offset for r in records if r.queue_id == queue_id] == list(range(1000))

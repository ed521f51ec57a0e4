"""Specification of monitor.remoting.message against real RocketMQ 4.9.4 captures.

The fixtures hold PULL_MESSAGE / QUERY_MESSAGE / VIEW_MESSAGE_BY_ID response bodies exactly as the broker sent
them, each with the capture tool's own decoding of every record; the tests decode the bodies, compare field by
field, and require encode_message to give the very same bytes back.
"""

import base64
import contextlib
import dataclasses
import itertools
import json
import struct
import time
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.remoting import message
from monitor.remoting.errors import ProtocolError
from monitor.remoting.message import (
    BORNHOST_V6_FLAG,
    COMPRESSED_FLAG,
    COMPRESSION_ZLIB_TYPE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6_FLAG,
    MessageExt,
    create_offset_msg_id,
    decode_messages,
    decode_offset_msg_id,
    decode_properties,
    encode_message,
    encode_properties,
)
from tests.fixtures import FIXTURES_DIR

FIXTURES = FIXTURES_DIR
BINARY_FIXTURES = ["PULL_MESSAGE", "PULL_MESSAGE_compressed_body", "PULL_MESSAGE_cpp_client"]
BINARY_FIXTURES += ["PULL_MESSAGE_mqadmin_queryMsgByOffset", "QUERY_MESSAGE", "QUERY_MESSAGE_trace_topic"]
BINARY_FIXTURES += ["VIEW_MESSAGE_BY_ID"]
VIEW_MSG_ID = "7F00000100002A9F00000000000A2C9C"
SYS_FLAG_OFFSET = 36


def load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def response_body(name: str) -> bytes:
    return base64.b64decode(load(name)["response"]["body_b64"])


def expected_records(name: str) -> list[dict]:
    return load(name)["response"]["decoded_messages__not_on_wire"]


def raw_records(name: str) -> list[bytes]:
    """The body cut into records at the storeSize the capture tool reported."""
    body, records, start = response_body(name), [], 0
    for expected in expected_records(name):
        records.append(body[start : start + expected["storeSize"]])
        start += expected["storeSize"]
    assert start == len(body)
    return records


ALL_RECORDS = [record for name in BINARY_FIXTURES for record in raw_records(name)]
SMALL_RECORD = raw_records("VIEW_MESSAGE_BY_ID")[0]
COMPRESSED_RECORD = raw_records("PULL_MESSAGE_compressed_body")[-1]


def with_int(record: bytes, offset: int, value: int) -> bytes:
    return record[:offset] + struct.pack(">i", value) + record[offset + 4 :]


# --- decoding the captured bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BINARY_FIXTURES)
def test_decodes_every_captured_record_like_the_capture_tool(name):
    decoded = decode_messages(response_body(name), decompress=False)
    expected_list = expected_records(name)
    assert len(decoded) == len(expected_list)
    for msg, expected in zip(decoded, expected_list, strict=True):
        assert msg.store_size == expected["storeSize"]
        assert int(expected["magicCode"], 16) == MESSAGE_MAGIC_CODE
        assert msg.body_crc == expected["bodyCRC"]
        assert (msg.queue_id, msg.flag) == (expected["queueId"], expected["flag"])
        assert (msg.queue_offset, msg.commit_log_offset) == (expected["queueOffset"], expected["commitLogOffset"])
        assert msg.sys_flag == expected["sysFlag"]
        assert (msg.born_timestamp, msg.born_host) == (expected["bornTimestamp"], expected["bornHost"])
        assert (msg.store_timestamp, msg.store_host) == (expected["storeTimestamp"], expected["storeHost"])
        assert msg.reconsume_times == expected["reconsumeTimes"]
        assert msg.prepared_transaction_offset == expected["preparedTransactionOffset"]
        assert len(msg.body) == expected["bodyLength"]
        assert msg.topic == expected["topic"]
        assert msg.properties == expected["properties"]
        if not expected["properties_raw"].startswith("("):  # the tool abbreviates very long ones
            assert encode_properties(msg.properties) == expected["properties_raw"]
        if "body_text" in expected:
            assert msg.body.decode() == expected["body_text"]


@pytest.mark.parametrize("name", BINARY_FIXTURES)
def test_convenience_properties_read_keys_tags_and_the_client_id(name):
    for msg, expected in zip(decode_messages(response_body(name)), expected_records(name), strict=True):
        assert msg.keys == expected["properties"]["KEYS"].split(" ")
        assert msg.tags == expected["properties"].get("TAGS")
        assert msg.uniq_key == msg.msg_id_client == expected["properties"]["UNIQ_KEY"]
        assert msg.msg_id == create_offset_msg_id(expected["storeHost"], expected["commitLogOffset"])
        assert msg.delay_time_level == 0
        assert msg.max_reconsume_times is msg.retry_topic is msg.real_topic is msg.real_queue_id is None


def test_the_offset_msg_id_of_a_viewed_message_is_the_one_the_broker_returned_at_send_time():
    (viewed,) = decode_messages(response_body("VIEW_MESSAGE_BY_ID"))
    send = load("SEND_MESSAGE_V2")
    assert viewed.msg_id == send["response"]["header"]["extFields"]["msgId"] == VIEW_MSG_ID
    assert viewed.uniq_key == decode_properties(send["request"]["header"]["extFields"]["i"])["UNIQ_KEY"]
    assert str(viewed.commit_log_offset) == load("VIEW_MESSAGE_BY_ID")["request"]["header"]["extFields"]["offset"]


def test_compressed_record_inflates_to_the_8_kib_body_the_java_producer_sent():
    *plain, big = decode_messages(response_body("PULL_MESSAGE_compressed_body"))
    expected = expected_records("PULL_MESSAGE_compressed_body")[-1]
    assert big.sys_flag == COMPRESSED_FLAG | COMPRESSION_ZLIB_TYPE == 769
    assert big.was_compressed
    assert len(big.body) == 8192
    assert big.body.decode() == expected["body_text_after_zlib_inflate"]
    assert not any(msg.was_compressed for msg in plain)


def test_decompress_false_keeps_the_stored_deflate_bytes():
    big = decode_messages(response_body("PULL_MESSAGE_compressed_body"), decompress=False)[-1]
    expected = expected_records("PULL_MESSAGE_compressed_body")[-1]
    assert not big.was_compressed
    assert big.sys_flag & COMPRESSED_FLAG
    assert big.body == base64.b64decode(expected["body_compressed_zlib_b64"])
    assert big.body_crc == zlib.crc32(big.body) & 0x7FFFFFFF  # the broker's CRC covers the stored bytes


def test_trace_record_inflates_to_pub_trace_text():
    (trace,) = decode_messages(response_body("QUERY_MESSAGE_trace_topic"))
    assert trace.topic == "RMQ_SYS_TRACE_TOPIC"
    assert trace.was_compressed
    text = trace.body.decode()
    assert text == expected_records("QUERY_MESSAGE_trace_topic")[0]["body_text_after_zlib_inflate"]
    entries = [entry.split("\x01") for entry in text.split("\x02") if entry]
    assert len(entries) > 100
    for entry in entries:
        kind, timestamp, region, _group, topic, uniq_key, *_ = entry
        assert (kind, region, topic) == ("Pub", "DefaultRegion", "TopicTest")
        assert timestamp.isdigit() and len(uniq_key) == 32
        assert decode_offset_msg_id(entry[12])[0] == entry[8] == "127.0.0.1:10911"
    assert VIEW_MSG_ID in text


def test_empty_body_has_no_messages():
    assert decode_messages(b"") == []


# --- byte-exact encoding ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("record", ALL_RECORDS, ids=lambda record: f"{len(record)}B")
def test_encoding_a_decoded_record_gives_back_the_same_bytes(record):
    (msg,) = decode_messages(record, decompress=False)
    assert encode_message(msg) == record


@pytest.mark.parametrize("name", BINARY_FIXTURES)
def test_re_deflating_inflated_bodies_reproduces_the_java_producer_bytes(name):
    body = response_body(name)
    assert b"".join(encode_message(msg) for msg in decode_messages(body)) == body


def test_encoding_computes_body_crc_and_store_size_when_not_given():
    msg = MessageExt(topic="TopicTest", body=b"hello", properties={"TAGS": "TagA"}, store_host="127.0.0.1:10911")
    (decoded,) = decode_messages(encode_message(msg))
    assert decoded.body_crc == zlib.crc32(b"hello") & 0x7FFFFFFF
    assert decoded.store_size == len(encode_message(msg))
    assert decoded == dataclasses.replace(msg, body_crc=decoded.body_crc, store_size=decoded.store_size)


def test_was_compressed_message_is_stored_deflated_with_the_compressed_flag():
    msg = MessageExt(topic="TopicTest", body=b"x" * 5000, was_compressed=True)
    record = encode_message(msg)
    (stored,) = decode_messages(record, decompress=False)
    assert stored.sys_flag & COMPRESSED_FLAG
    assert zlib.decompress(stored.body) == msg.body
    assert decode_messages(record)[0].body == msg.body


def test_ipv6_hosts_set_the_v6_sys_flags_and_widen_the_msg_id():
    msg = MessageExt(topic="T", born_host="[2001:db8::1]:5000", store_host="[::1]:10911", commit_log_offset=42)
    record = encode_message(msg)
    (sys_flag,) = struct.unpack_from(">i", record, SYS_FLAG_OFFSET)
    assert sys_flag == BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG
    (decoded,) = decode_messages(record)
    assert (decoded.born_host, decoded.store_host) == ("[2001:db8::1]:5000", "[::1]:10911")
    assert len(decoded.msg_id) == 56
    assert decode_offset_msg_id(decoded.msg_id) == ("[::1]:10911", 42)


def test_topics_over_127_bytes_use_the_v2_magic_code_with_a_two_byte_length():
    long_topic = "t" * 200
    record = encode_message(MessageExt(topic=long_topic))
    assert struct.unpack_from(">I", record, 4)[0] == MESSAGE_MAGIC_CODE_V2
    assert decode_messages(record)[0].topic == long_topic
    assert struct.unpack_from(">I", encode_message(MessageExt(topic="t" * 127)), 4)[0] == MESSAGE_MAGIC_CODE


@pytest.mark.parametrize(
    ("msg", "complaint"),
    [
        (MessageExt(topic="T", store_host="localhost:10911"), "store_host"),
        (MessageExt(topic="T", born_host="127.0.0.1"), "born_host"),
        (MessageExt(topic="T", queue_id=2**31), "out of range"),
        (MessageExt(topic="T", properties={"A": ""}), "non-empty"),
        (MessageExt(topic="T", properties={"A": "x" * 40000}), "at most 32767"),
        (MessageExt(topic="T", body=b"x", sys_flag=0x101, was_compressed=True), "LZ4"),
    ],
)
def test_encoding_an_impossible_message_raises_value_error(msg, complaint):
    with pytest.raises(ValueError, match=complaint):
        encode_message(msg)


# --- properties -------------------------------------------------------------------------------------------------


def test_properties_from_java_send_header_round_trip_exactly():
    text = load("SEND_MESSAGE_V2")["request"]["header"]["extFields"]["i"]
    props = decode_properties(text)
    assert props == {
        "KEYS": "KEY_java_0",
        "UNIQ_KEY": "7F0000016CA35FFD2B276C5640FE0000",
        "WAIT": "true",
        "TAGS": "TagA",
    }
    assert encode_properties(props) == text


def test_properties_with_the_cpp_clients_trailing_separator_decode_and_re_encode_the_java_way():
    text = load("SEND_MESSAGE_cpp_client")["request"]["header"]["extFields"]["properties"]
    assert text.endswith("\x02")
    props = decode_properties(text)
    assert props == {"KEYS": "KEY_py_0", "TAGS": "TagA", "UNIQ_KEY": "0100007F0000ED6C0000477AB3710100", "WAIT": "true"}
    assert encode_properties(props) == text[:-1]


def test_properties_decoding_skips_malformed_pairs_like_rocketmq_and_keeps_separators_in_values():
    assert decode_properties("") == {}
    assert decode_properties("A\x01\x02\x01b\x02junk\x02\x02K\x01v\x01w") == {"K": "v\x01w"}


@pytest.mark.parametrize("props", [{"": "v"}, {"a\x01b": "v"}, {"a\x02": "v"}, {"k": "v\x02w"}, {"k": ""}])
def test_properties_that_cannot_survive_the_wire_are_refused(props):
    with pytest.raises(ValueError, match="property"):
        encode_properties(props)


def test_keys_split_on_spaces_and_delay_level_reads_as_int():
    msg = MessageExt(
        topic="T", properties={"KEYS": "a  b c", "DELAY": "3", "REAL_QID": "x", "MAX_RECONSUME_TIMES": "16"}
    )
    assert msg.keys == ["a", "b", "c"]
    assert msg.delay_time_level == 3
    assert msg.max_reconsume_times == 16
    assert msg.real_queue_id is None
    assert MessageExt(topic="T").keys == []


# --- offset message ids -----------------------------------------------------------------------------------------


def test_offset_msg_id_decodes_to_store_host_and_commit_log_offset():
    assert decode_offset_msg_id(VIEW_MSG_ID) == ("127.0.0.1:10911", 666780)
    assert decode_offset_msg_id(VIEW_MSG_ID.lower()) == ("127.0.0.1:10911", 666780)


def test_offset_msg_id_is_created_as_uppercase_hex():
    assert create_offset_msg_id("127.0.0.1:10911", 666780) == VIEW_MSG_ID


@pytest.mark.parametrize(
    ("msg_id", "complaint"),
    [
        ("not hex", "32 hex characters"),
        ("Z" * 32, "not hexadecimal"),
        ("7F000001 0002A9F00000000000A2C9C", "not hexadecimal"),
        ("7F0000016CA35FFD2B276C5640FE0000", "UNIQ_KEY"),  # a Java client id: port 0x6CA35FFD
    ],
)
def test_bad_offset_msg_ids_raise_value_error(msg_id, complaint):
    with pytest.raises(ValueError, match=complaint):
        decode_offset_msg_id(msg_id)


@pytest.mark.parametrize(("host", "offset"), [("broker:10911", 0), ("127.0.0.1:70000", 0), ("127.0.0.1:1", -1)])
def test_creating_an_offset_msg_id_from_bad_input_raises_value_error(host, offset):
    with pytest.raises(ValueError):
        create_offset_msg_id(host, offset)


# --- malformed broker bytes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "complaint"),
    [
        (SMALL_RECORD[:30], "truncated"),
        (SMALL_RECORD[:-1], "storeSize 217 but only 216 bytes left"),
        (SMALL_RECORD + SMALL_RECORD[:50], "record #1 at byte 217"),
        (with_int(SMALL_RECORD, 4, 0x12345678), "bad magic code 0x12345678"),
        (with_int(SMALL_RECORD, 0, 0x7FFFFFFF), "storeSize 2147483647"),
        (with_int(SMALL_RECORD, 0, 12), "smaller than the 91-byte minimum"),
        (with_int(SMALL_RECORD, 84, -1), "bodyLength -1"),
        (with_int(SMALL_RECORD, 84, 10_000), "bodyLength 10000"),
        (with_int(SMALL_RECORD + bytes(4), 0, 221), "4 bytes left over after the properties"),
        (with_int(SMALL_RECORD, 52, 70_000), "bornHost port 70000"),
        (with_int(COMPRESSED_RECORD, SYS_FLAG_OFFSET, COMPRESSED_FLAG | 0x100), "LZ4-compressed body"),
        (with_int(COMPRESSED_RECORD, SYS_FLAG_OFFSET, COMPRESSED_FLAG | 0x200), "ZSTD-compressed body"),
        (with_int(COMPRESSED_RECORD, SYS_FLAG_OFFSET, COMPRESSED_FLAG | 0x500), "unknown type 5"),
        (with_int(COMPRESSED_RECORD, 88, 0x01020304), "corrupt zlib body"),
        (with_int(SMALL_RECORD, SYS_FLAG_OFFSET, COMPRESSED_FLAG), "corrupt zlib body"),
    ],
)
def test_malformed_records_raise_protocol_error_saying_what_is_wrong(body, complaint):
    with pytest.raises(ProtocolError, match=complaint):
        decode_messages(body)


def test_unsupported_compression_still_decodes_with_decompress_false():
    record = with_int(COMPRESSED_RECORD, SYS_FLAG_OFFSET, COMPRESSED_FLAG | 0x100)
    (msg,) = decode_messages(record, decompress=False)
    assert not msg.was_compressed
    assert encode_message(msg) == record


def test_truncated_zlib_stream_is_reported():
    deflated = zlib.compress(b"hello " * 1000)
    record = encode_message(MessageExt(topic="T", body=deflated[:-10], sys_flag=COMPRESSED_FLAG))
    with pytest.raises(ProtocolError, match="truncated"):
        decode_messages(record)


def test_inflating_stops_at_the_size_cap(monkeypatch):
    monkeypatch.setattr(message, "MAX_INFLATED_BODY_SIZE", 1000)
    record = encode_message(MessageExt(topic="T", body=b"\0" * 5000, was_compressed=True))
    with pytest.raises(ProtocolError, match="inflates to more than 1000 bytes"):
        decode_messages(record)


def test_invalid_utf8_topic_is_a_protocol_error():
    record = encode_message(MessageExt(topic="ab"))
    topic_at = len(record) - 2 - 2
    with pytest.raises(ProtocolError, match="topic is not valid UTF-8"):
        decode_messages(record[:topic_at] + b"\xff\xfe" + record[topic_at + 2 :])


def test_every_truncation_of_a_record_raises_protocol_error():
    for cut in range(1, len(SMALL_RECORD)):
        with pytest.raises(ProtocolError):
            decode_messages(SMALL_RECORD[:cut])


# --- properties of the codec ------------------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_characters="\x01\x02"), min_size=1, max_size=12)
values = st.text(st.characters(codec="utf-8", exclude_characters="\x02"), min_size=1, max_size=20)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def hosts(draw) -> str:
    ip = draw(st.ip_addresses())
    port = draw(st.integers(0, 0xFFFF))
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


@st.composite
def messages(draw) -> MessageExt:
    born_host, store_host = draw(hosts()), draw(hosts())
    was_compressed = draw(st.booleans())
    sys_flag = draw(int32) & ~(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG)
    sys_flag |= (BORNHOST_V6_FLAG if born_host.startswith("[") else 0) | (
        STOREHOSTADDRESS_V6_FLAG if store_host.startswith("[") else 0
    )
    if was_compressed:
        sys_flag = sys_flag & ~0x700 | COMPRESSED_FLAG | draw(st.sampled_from([0, COMPRESSION_ZLIB_TYPE]))
    return MessageExt(
        topic=draw(st.text(st.characters(codec="utf-8"), max_size=150)),
        body=draw(st.binary(max_size=300)),
        flag=draw(int32),
        properties=draw(st.dictionaries(names, values, max_size=5)),
        queue_id=draw(int32),
        queue_offset=draw(int64),
        sys_flag=sys_flag,
        born_timestamp=draw(int64),
        born_host=born_host,
        store_timestamp=draw(int64),
        store_host=store_host,
        commit_log_offset=draw(st.integers(0, 2**63 - 1)),
        body_crc=draw(int32),
        reconsume_times=draw(int32),
        prepared_transaction_offset=draw(int64),
        was_compressed=was_compressed,
    )


@given(st.lists(messages(), min_size=1, max_size=3))
def test_random_messages_survive_encode_then_decode(msgs):
    records = [encode_message(msg) for msg in msgs]
    for msg, record in zip(msgs, records, strict=True):
        (decoded,) = decode_messages(record, decompress=msg.was_compressed)
        assert decoded == dataclasses.replace(msg, store_size=len(record))
        assert encode_message(decoded) == record
    assert len(decode_messages(b"".join(records), decompress=False)) == len(msgs)


@given(st.binary(max_size=400))
def test_random_bytes_raise_only_protocol_error(data):
    with contextlib.suppress(ProtocolError):
        decode_messages(data)


@given(st.sampled_from(ALL_RECORDS), st.data())
def test_truncated_real_records_raise_protocol_error(record, data):
    cut = data.draw(st.integers(1, len(record) - 1))
    with pytest.raises(ProtocolError):
        decode_messages(record[:cut])


@given(st.sampled_from(ALL_RECORDS), st.lists(st.tuples(st.integers(0, 120), st.integers(0, 255)), max_size=6))
def test_corrupted_real_records_decode_or_raise_protocol_error(record, patches):
    corrupted = bytearray(record)
    for offset, value in patches:
        corrupted[offset] = value
    with contextlib.suppress(ProtocolError):
        decode_messages(bytes(corrupted))


@given(st.sampled_from(ALL_RECORDS), st.sampled_from([0, 84]), int32)
def test_any_store_size_or_body_length_decodes_or_raises_protocol_error(record, offset, value):
    with contextlib.suppress(ProtocolError):
        decode_messages(with_int(record, offset, value))


@given(hosts(), st.integers(0, 2**63 - 1))
def test_offset_msg_ids_round_trip(host, offset):
    assert decode_offset_msg_id(create_offset_msg_id(host, offset)) == (host, offset)


# --- speed ------------------------------------------------------------------------------------------------------


def test_decoding_a_32_message_pull_body_takes_well_under_a_millisecond_per_message():
    plain = raw_records("PULL_MESSAGE_compressed_body")[:-1]
    body = b"".join(itertools.islice(itertools.cycle(plain), 31)) + COMPRESSED_RECORD
    best = min(_time(decode_messages, body) for _ in range(5))
    assert best / 32 < 0.0002


def _time(function, argument) -> float:
    started = time.perf_counter()
    function(argument)
    return time.perf_counter() - started

"""monitor.trace.records writes trace records and a trace message's KEYS exactly as RocketMQ 4.9.4's Java client
does (TraceDataEncoder.encoderFromContextBean, AsyncTraceDispatcher): the real captured trace message is rewritten
byte for byte from its decoded records, and every layout reads back as written."""

from __future__ import annotations

import zlib

import pytest

from monitor.trace.records import TraceRecord, TraceType, decode_records, encode_record, trace_message_keys
from tests.fixtures import captured_request

C, F = "\u0001", "\u0002"
MSG = "7F0000016CA35FFD2B276C5640FE0000"


def captured_properties() -> dict[str, str]:
    text = captured_request("SEND_MESSAGE_V2_trace_record").ext_fields["i"]
    return dict(part.split(C, 1) for part in text.split(F) if part)


def test_the_real_java_trace_message_is_rewritten_byte_for_byte():
    body = zlib.decompress(captured_request("SEND_MESSAGE_V2_trace_record").body).decode()
    records = decode_records(body)

    assert "".join(encode_record(record) for record in records) == body
    assert trace_message_keys(records) == captured_properties()["KEYS"]  # Java's HashSet order, 1004 keys


PUB = TraceRecord(
    TraceType.Pub, MSG, timestamp=1795308792062, region_id="DefaultRegion", group="pg_java", topic="TopicTest",
    tags="TagA", keys="KEY_java_0", store_host="127.0.0.1:10911", body_length=27, cost_ms=32, msg_type="Delay_Msg",
    offset_msg_id="", success=True,
)  # fmt: skip
SUB_BEFORE = TraceRecord(
    TraceType.SubBefore, MSG, timestamp=1795308793000, region_id="DefaultRegion", group="cg_test",
    request_id="REQ1", retry_times=2, keys="KEY_java_0",
)  # fmt: skip
SUB_AFTER = TraceRecord(
    TraceType.SubAfter, MSG, request_id="REQ1", cost_ms=5, success=False, keys="KEY_java_0", context_code=2,
    timestamp=1795308793005, group="cg_test",
)  # fmt: skip
END_TRANSACTION = TraceRecord(
    TraceType.EndTransaction, MSG, timestamp=1795308792070, region_id="DefaultRegion", group="pg_tx",
    topic="TopicTest", tags="TagA", keys="KEY_java_0", store_host="127.0.0.1:10911", msg_type="Trans_Msg_Half",
    transaction_id="TX1", transaction_state="COMMIT_MESSAGE", from_transaction_check=False,
)  # fmt: skip


@pytest.mark.parametrize("record", [PUB, SUB_BEFORE, SUB_AFTER, END_TRANSACTION], ids=lambda r: r.trace_type.value)
def test_every_4_9_layout_reads_back_as_written(record):
    assert decode_records(encode_record(record)) == [record]


def test_fields_are_written_in_the_java_encoder_s_order():
    assert (
        encode_record(SUB_AFTER)
        == C.join(["SubAfter", "REQ1", MSG, "5", "false", "KEY_java_0", "2", "1795308793005", "cg_test"]) + F
    )
    assert encode_record(PUB).split(C)[11] == "3"  # MessageType.Delay_Msg's ordinal


def test_an_absent_value_is_written_null_as_java_s_string_builder_writes_it():
    text = encode_record(TraceRecord(TraceType.SubBefore, MSG, timestamp=1, region_id="", group="cg",
                                     request_id="R", retry_times=0, keys=None))  # fmt: skip
    assert text.endswith(f"{C}0{C}null{F}")
    (record,) = decode_records(text)
    assert record.keys == "null" and record.key_list == ["null"]  # as Java reads it back


def test_a_recall_record_is_not_written_by_a_4_9_client():
    with pytest.raises(ValueError):
        encode_record(TraceRecord(TraceType.Recall, MSG, timestamp=1, region_id="", group="pg", topic="t"))


def test_the_trace_message_keys_hold_each_id_and_key_once():
    other = TraceRecord(TraceType.SubBefore, "ID2", timestamp=1, region_id="", group="cg", request_id="R",
                        retry_times=0, keys="KEY_java_0 order-9")  # fmt: skip
    keys = trace_message_keys([PUB, SUB_AFTER, other]).split(" ")
    assert sorted(keys) == sorted({MSG, "KEY_java_0", "ID2", "order-9"})

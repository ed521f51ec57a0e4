"""monitor.trace.records reads trace records as RocketMQ's TraceDataEncoder writes them (4.9.4 and 5.x), the real
captured ones exactly; monitor.trace.timeline puts one message's records in order; queryMsgTraceById prints them.

Layouts are written here field by field in the order TraceDataEncoder.encoderFromContextBean appends them.
"""

from __future__ import annotations

import argparse
import zlib

import pytest

from monitor.mqadmin.common import format_date
from monitor.mqadmin.traces import TraceQuery, render_trace
from monitor.remoting.javahash import java_hashmap_order
from monitor.remoting.message import decode_messages
from monitor.trace.reader import client_ip, entries_of
from monitor.trace.records import (
    MalformedTraceRecord,
    TraceRecord,
    TraceType,
    decode_body,
    decode_record,
    decode_records,
)
from monitor.trace.timeline import TraceEntry, build_timeline
from tests.fixtures import captured_request, captured_response

C, F = "\u0001", "\u0002"  # CONTENT_SPLITOR between fields, FIELD_SPLITOR between records
MSG = "7F0000016CA35FFD2B276C5640FE0000"


def record(*fields) -> str:
    return C.join(str(f) for f in fields)


def pub_4_9(msg_id=MSG, cost=32) -> str:
    return record(
        "Pub", 1795308792062, "DefaultRegion", "pg_java", "TopicTest", msg_id, "TagA", "KEY_java_0",
        "127.0.0.1:10911", 27, cost, 0, "7F00000100002A9F00000000000A2C9C", "true",
    )  # fmt: skip


def sub_before(request="REQ1", retry=0, ts=1795308793000, group="cg_test", keys="KEY_java_0") -> str:
    return record("SubBefore", ts, "DefaultRegion", group, request, MSG, retry, keys)


def sub_after(request="REQ1", cost=5, success="true", code=0, ts=1795308793005, group="cg_test") -> str:
    return record("SubAfter", request, MSG, cost, success, "KEY_java_0", code, ts, group)


# --- the captured records ---------------------------------------------------------------------------------------


def test_every_record_the_real_java_producer_sent_is_decoded():
    body = zlib.decompress(captured_request("SEND_MESSAGE_V2_trace_record").body)  # the dispatcher compresses it
    results = decode_body(body)
    assert len(results) == 502 and all(isinstance(r, TraceRecord) for r in results)
    assert results[0] == TraceRecord(
        TraceType.Pub,
        "7F0000016CA35FFD2B276C5640FE0000",
        timestamp=1795308792062,
        region_id="DefaultRegion",
        group="pg_java",
        topic="TopicTest",
        tags="TagA",
        keys="KEY_java_0",
        store_host="127.0.0.1:10911",
        body_length=27,
        cost_ms=32,
        msg_type="Normal_Msg",
        offset_msg_id="7F00000100002A9F00000000000A2C9C",
        success=True,
    )
    assert results[-1] == TraceRecord(
        TraceType.Pub,
        "7F0000016CA35FFD2B276C56435503EA",
        timestamp=1795308792661,
        region_id="DefaultRegion",
        group="pg_java",
        topic="TopicTest",
        tags="TagB",
        keys="KEY_java_501",
        store_host="127.0.0.1:10911",
        body_length=29,
        cost_ms=1,
        msg_type="Normal_Msg",
        offset_msg_id="7F00000100002A9F00000000000BDC41",
        success=True,
    )
    # The trace message's KEYS are the traced messages' ids and keys (TraceTransferBean.transKey).
    keys = set(captured_request("SEND_MESSAGE_V2_trace_record").ext_fields["i"].split(F)[0].split(C)[1].split(" "))
    assert keys == {r.msg_id for r in results} | {k for r in results for k in r.key_list}


def test_the_trace_topic_answer_mqadmin_read_holds_the_message_s_pub():
    (message,) = decode_messages(captured_response("QUERY_MESSAGE_trace_topic").body)
    entries, malformed = entries_of([message])
    assert malformed == [] and len(entries) == 502
    timeline = build_timeline(MSG, entries)
    (pub,) = timeline.pubs
    assert (pub.producer_group, pub.client_host, pub.send_time, pub.cost_ms, pub.success) == (
        "pg_java",
        "127.0.0.1",  # the trace message's born host, as mqadmin shows it
        1795308792062,
        32,
        True,
    )
    assert (pub.store_host, pub.msg_type, pub.topic, pub.tags, pub.keys) == (
        "127.0.0.1:10911",
        "Normal_Msg",
        "TopicTest",
        "TagA",
        "KEY_java_0",
    )
    assert timeline.consumers == {} and timeline.missing_legs(["cg_test"]) == ["cg_test"]


# --- layouts ------------------------------------------------------------------------------------------------------


def test_a_4_9_consume_pair_is_decoded_field_by_field():
    before, after = decode_records(sub_before(retry=2) + F + sub_after(code=4, success="false") + F)
    assert before == TraceRecord(
        TraceType.SubBefore,
        MSG,
        timestamp=1795308793000,
        region_id="DefaultRegion",
        group="cg_test",
        request_id="REQ1",
        retry_times=2,
        keys="KEY_java_0",
    )
    assert after == TraceRecord(
        TraceType.SubAfter,
        MSG,
        request_id="REQ1",
        cost_ms=5,
        success=False,
        keys="KEY_java_0",
        context_code=4,
        timestamp=1795308793005,
        group="cg_test",
    )
    assert after.context_name == "FAILED"


def test_older_and_cloud_sub_after_layouts_leave_out_time_and_group():
    old = decode_record(record("SubAfter", "REQ1", MSG, 5, "true", "k"))  # before contextCode
    cloud = decode_record(record("SubAfter", "REQ1", MSG, 5, "true", "k", 1) + C)  # 5.x, AccessChannel.CLOUD
    assert (old.context_code, old.timestamp, old.group) == (None, None, None)
    assert (cloud.context_code, cloud.context_name, cloud.timestamp, cloud.group) == (1, "TIME_OUT", None, None)


def test_pub_layouts_before_offset_msg_id_and_with_client_host():
    old = decode_record(record("Pub", 1, "r", "pg", "T", MSG, "t", "k", "h:1", 10, 3, 3, "false"))
    assert (old.offset_msg_id, old.success, old.msg_type) == ("", False, "Delay_Msg")
    shortest = decode_record(record("Pub", 1, "r", "pg", "T", MSG, "t", "k", "h:1", 10, 3, 0))
    assert shortest.success is True  # TraceContext's default when the field is absent
    with_host = decode_record(pub_4_9() + C + "10.0.0.7")
    assert with_host.client_host == "10.0.0.7" and with_host.extra == ()


def test_5_x_appended_and_unknown_trailing_fields_are_kept_aside():
    results = decode_records(
        F.join([pub_4_9() + C + "10.0.0.7" + C + "future", sub_before() + C + "x" + C + "y", sub_after() + C + "z"])
    )
    assert [r.extra for r in results] == [("future",), ("x", "y"), ("z",)]
    assert results[0].offset_msg_id == "7F00000100002A9F00000000000A2C9C"


def test_a_5_x_order_message_and_a_recall():
    order = decode_record(record("Pub", 1, "r", "pg", "T", MSG, "t", "k", "h:1", 10, 3, 4, "off", "true"))
    assert order.msg_type == "Order_Msg"
    recall = decode_record(record("Recall", 1795308799000, "DefaultRegion", "pg", "TopicTest", MSG, "true"))
    assert recall == TraceRecord(
        TraceType.Recall,
        MSG,
        timestamp=1795308799000,
        region_id="DefaultRegion",
        group="pg",
        topic="TopicTest",
        success=True,
    )


def test_an_end_transaction_record():
    text = record(
        "EndTransaction", 1795308795000, "DefaultRegion", "pg_tx", "TopicTest", MSG, "TagA", "KEY_java_0",
        "127.0.0.1:10911", 2, "7F00000100002A9F0000000000000001", "COMMIT_MESSAGE", "false",
    )  # fmt: skip
    assert decode_record(text) == TraceRecord(
        TraceType.EndTransaction,
        MSG,
        timestamp=1795308795000,
        region_id="DefaultRegion",
        group="pg_tx",
        topic="TopicTest",
        tags="TagA",
        keys="KEY_java_0",
        store_host="127.0.0.1:10911",
        msg_type="Trans_msg_Commit",
        transaction_id="7F00000100002A9F0000000000000001",
        transaction_state="COMMIT_MESSAGE",
        from_transaction_check=False,
    )


def test_a_sub_before_whose_empty_keys_java_split_drops_reads_as_no_keys():
    result = decode_record(sub_before(keys=""))
    assert isinstance(result, TraceRecord) and result.keys == "" and result.key_list == []


# --- malformed records --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (record("Pub", 1, "r", "pg", "T", MSG), "Pub record has 6 fields, at least 12 expected"),
        (pub_4_9().replace("1795308792062", "yesterday"), "timeStamp 'yesterday' is not a number"),
        (pub_4_9(cost="1_000"), "costTime '1_000' is not a number"),
        (pub_4_9(cost=2**31), "costTime '2147483648' is out of range"),
        (record("Pub", 1, "r", "pg", "T", MSG, "t", "k", "h:1", 10, 3, 9, "o", "true"), "msgType 9 is not a"),
        (sub_before(retry=" 1"), "retryTimes ' 1' is not a number"),
        (record("EndTransaction", *["1"] * 10, "COMMITTED", "true"), "transactionState 'COMMITTED' is not a"),
        (record("Nudge", 1, 2), "unknown trace type 'Nudge'"),
    ],
)
def test_a_malformed_record_is_reported_in_its_place(text, error):
    good = pub_4_9()
    results = decode_records(F.join([good, text, good]))
    assert [type(r) for r in results] == [TraceRecord, MalformedTraceRecord, TraceRecord]
    assert results[1].text == text and results[1].error.startswith(error)


def test_garbage_never_raises_out_of_a_batch():
    body = bytes(range(256)) * 4 + (F + C + F + "SubAfter" + C + F).encode() + b"\xff\xfe"
    results = decode_body(body)
    assert results and all(isinstance(r, MalformedTraceRecord) for r in results)


# --- timeline -----------------------------------------------------------------------------------------------------


def entries(*texts, host="10.0.0.1"):
    return [TraceEntry(r, host) for r in decode_records(F.join(texts)) if isinstance(r, TraceRecord)]


def test_consume_attempts_pair_by_request_id_per_group_and_name_the_missing_groups():
    timeline = build_timeline(
        MSG,
        entries(
            pub_4_9(cost=1500),
            sub_after("R2", cost=3, ts=1795308803003),
            sub_before("R1", 0),
            sub_before("R2", 1, ts=1795308803000),
            sub_after("R1", cost=2000, success="false", code=4),
            sub_before("R3", 0, group="cg_other"),  # begun, not finished
            pub_4_9(msg_id="7F000001000000000000000000000001"),  # another message of the same batch
        ),
    )
    (pub,) = timeline.pubs
    first, retry = timeline.consumers["cg_test"]
    assert (first.request_id, first.retry_times, first.success, first.context_name) == ("R1", 0, False, "FAILED")
    assert (retry.request_id, retry.retry_times, retry.success, retry.cost_ms) == ("R2", 1, True, 3)
    (pending,) = timeline.consumers["cg_other"]
    assert not pending.done and pending.cost_ms is None
    assert timeline.consumed_by() == ["cg_test"]
    assert timeline.missing_legs(["cg_test", "cg_other", "cg_third"]) == ["cg_other", "cg_third"]
    assert timeline.slow_legs(1000) == [pub, first]
    assert timeline.slow_legs(5000) == []


def test_client_ip_of_a_born_host():
    assert [client_ip("127.0.0.1:49540"), client_ip("[::1]:49540"), client_ip("host")] == ["127.0.0.1", "::1", "host"]


# --- queryMsgTraceById ----------------------------------------------------------------------------------------


def test_the_cli_prints_mqadmin_s_rows_with_its_printf_widths():
    timeline = build_timeline(
        MSG, entries(pub_4_9(), sub_before("R1"), sub_after("R1", cost=7), sub_after("R9", success="false"))
    )
    text = render_trace(TraceQuery(timeline), argparse.Namespace())
    sent, consumed, failed = format_date(1795308792062), format_date(1795308793005), format_date(1795308793005)
    assert text.splitlines() == [
        "#Type      #ProducerGroup       #ClientHost          #SendTime            #CostTimes #Status   ",
        f"Pub        pg_java              10.0.0.1             {sent:<20} 32ms       success   ",
        "",
        "#Type      #ConsumerGroup       #ClientHost          #ConsumerTime        #CostTimes #Status   ",
        f"Sub        cg_test              10.0.0.1             {consumed:<20} 7ms        success   ",
        f"Sub        cg_test              10.0.0.1             {failed:<20} 5ms        failed    ",
        "",
    ]
    assert text.endswith("\n\n")


def test_consumer_groups_come_in_java_hashmap_order():
    # The orders jshell printed for `new HashMap<String, Integer>(16)` with these keys put in this order; the
    # second one grows the map twice.
    groups = ["x", "GroupZ", "cg_a", "cg_b", "cg_trace_real", "cg_test"]
    assert java_hashmap_order(groups) == ["cg_test", "x", "cg_a", "GroupZ", "cg_b", "cg_trace_real"]
    many = java_hashmap_order([f"group_{i}" for i in range(20)])
    assert many == [f"group_{i}" for i in (9, 8, 19, 5, 17, 4, 18, 7, 15, 6, 16, 1, 13, 0, 14, 3, 11, 2, 12, 10)]

"""Specification of monitor.remoting.fastjson against real RocketMQ 4.9.4 captures.

Java peers write bodies with fastjson, which is not always JSON (unquoted integer keys, objects as keys); the C++
client answers with jsoncpp pretty-printing. Every captured JSON-ish body must parse, the quirks must come out as
``int`` / ``ObjectKey`` keys, and every compact body a Java peer wrote must be reproduced byte for byte by ``dumps``.
"""

import base64
import contextlib
import json
import math
import pickle
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.remoting.errors import ProtocolError
from monitor.remoting.fastjson import MAX_DEPTH, ObjectKey, dumps, loads
from tests.fixtures import FIXTURES_DIR


def captured_frames() -> list[tuple[str, dict]]:
    """(``<fixture>:<request|response>``, frame) for every frame in the fixture directory."""
    frames = []
    for path in sorted(FIXTURES_DIR.glob("*.json")):
        capture = json.loads(path.read_text())
        frames += [(f"{path.stem}:{side}", capture[side]) for side in ("request", "response") if capture.get(side)]
    return frames


FRAMES = captured_frames()
TEXT_BODIES = {name: frame["body_text"] for name, frame in FRAMES if frame.get("body_text")}
BINARY_BODIES = {name: base64.b64decode(frame["body_b64"]) for name, frame in FRAMES if frame.get("body_b64")}
JSON_BODIES = {name: text for name, text in TEXT_BODIES.items() if text.lstrip()[:1] in ("{", "[")}
OTHER_TEXT_BODIES = {name: text for name, text in TEXT_BODIES.items() if name not in JSON_BODIES}
# What fastjson itself wrote: bodies and JSON headers of frames whose header says the sender is Java.
JAVA = {name for name, frame in FRAMES if frame["header"].get("language") == "JAVA"}
JAVA_JSON_BODIES = {name: text for name, text in JSON_BODIES.items() if name in JAVA}
JAVA_HEADERS = {
    name: frame["header_raw_text"] for name, frame in FRAMES if name in JAVA and frame.get("header_raw_text")
}
JSONCPP_BODIES = {name: text for name, text in JSON_BODIES.items() if name not in JAVA}


def body(name: str) -> dict:
    return loads(JSON_BODIES[name].encode())


def mq(queue_id: int, topic: str = "TopicTest") -> ObjectKey:
    return ObjectKey(brokerName="broker-a", queueId=queue_id, topic=topic)


def typed(value: Any) -> Any:
    """``value`` with every type and key order made visible, so that ``1 == 1.0 == True`` and ``0.0 == -0.0`` differ."""
    if isinstance(value, Mapping):
        return type(value).__name__, [(typed(key), typed(item)) for key, item in value.items()]
    if isinstance(value, list | tuple):
        return type(value).__name__, [typed(item) for item in value]
    if isinstance(value, float):
        return "float", value.hex()
    return type(value).__name__, value


def test_the_fixture_directory_has_the_bodies_these_tests_rely_on():
    assert len(JSON_BODIES) >= 35
    assert len(JAVA_JSON_BODIES) >= 30
    assert len(JSONCPP_BODIES) >= 3
    assert len(JAVA_HEADERS) >= 50


# --- the captured bodies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(JSON_BODIES))
def test_every_captured_json_body_parses(name):
    assert isinstance(loads(JSON_BODIES[name].encode()), dict)


@pytest.mark.parametrize("name", sorted(OTHER_TEXT_BODIES))
def test_captured_text_bodies_that_are_not_json_are_rejected(name):
    """Properties text (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG) and message payloads."""
    with pytest.raises(ProtocolError):
        loads(OTHER_TEXT_BODIES[name].encode())


@pytest.mark.parametrize("name", sorted(BINARY_BODIES))
def test_captured_binary_bodies_are_rejected(name):
    with pytest.raises(ProtocolError):
        loads(BINARY_BODIES[name])


def test_unquoted_integer_keys_become_ints():
    cluster = body("GET_BROKER_CLUSTER_INFO:response")
    assert cluster["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: "127.0.0.1:10911", 1: "127.0.0.1:11911"}
    assert body("GET_ALL_DELAY_OFFSET:response") == {"offsetTable": {3: 684}}
    offsets = body("GET_ALL_CONSUMER_OFFSET:response")["offsetTable"]
    assert offsets["TopicTest@cg_test"] == {0: 1181, 1: 1180, 2: 1180, 3: 1181, 4: 1182, 5: 1181, 6: 1179, 7: 1179}


def test_quoted_integer_keys_stay_strings_and_otherwise_both_route_forms_agree():
    standard = body("GET_ROUTEINFO_BY_TOPIC:response")
    fastjson = body("GET_ROUTEINFO_BY_TOPIC_old_client_version:response")
    assert standard["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911", "1": "127.0.0.1:11911"}
    assert fastjson["brokerDatas"][0]["brokerAddrs"] == {0: "127.0.0.1:10911", 1: "127.0.0.1:11911"}
    addresses = fastjson["brokerDatas"][0]["brokerAddrs"]
    fastjson["brokerDatas"][0]["brokerAddrs"] = {str(broker_id): address for broker_id, address in addresses.items()}
    assert fastjson == standard


def test_object_keys_become_object_keys_equal_to_the_written_object():
    stats = body("GET_CONSUME_STATS:response")
    first_key, first_value = next(iter(stats["offsetTable"].items()))
    assert isinstance(first_key, ObjectKey)
    assert first_key == {"brokerName": "broker-a", "queueId": 0, "topic": "%RETRY%cg_test"}
    assert first_value == {"brokerOffset": 461, "consumerOffset": 461, "lastTimestamp": 1795308865274}
    assert stats["offsetTable"][mq(3)]["brokerOffset"] == 652
    assert stats["consumeTps"] == 27.683333333333334
    assert len(stats["offsetTable"]) == 9


def test_object_keys_with_scalar_values():
    reset = body("INVOKE_BROKER_TO_RESET_OFFSET:response")["offsetTable"]
    assert reset == {mq(q): offset for q, offset in enumerate([902, 902, 902, 903, 904, 902, 901, 901])}
    assert body("RESET_CONSUMER_CLIENT_OFFSET_broker_to_client:request")["offsetTable"] == reset


def test_object_keys_nested_in_lists_of_single_entry_maps():
    stats = body("GET_BROKER_CONSUME_STATS:response")
    groups = {group: entries for item in stats["consumeStatsList"] for group, entries in item.items()}
    assert groups[""] == [] and groups["SELF_TEST_C_GROUP"] == []
    retry, topic = groups["cg_test"]
    assert retry["offsetTable"] == {
        mq(0, "%RETRY%cg_test"): {"brokerOffset": 477, "consumerOffset": 476, "lastTimestamp": 1795309031685}
    }
    assert topic["offsetTable"][mq(7)]["consumerOffset"] == 704
    assert stats["totalDiff"] == 6


def test_jsoncpp_pretty_printed_body_with_object_keys_parses():
    info = body("GET_CONSUMER_RUNNING_INFO_cpp_client:response")
    assert list(info["mqTable"]) == [mq(4), mq(5), mq(6), mq(7)]
    assert info["mqTable"][mq(4)]["lastLockTimestamp"] == "8243112819376136762"
    assert info["mqTable"][mq(4)]["droped"] is False
    assert info["properties"]["PROP_CLIENT_VERSION"] == "V3_1_8"
    assert body("GET_CONSUMER_RUNNING_INFO_broker_to_cpp_client:response") == info


def test_java_consumer_running_info_has_the_same_shape_as_the_cpp_one():
    java = body("GET_CONSUMER_RUNNING_INFO:response")
    assert mq(0, "%RETRY%cg_test") in java["mqTable"]
    assert java["mqTable"][mq(3)]["commitOffset"] == 652


def test_jsoncpp_body_with_trailing_newline_parses():
    assert JSON_BODIES["HEART_BEAT_cpp_client:request"].endswith("\n")
    heartbeat = body("HEART_BEAT_cpp_client:request")
    assert heartbeat["consumerDataSet"][0]["consumeType"] == 1


@pytest.mark.parametrize("name", sorted(JAVA_JSON_BODIES))
def test_compact_java_bodies_round_trip_exactly(name):
    text = JAVA_JSON_BODIES[name]
    assert dumps(loads(text.encode())) == text


@pytest.mark.parametrize("name", sorted(JAVA_HEADERS))
def test_java_json_headers_round_trip_exactly(name):
    """Headers are fastjson output too, and SEND headers carry \\u0001/\\u0002-escaped message properties."""
    text = JAVA_HEADERS[name]
    assert dumps(loads(text)) == text


def test_escaped_control_characters_in_a_real_header_decode():
    header = loads(JAVA_HEADERS["SEND_MESSAGE_V2:request"])
    assert header["extFields"]["i"].startswith("KEYS\x01KEY_java_0\x02UNIQ_KEY\x01")


# --- ObjectKey --------------------------------------------------------------------------------------------------


def test_object_key_is_hashable_and_equal_by_content_regardless_of_order():
    key = ObjectKey({"topic": "TopicTest", "queueId": 0, "brokerName": "broker-a"})
    assert key == mq(0) and hash(key) == hash(mq(0))
    assert key == {"brokerName": "broker-a", "queueId": 0, "topic": "TopicTest"}
    assert key != mq(1) and key != "TopicTest"
    assert {mq(0): "a"}[key] == "a"


def test_object_key_keeps_its_order_for_writing():
    assert dumps({ObjectKey(topic="t", queueId=1): 5}) == '{{"topic":"t","queueId":1}:5}'


def test_object_key_is_read_only():
    key = mq(0)
    with pytest.raises(TypeError):
        key["queueId"] = 1  # type: ignore[index]
    assert not hasattr(key, "__setitem__")


def test_object_key_freezes_nested_values_and_still_equals_the_plain_form():
    key = ObjectKey(a=[1, {"b": [2]}])
    assert key["a"] == (1, ObjectKey(b=(2,)))
    assert key == {"a": [1, {"b": [2]}]}
    assert hash(key) == hash(ObjectKey(a=(1, ObjectKey(b=(2,)))))


def test_object_key_repr_is_readable():
    assert repr(mq(2)) == "ObjectKey({'brokerName': 'broker-a', 'queueId': 2, 'topic': 'TopicTest'})"


def test_object_key_pickles():
    key = mq(5)
    assert pickle.loads(pickle.dumps(key)) == key
    assert hash(pickle.loads(pickle.dumps(key))) == hash(key)


# --- writing ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "java"),
    [
        (27.683333333333334, "27.683333333333334"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1.25e-5, "1.25E-5"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (-2.5e-10, "-2.5E-10"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
    ],
)
def test_dumps_writes_floats_like_java_double_to_string(number, java):
    assert dumps(number) == java
    assert loads(java) == number


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_dumps_writes_non_finite_floats_as_null_like_fastjson(number):
    assert dumps([number]) == "[null]"


def test_dumps_escapes_strings_like_fastjson():
    text = '"\\/\b\t\n\f\r\x00\x01\x0b\x1f\x7f\x9f\xa0é中\u2028\u2029😀'
    expected = r'"\"\\/\b\t\n\f\r\u0000\u0001\u000B\u001F\u007F\u009F' + "\xa0é中" + r"\u2028\u2029" + '😀"'
    assert dumps(text) == expected
    assert loads(expected) == text


def test_dumps_writes_keys_by_type():
    value = {"0": "a", 0: "b", -1: None, mq(0): [True, False]}
    expected = '{"0":"a",0:"b",-1:null,{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:[true,false]}'
    assert dumps(value) == expected


def test_dumps_accepts_tuples_and_other_mappings_and_big_ints():
    assert dumps((1, ObjectKey(a=2**70))) == '[1,{"a":1180591620717411303424}]'


@pytest.mark.parametrize("value", [{1.5: 1}, {True: 1}, {None: 1}, {(1, 2): 1}, b"bytes", {1, 2}, object()])
def test_dumps_rejects_what_fastjson_bodies_cannot_hold(value):
    with pytest.raises(TypeError):
        dumps(value)


# --- rejecting malformed input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "position"),
    [
        ("", "char 0"),
        ("   ", "char 3"),
        ('{"a":1', "char 6"),
        ('{"a":1}x', "char 7"),
        ('{"a" 1}', "char 4"),
        ("{a:1}", "char 1"),
        ("{1.5:1}", "char 1"),
        ("{01:1}", "char 1"),
        ("[1,]", "char 3"),
        ("[1 2]", "char 2"),
        ('{"a":"x', "char 5"),
        ('["\\q"]', "char 2"),
        ('["a\nb"]', "char 3"),
        ("[tru]", "char 1"),
        ("[NaN]", "char 1"),
        ("[-Infinity]", "char 1"),
        ("{{1:2}}", "char 6"),
        ("\ufeff{}", "char 0"),
        (b'{"a":"\xff"}', "byte 6"),
        (b'{"a":"\xe4\xb8"}', "byte 6"),
        ("[" + "9" * 5000 + "]", "char 1"),
        ("{0:" + "9" * 5000 + "}", "char 1"),
    ],
)
def test_malformed_input_raises_protocol_error_naming_the_position(data, position):
    with pytest.raises(ProtocolError, match=position):
        loads(data)


def test_integers_are_exact_at_any_size_python_allows():
    assert loads("[" + str(2**200) + "]") == [2**200]
    assert loads("{0:" + str(-(2**100)) + "}") == {0: -(2**100)}


@pytest.mark.parametrize("text", ["[" * 100_000, "{" * 100_000, '{"a":' * 20_000, "[{0:" * 20_000, "{{" * 50_000])
def test_absurd_nesting_raises_protocol_error(text):
    with pytest.raises(ProtocolError, match="nesting deeper than"):
        loads(text)


def test_nesting_below_the_limit_parses_even_with_odd_keys():
    depth = MAX_DEPTH - 2
    assert loads("[" * depth + "{0:1}" + "]" * depth) is not None
    assert loads("{0:" * depth + "1" + "}" * depth) is not None


def test_odd_key_deep_under_large_standard_content_parses_correctly():
    chunk = json.dumps(["x" * 10] * 300)
    text = f"[{chunk}," * 200 + "{1:{2:3}}" + "]" * 200
    value = loads(text)
    for _ in range(200):
        assert value[0] == json.loads(chunk)
        value = value[1]
    assert value == {1: {2: 3}}


def test_a_deep_caller_stack_gets_protocol_error_not_recursion_error():
    def call_at_depth(depth: int) -> Any:
        return call_at_depth(depth - 1) if depth else loads("[" * (MAX_DEPTH - 1) + "{0:1}" + "]" * (MAX_DEPTH - 1))

    with pytest.raises(ProtocolError, match="nested too deeply"):
        call_at_depth(sys.getrecursionlimit() - MAX_DEPTH)


def test_loads_refuses_non_text_arguments():
    with pytest.raises(TypeError):
        loads(123)  # type: ignore[arg-type]


def test_loads_accepts_bytes_like_input():
    assert loads(bytearray(b"{0:1}")) == loads(memoryview(b"{0:1}")) == {0: 1}


# --- properties -------------------------------------------------------------------------------------------------

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
OBJECT_KEYS = st.builds(ObjectKey, st.dictionaries(st.text(max_size=8), SCALARS | st.lists(SCALARS), max_size=4))
KEYS = st.text() | st.integers() | OBJECT_KEYS
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5), max_leaves=25
)
STANDARD_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=25
)
JSONISH = st.text(alphabet='{}[]:,"0123456789-+.eE tfrueanl\\u\n', max_size=40)
# Generating nested values is the slow part of this file; fewer examples keep it to a few seconds.
QUICK = settings(max_examples=60)


def jsoncpp_style(value: Any, indent: str = "") -> str:
    """``value`` pretty-printed the way the C++ client writes (``"key" : value``, one member per line)."""
    inner = indent + "   "
    if isinstance(value, Mapping) and value:
        members = [f"{inner}{jsoncpp_style(k, inner)} : {jsoncpp_style(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(members) + f"\n{indent}}}"
    if isinstance(value, list | tuple) and value:
        return "[\n" + ",\n".join(inner + jsoncpp_style(item, inner) for item in value) + f"\n{indent}]"
    return dumps(value)


@QUICK
@given(VALUES)
def test_loads_gives_back_what_dumps_wrote(value):
    assert typed(loads(dumps(value))) == typed(value)


@QUICK
@given(VALUES)
def test_loads_reads_jsoncpp_style_pretty_printing(value):
    assert typed(loads(jsoncpp_style(value) + "\n")) == typed(value)


@QUICK
@given(STANDARD_VALUES)
def test_standard_json_parses_exactly_as_the_stdlib_does(value):
    text = json.dumps(value, indent=1)
    assert typed(loads(text)) == typed(json.loads(text))
    assert typed(loads("{0:" + text + "}")[0]) == typed(json.loads(text))


@given(st.text() | st.binary() | JSONISH)
def test_arbitrary_input_parses_or_raises_protocol_error(data):
    with contextlib.suppress(ProtocolError):
        loads(data)


@given(st.sampled_from(sorted(JSON_BODIES)), st.data())
def test_damaged_captured_bodies_parse_or_raise_protocol_error(name, data):
    text = JSON_BODIES[name]
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, min(len(text), start + 5)))
    with contextlib.suppress(ProtocolError):
        loads(text[:start] + data.draw(JSONISH) + text[end:])


@settings(max_examples=300)
@given(st.sampled_from(sorted(JSON_BODIES)), st.data())
def test_truncated_captured_bodies_raise_protocol_error(name, data):
    raw = JSON_BODIES[name].rstrip().encode()
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(ProtocolError):
        loads(raw[:cut])

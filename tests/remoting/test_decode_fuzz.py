"""Whatever bytes a peer sends, the wire decoders raise ProtocolError and nothing else (issue 15, finding 9).

Covered: the frame decoder (length, serialize type, JSON and ROCKETMQ headers, extFields), the response headers and
every body the admin client decodes (Properties text, route data, stats, offsets, running info, message records).
The inputs are arbitrary bytes, real captured frames and bodies from ``../shared/fixtures/rocketmq-4.9`` mutated
(bytes changed, inserted, deleted, cut, or a value replaced by a hostile token such as a 5000-digit number, deep
nesting or invalid UTF-8), and generated JSON headers. Every real capture still decodes exactly.

Budget: 1,500 generated examples in all (300 + 400 + 500 + 300, ``deadline=None``); the module runs in seconds.
"""

import base64
import contextlib
import json
import struct
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.codes import RequestCode, ResponseCode, SerializeType
from monitor.remoting.command import FrameDecoder, decode_frame, encode_frame
from monitor.remoting.errors import ProtocolError
from monitor.remoting.message import decode_messages
from tests.fixtures import FIXTURES_DIR

FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _runtime_info(body: bytes) -> b.BrokerRuntimeInfo:
    info = b.BrokerRuntimeInfo.from_kvtable(b.KVTable.decode(body))
    _ = info.runtime_seconds, info.commit_log_disk_ratio_by_path, info.schedule_message_offsets
    return info


# What the admin client (monitor/remoting/admin/) does with a successful answer to each request code.
BODY_DECODERS: dict[int, Callable[[bytes], object]] = {
    RequestCode.GET_BROKER_CONFIG: b.parse_properties,
    RequestCode.GET_NAMESRV_CONFIG: b.parse_properties,
    RequestCode.GET_BROKER_CLUSTER_INFO: b.ClusterInfo.decode,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: b.TopicList.decode,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: b.TopicRouteData.decode,
    RequestCode.GET_ALL_TOPIC_CONFIG: b.TopicConfigSerializeWrapper.decode,
    RequestCode.GET_TOPIC_STATS_INFO: b.TopicStatsTable.decode,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: b.GroupList.decode,
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: b.SubscriptionGroupWrapper.decode,
    RequestCode.GET_BROKER_RUNTIME_INFO: _runtime_info,
    RequestCode.VIEW_BROKER_STATS_DATA: b.BrokerStatsData.decode,
    RequestCode.GET_BROKER_CONSUME_STATS: b.ConsumeStatsList.decode,
    RequestCode.GET_CONSUME_STATS: b.ConsumeStats.decode,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: b.ConsumerConnection.decode,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: b.ProducerConnection.decode,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: b.GetConsumerListByGroupResponseBody.decode,
    RequestCode.GET_CONSUMER_RUNNING_INFO: b.ConsumerRunningInfo.decode,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: b.ResetOffsetBody.decode,
    RequestCode.GET_ALL_CONSUMER_OFFSET: b.ConsumerOffsetSerializeWrapper.decode,
    RequestCode.GET_ALL_DELAY_OFFSET: b.DelayOffsetSerializeWrapper.decode,
    RequestCode.PULL_MESSAGE: decode_messages,
    RequestCode.QUERY_MESSAGE: decode_messages,
    RequestCode.VIEW_MESSAGE_BY_ID: decode_messages,
}
# Answers whose figures travel in extFields.
RESPONSE_HEADERS: dict[int, type[h.CommandHeader]] = {
    RequestCode.GET_BROKER_CONFIG: h.GetBrokerConfigResponseHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: h.OffsetResponseHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: h.QueryConsumerOffsetResponseHeader,
    RequestCode.PULL_MESSAGE: h.PullMessageResponseHeader,
    RequestCode.QUERY_MESSAGE: h.QueryMessageResponseHeader,
    RequestCode.SEND_MESSAGE: h.SendMessageResponseHeader,
    RequestCode.SEND_MESSAGE_V2: h.SendMessageResponseHeader,
}


def _captures() -> list[dict]:
    return [json.loads(path.read_text()) for path in sorted(FIXTURES_DIR.glob("*.json"))]


CAPTURES = _captures()
FRAMES = [
    base64.b64decode(capture[side]["frame_b64"])
    for capture in CAPTURES
    for side in ("request", "response")
    if capture[side]
]
# (request code, response frame) of every successful answer.
ANSWERS = [
    (capture["code"], base64.b64decode(capture["response"]["frame_b64"]))
    for capture in CAPTURES
    if capture["response"] and capture["response"]["header"]["code"] == ResponseCode.SUCCESS
]
BODIES = [(code, decode_frame(frame).body) for code, frame in ANSWERS if code in BODY_DECODERS]

# Values a hostile or broken peer may put where a token belongs.
HOSTILE = [
    b"9" * 400,  # beyond a double
    b"1" * 5000,  # beyond Python's int-from-text digit limit
    b'"' + b"7" * 5000 + b'"',
    b"[" * 5000,  # nested past any stack
    b"{" * 5000,
    b"-",
    b"--5",
    b"NaN",
    b"1e999",
    b"-0",
    b"1.5",
    b"2147483648",
    b"null",
    b"true",
    b"{}",
    b"[]",
    b'""',
    b"\xff\xfe",
    b'"\\ud800"',
    b"\\u12",
    b"\x00",
    b"{1:2}",
    b'{{"queueId":1}:2}',
    "\u00b2".encode(),  # a digit to str.isdigit(), not to int()
]


@st.composite
def mutated(draw, original: bytes) -> bytes:
    """``original`` with a few random edits; ``value`` (the likeliest) replaces what follows a ``:`` or ``=`` with a
    hostile token, which reaches the value decoders where random bytes mostly break the syntax around them."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "insert", "delete", "truncate", "splice", "value", "value", "value"]))
        pos = draw(st.integers(0, len(data)))
        if kind == "set" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del data[pos:]
        elif kind == "splice":
            data[pos : pos + draw(st.integers(0, 12))] = draw(st.sampled_from(HOSTILE))
        else:
            separators = [i + 1 for i, byte in enumerate(data) if byte in b":="]
            if separators:
                start = draw(st.sampled_from(separators))
                end = start
                while end < len(data) and data[end] not in b",}\n":
                    end += 1
                data[start:end] = draw(st.sampled_from(HOSTILE))
    return bytes(data)


def header_of(frame: bytes) -> bytes:
    (mark,) = struct.unpack_from(">I", frame, 4)
    return frame[8 : 8 + (mark & 0xFFFFFF)]


def reframed(frame: bytes, header: bytes) -> bytes:
    """The frame with its header replaced and both length fields made consistent again (so the header's content
    is what the decoder meets, not a length mismatch)."""
    (mark,) = struct.unpack_from(">I", frame, 4)
    body = frame[8 + (mark & 0xFFFFFF) :]
    return struct.pack(">iI", 4 + len(header) + len(body), (mark & 0xFF000000) | len(header)) + header + body


# Real frames with a mutated header (JSON text or ROCKETMQ binary) inside consistent length fields.
FRAMES_WITH_MUTATED_HEADERS = st.sampled_from(FRAMES).flatmap(
    lambda frame: mutated(header_of(frame)).map(lambda header: reframed(frame, header))
)


def decode_everything(data: bytes, request_code: int | None = None) -> None:
    """Decode a byte stream as the client and the sandbox server would, and whatever came out of it as the admin
    client would; let anything but ProtocolError through."""
    decoder = FrameDecoder(max_frame_length=1 << 20)
    try:
        commands = decoder.feed(data)
    except ProtocolError:
        return
    for cmd in commands:
        for name in cmd.ext_fields or {}:
            cmd.ext(name)
            with contextlib.suppress(ProtocolError):
                cmd.ext_int(name)
        for serialize_type in SerializeType:  # a server answers in the request's serialize type
            response = cmd.make_response()
            response.serialize_type = serialize_type
            encode_frame(response)
        if request_code is not None:
            try:
                if request_code in RESPONSE_HEADERS:
                    RESPONSE_HEADERS[request_code].from_ext_fields(cmd.ext_fields)
                if request_code in BODY_DECODERS:
                    BODY_DECODERS[request_code](cmd.body)
            except ProtocolError:
                pass


def test_every_captured_answer_decodes_exactly_as_the_admin_client_reads_it():
    assert {code for code, _ in BODIES} == set(BODY_DECODERS)  # a capture of every body the admin client reads
    for capture in CAPTURES:
        for side in ("request", "response"):
            if recorded := capture[side]:
                cmd = decode_frame(base64.b64decode(recorded["frame_b64"]))
                header = recorded["header"]
                assert (cmd.code, cmd.opaque, cmd.flag) == (header["code"], header["opaque"], header["flag"])
                assert cmd.ext_fields == header.get("extFields") or (not cmd.ext_fields and not header.get("extFields"))
                assert len(cmd.body) == recorded["body_length"]
    for code, frame in ANSWERS:
        cmd = decode_frame(frame)
        if code in RESPONSE_HEADERS:
            RESPONSE_HEADERS[code].from_ext_fields(cmd.ext_fields)
        if code in BODY_DECODERS and cmd.body:
            BODY_DECODERS[code](cmd.body)
    for code, body in BODIES:
        if BODY_DECODERS[code] is b.parse_properties:
            assert b.format_properties(b.parse_properties(body)).encode() == body  # key=value lines, as sent


@pytest.mark.parametrize(
    "header",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"code":"--5"}',
        '{"code":"\u00b2"}'.encode(),
        b'{"code":' + b"9" * 100 + b"}",
        b'{"code":0,"opaque":2147483648}',
        b'{"code":' + b"1" * 5000 + b"}",
    ],
    ids=["nested-too-deep", "double-minus", "superscript-digit", "huge-code", "opaque-over-int", "5000-digits"],
)
def test_header_values_java_could_not_read_are_protocol_errors(header):
    frame = struct.pack(">iI", 4 + len(header), len(header)) + header
    with pytest.raises(ProtocolError):
        decode_frame(frame)


@pytest.mark.parametrize(
    ("decode", "body"),
    [
        (b.ConsumeStats.decode, b'{"consumeTps":' + b"9" * 400 + b"}"),
        (b.DataVersion.decode, b'{"counter":"' + b"1" * 5000 + b'"}'),
        (b.parse_properties, b"brokerName=br\xf6ker\n"),
    ],
    ids=["number-beyond-double", "integer-text-beyond-digit-limit", "properties-not-utf8"],
)
def test_body_values_java_could_not_read_are_protocol_errors(decode, body):
    with pytest.raises(ProtocolError):
        decode(body)


def test_runtime_figures_a_java_long_cannot_hold_are_unknown():
    info = b.BrokerRuntimeInfo.from_kvtable(
        {"runtime": "[ " + "9" * 5000 + " days, 0 hours, 0 minutes, 0 seconds ]", "commitLogMaxOffset": "9" * 30}
    )
    assert (info.runtime_seconds, info.commit_log_max_offset) == (None, None)


@settings(FUZZ, max_examples=300)
@given(st.binary(max_size=600) | st.sampled_from(FRAMES).flatmap(mutated) | FRAMES_WITH_MUTATED_HEADERS)
def test_frame_decoder_raises_only_protocol_error(data):
    decode_everything(data)


@settings(FUZZ, max_examples=400)
@given(
    st.sampled_from(ANSWERS).flatmap(
        lambda answer: st.tuples(
            st.just(answer[0]),
            mutated(answer[1]) | mutated(header_of(answer[1])).map(lambda header: reframed(answer[1], header)),
        )
    )
)
def test_mutated_captured_answers_raise_only_protocol_error(answer):
    code, data = answer
    decode_everything(data, code)


@settings(FUZZ, max_examples=500)
@given(st.sampled_from(BODIES).flatmap(lambda item: st.tuples(st.just(item[0]), mutated(item[1]))))
def test_mutated_captured_bodies_raise_only_protocol_error(item):
    code, body = item
    with contextlib.suppress(ProtocolError):
        BODY_DECODERS[code](body)


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.from_regex(r"-?[0-9]{1,12}", fullmatch=True)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
HEADER_FIELDS = ["code", "language", "version", "opaque", "flag", "remark", "extFields", "serializeTypeCurrentRPC"]


@settings(FUZZ, max_examples=300)
@given(
    st.fixed_dictionaries(
        {"code": JSON_VALUES}, optional=dict.fromkeys([*HEADER_FIELDS[1:], "other"], JSON_VALUES | st.integers())
    ),
    st.sampled_from([frame for frame in FRAMES if frame[4] == SerializeType.JSON]),
)
def test_generated_json_headers_raise_only_protocol_error(header, frame):
    decode_everything(reframed(frame, json.dumps(header).encode()))

"""The frame codec: every captured frame decodes, Java-written frames re-encode byte for byte, garbage is refused."""

import base64
import contextlib
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monitor.remoting.codes import SerializeType
from monitor.remoting.command import (
    FrameDecoder,
    RemotingCommand,
    decode_frame,
    encode_frame,
    java_hashmap_order,
)
from monitor.remoting.errors import ProtocolError
from tests.fixtures import FIXTURES_DIR


def captured_frames():
    for path in sorted(FIXTURES_DIR.glob("*.json")):
        data = json.loads(path.read_text())
        for side in ("request", "response"):
            if data[side]:
                yield pytest.param(data[side], id=f"{path.stem}:{side}")


@pytest.mark.parametrize("frame", list(captured_frames()))
def test_every_captured_frame_decodes_to_its_recorded_header(frame):
    cmd = decode_frame(base64.b64decode(frame["frame_b64"]))
    header = frame["header"]
    assert cmd.code == header["code"]
    assert cmd.opaque == header["opaque"]
    assert cmd.flag == header["flag"]
    assert cmd.language == header["language"]
    assert cmd.version == header["version"]
    assert cmd.remark == header.get("remark")
    assert cmd.ext_fields == header.get("extFields")
    assert len(cmd.body) == frame["body_length"]
    assert cmd.serialize_type.name == frame["serialize_type"]


def java_written_frames():
    """Frames Java's RemotingCommand wrote (not the C++ client's or the raw-socket probes')."""
    for param in captured_frames():
        header = param.values[0]["header"]
        if header["language"] == "JAVA" and (
            "serializeTypeCurrentRPC" in header or param.values[0]["serialize_type"] == "ROCKETMQ"
        ):
            yield param


@pytest.mark.parametrize("frame", list(java_written_frames()))
def test_java_written_frames_reencode_byte_for_byte(frame):
    raw = base64.b64decode(frame["frame_b64"])
    assert encode_frame(decode_frame(raw)) == raw


def test_binary_rocketmq_header_is_answered_in_kind():
    request = RemotingCommand.request(106, {"topic": "T"}, serialize_type=SerializeType.ROCKETMQ)
    decoded = decode_frame(encode_frame(request))
    assert decoded.serialize_type is SerializeType.ROCKETMQ
    assert decoded.make_response().serialize_type is SerializeType.ROCKETMQ
    assert decoded.ext_fields == {"topic": "T"}


def test_ext_values_read_as_java_strings_whatever_the_client_sent():
    cmd = RemotingCommand(code=11, ext_fields={"queueId": 6, "sysFlag": 7, "topic": "T", "flag": True})
    assert cmd.ext("queueId") == "6"
    assert cmd.ext_int("sysFlag") == 7
    assert cmd.ext("flag") == "true"
    assert cmd.ext("missing", "x") == "x"
    with pytest.raises(ProtocolError):
        RemotingCommand(code=1, ext_fields={"queueId": "seven"}).ext_int("queueId")


def test_hashmap_order_matches_java_for_colliding_buckets():
    # Declared order of PullMessageRequestHeader, as the Java client inserts them.
    declared = ["consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset"]
    declared += ["suspendTimeoutMillis", "subVersion", "expressionType"]
    assert java_hashmap_order(declared) == [
        "queueId",
        "maxMsgNums",
        "sysFlag",
        "suspendTimeoutMillis",
        "commitOffset",
        "topic",
        "queueOffset",
        "expressionType",
        "subVersion",
        "consumerGroup",
    ]


def test_stream_decoder_splits_coalesced_and_fragmented_frames():
    frames = [encode_frame(RemotingCommand.request(28, {"n": str(i)}, body=b"x" * i)) for i in range(5)]
    stream = b"".join(frames)
    decoder = FrameDecoder()
    got = []
    for i in range(0, len(stream), 7):
        got += decoder.feed(stream[i : i + 7])
    assert [c.ext("n") for c in got] == ["0", "1", "2", "3", "4"]
    assert [len(c.body) for c in got] == [0, 1, 2, 3, 4]
    assert decoder.buffered == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (struct.pack(">i", -5), "absurd frame length"),
        (struct.pack(">i", 2**30), "absurd frame length"),
        (struct.pack(">iI", 8, 100) + b"{}" + b"\0" * 2, "header length"),
        (struct.pack(">iI", 6, (7 << 24) | 2) + b"{}", "unknown serialize type"),
        (struct.pack(">iI", 7, 3) + b"{x}", "not valid JSON"),
        (struct.pack(">iI", 6, 2) + b"[]", "not an object"),
        (struct.pack(">iI", 16, 12) + b'{"code":"a"}', "must be an integer"),
        (struct.pack(">iI", 6, (1 << 24) | 2) + b"\0\0", "too short"),
    ],
)
def test_malformed_frames_raise_protocol_error_naming_the_problem(raw, message):
    with pytest.raises(ProtocolError, match=message):
        FrameDecoder().feed(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise_anything_but_protocol_error(data):
    decoder = FrameDecoder(max_frame_length=1 << 20)
    with contextlib.suppress(ProtocolError):
        decoder.feed(data)


@settings(max_examples=200, deadline=None)
@given(
    code=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(0, 2**31 - 1),
    flag=st.integers(0, 3),
    remark=st.none() | st.text(max_size=40),
    ext=st.none() | st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=30), max_size=8),
    body=st.binary(max_size=64),
    serialize=st.sampled_from(list(SerializeType)),
)
def test_any_command_survives_encode_then_decode(code, opaque, flag, remark, ext, body, serialize):
    if serialize is SerializeType.ROCKETMQ and remark == "":
        remark = None  # the binary layout cannot tell an empty remark from none
    if serialize is SerializeType.ROCKETMQ and ext == {}:
        ext = None  # likewise for an empty extFields map
    cmd = RemotingCommand(
        code=code,
        language="JAVA",
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        body=body,
        serialize_type=serialize,
    )
    assert decode_frame(encode_frame(cmd)) == cmd


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_truncated_captured_frames_are_refused_not_misread(data):
    frames = [f.values[0] for f in captured_frames()]
    frame = data.draw(st.sampled_from(frames))
    raw = base64.b64decode(frame["frame_b64"])
    cut = data.draw(st.integers(0, len(raw) - 1))
    decoder = FrameDecoder()
    # A prefix of a frame is never mistaken for a whole command: it is either buffered or refused.
    with contextlib.suppress(ProtocolError):
        assert decoder.feed(raw[:cut]) == []
    # A frame whose length field is honest but whose header was cut short is refused.
    if cut > 8:
        chopped = struct.pack(">i", cut - 4) + raw[4:cut]
        header_length = struct.unpack(">I", raw[4:8])[0] & 0xFFFFFF
        if cut < 8 + header_length:
            with pytest.raises(ProtocolError):
                decode_frame(chopped)


def test_good_frames_before_a_malformed_one_are_delivered_then_the_error_is_raised():
    good = encode_frame(RemotingCommand.request(28, {"n": "1"}))
    decoder = FrameDecoder()
    commands = decoder.feed(good + struct.pack(">i", -1) + b"junk")
    assert [c.ext("n") for c in commands] == ["1"]
    with pytest.raises(ProtocolError, match="absurd frame length"):
        decoder.check()
    with pytest.raises(ProtocolError):
        decoder.feed(good)

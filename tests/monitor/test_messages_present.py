"""monitor.messages.present against messages a real RocketMQ 4.9.4 broker sent (../shared/fixtures).

Every field the capture tool decoded from a stored record must come out of message_fields under the same name and
with the same value, since the CLI's --json, the portal and the API all show a message through it. Three names of
the capture are the record's layout rather than the message's and are not expected: the magic code (which record
version), the properties' raw text (the same properties, unsplit) and the body's forms (``body_text``, the stored
deflated bytes, the inflated text): the body is shown by body_views, and by the CLI as ``body`` and ``bodyText``.
"""

from __future__ import annotations

import json

import pytest

from monitor.messages.present import body_views, message_fields
from monitor.remoting.message import MessageExt, decode_messages
from tests.fixtures import captured, captured_response


def layout_only(key: str) -> bool:
    return key in ("magicCode", "properties_raw") or key.startswith("body_")


MESSAGE_FIXTURES = ["QUERY_MESSAGE", "VIEW_MESSAGE_BY_ID", "PULL_MESSAGE", "PULL_MESSAGE_compressed_body"]


def real_records(name: str) -> list[tuple[dict, MessageExt]]:
    """(what the capture tool decoded, what the wire client decodes) for each record of a captured answer."""
    decoded = captured(name)["response"]["decoded_messages__not_on_wire"]
    return list(zip(decoded, decode_messages(captured_response(name).body), strict=True))


def real_record_fields() -> set[str]:
    """The message fields real 4.9.4 answers carry (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID, PULL_MESSAGE)."""
    return {
        key for name in MESSAGE_FIXTURES for record, _ in real_records(name) for key in record if not layout_only(key)
    }


@pytest.mark.parametrize("name", MESSAGE_FIXTURES)
def test_every_field_a_real_broker_sent_is_shown_under_its_name(name):
    for record, msg in real_records(name):
        fields = message_fields(msg)
        expected = {key: value for key, value in record.items() if not layout_only(key)}
        if msg.was_compressed:  # the capture counts the stored (deflated) bytes; a message shows its inflated body
            assert fields["bodyLength"] > expected.pop("bodyLength")
        assert {key: fields[key] for key in expected} == expected
        body_text = record.get("body_text", record.get("body_text_after_zlib_inflate"))
        assert body_views(msg.body).text == body_text


def test_fields_are_named_as_javas_message_ext():
    _, msg = real_records("VIEW_MESSAGE_BY_ID")[0]
    fields = message_fields(msg, broker_name="broker-a")
    assert fields["msgId"] == "7F0000016CA35FFD2B276C5640FE0000"  # MessageClientExt: the producer's id
    assert fields["offsetMsgId"] == "7F00000100002A9F00000000000A2C9C"
    assert (fields["keys"], fields["tags"], fields["brokerName"]) == ("KEY_java_0", "TagA", "broker-a")
    assert (fields["delayTimeLevel"], fields["waitStoreMsgOK"], fields["transactionId"]) == (0, True, None)
    assert fields["bornHostString"] == "127.0.0.1"
    assert "body" not in fields  # bodies are shown only where the viewer may see them


def test_a_transactional_message_carries_its_producer_id_as_transaction_id():
    msg = MessageExt("T", properties={"UNIQ_KEY": "AB", "TRAN_MSG": "true", "WAIT": "false", "DELAY": "3"})
    fields = message_fields(msg)
    assert (fields["transactionId"], fields["waitStoreMsgOK"], fields["delayTimeLevel"]) == ("AB", False, 3)


def test_an_ipv6_born_host_string_has_no_brackets():
    assert message_fields(MessageExt("T", born_host="[::1]:4000"))["bornHostString"] == "::1"


def test_a_body_the_producer_compressed_is_shown_inflated():
    _, msg = next((r, m) for r, m in real_records("PULL_MESSAGE_compressed_body") if m.was_compressed)
    views = body_views(msg.body)
    assert views.text is not None and len(views.text) > 4096
    assert bytes.fromhex(views.hex) == msg.body


def test_body_views_of_json_text_and_binary():
    views = body_views(json.dumps({"order": 7, "note": "café"}).encode())
    assert views.json == '{\n  "order": 7,\n  "note": "café"\n}'
    plain = body_views(b"hello from java producer #0")
    assert (plain.text, plain.json, plain.hex) == (
        "hello from java producer #0",
        None,
        b"hello from java producer #0".hex(),
    )
    assert body_views(b"42").json is None  # a bare number is text, not a document
    binary = body_views(b"\xff\x00\x01")
    assert (binary.text, binary.json, binary.hex) == (None, None, "ff0001")

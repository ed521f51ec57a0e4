"""Messages as export lines, JSON lines or CSV, one message at a time so that an export of millions streams.

Fields are named as everywhere else (monitor.messages.present.message_fields, Java's MessageExt names). The body is
``body`` when it is UTF-8 text, else ``bodyBase64``; without ``include_body`` (a reader who may see metadata only)
neither is written. CSV cells that a spreadsheet would run as a formula (text starting with = + - @, a tab or a
carriage return; producers choose bodies, keys and tags) get a leading apostrophe, as OWASP advises.
"""

from __future__ import annotations

import base64
import csv
import io
import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from monitor.messages.present import message_fields
from monitor.remoting.message import MessageExt

CSV_COLUMNS = (
    "topic",
    "queueId",
    "queueOffset",
    "commitLogOffset",
    "msgId",
    "offsetMsgId",
    "tags",
    "keys",
    "bornTimestamp",
    "bornHost",
    "storeTimestamp",
    "storeHost",
    "reconsumeTimes",
    "sysFlag",
    "bodyCRC",
    "bodyLength",
    "properties",
    "body",
    "bodyBase64",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def export_record(msg: MessageExt, *, include_body: bool = True) -> dict[str, Any]:
    """One message's export fields."""
    record = message_fields(msg)
    if include_body:
        try:
            record["body"] = msg.body.decode("utf-8")
        except UnicodeDecodeError:
            record["bodyBase64"] = base64.b64encode(msg.body).decode("ascii")
    return record


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, dict):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _csv_line(values: Iterable[Any]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow([_csv_cell(v) for v in values])
    return out.getvalue()


def export_lines(
    messages: Iterable[MessageExt], fmt: Literal["jsonl", "csv"], *, include_body: bool = True
) -> Iterator[str]:
    """Each message as one line ending in a newline (CSV: a header line first; a body with line breaks stays one
    quoted CSV record)."""
    if fmt == "jsonl":
        for msg in messages:
            yield json.dumps(export_record(msg, include_body=include_body), ensure_ascii=False) + "\n"
    elif fmt == "csv":
        yield _csv_line(CSV_COLUMNS)
        for msg in messages:
            record = export_record(msg, include_body=include_body)
            yield _csv_line(record.get(column) for column in CSV_COLUMNS)
    else:
        raise ValueError(f"export format {fmt!r}: say 'jsonl' or 'csv'")

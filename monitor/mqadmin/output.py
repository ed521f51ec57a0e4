"""Rendering shared by every subcommand: aligned text tables and JSON.

Subcommands return plain data (dataclasses, RocketMQ body types, dicts, lists); :func:`to_json` turns any of it
into JSON with RocketMQ's own camelCase names (``brokerOffset``, ``queueDatas``), so ``--json`` output reads like
the Java tools' JSON and can be fed to ``jq``. Values JSON has no type for are mapped as follows: enums by name,
bytes as Base64, sets as sorted lists, datetimes in ISO 8601, non-finite floats as null, and maps whose keys are
not strings or numbers (``Map<MessageQueue, ...>``) as a list of ``{"key": ..., "value": ...}`` entries, since a
JSON object key can only be a string. A result that is named differently in JSON than its attributes (a message,
whose names are Java's MessageExt ones: see monitor.messages.present) says so with a ``json_fields()`` method.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _field_name(f: dataclasses.Field) -> str:
    # Body types (monitor.remoting.body) record RocketMQ's spelling when it is not plain camelCase ("pullRT").
    return f.metadata.get("wire") or camel(f.name)


def _is_scalar_key(key: Any) -> bool:
    return isinstance(key, str | int | float | bool | enum.Enum) or key is None


def _key_text(key: Any) -> str:
    if isinstance(key, enum.Enum):
        return key.name
    if isinstance(key, bool):
        return "true" if key else "false"
    return "null" if key is None else str(key)


def to_jsonable(value: Any) -> Any:
    """The structure ``json.dumps`` can write for any result a subcommand returns."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime.datetime | datetime.date):
        return value.isoformat()
    if callable(getattr(value, "json_fields", None)):
        return to_jsonable(value.json_fields())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_field_name(f): to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        if all(_is_scalar_key(k) for k in value):
            return {_key_text(k): to_jsonable(v) for k, v in value.items()}
        return [{"key": to_jsonable(k), "value": to_jsonable(v)} for k, v in value.items()]
    if isinstance(value, set | frozenset):
        items = [to_jsonable(v) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, Iterable):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def to_json(value: Any) -> str:
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)


# --- text -----------------------------------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """How one value reads in a table: floats with two decimals (mqadmin's %.2f), booleans as Java prints them."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}" if math.isfinite(value) else ""
    if isinstance(value, enum.Enum):
        return value.name
    return str(value)


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Columns padded to their widest cell, two spaces apart. A column whose cells are all numbers is right-aligned
    so magnitudes line up; trailing blanks are trimmed."""
    rows = [list(row) for row in rows]
    numeric = [bool(rows) and all(_numeric(row[i]) or row[i] is None for row in rows) for i in range(len(headers))]
    text_rows = [list(headers), *([cell(v) for v in row] for row in rows)]
    widths = [max(len(r[i]) for r in text_rows) for i in range(len(headers))]
    lines = []
    for r in text_rows:
        parts = [r[i].rjust(widths[i]) if numeric[i] else r[i].ljust(widths[i]) for i in range(len(headers))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def render_properties(props: Mapping[str, Any], *, width: int = 50, separator: str = "=  ") -> str:
    """``key  =  value`` lines sorted by key, as mqadmin prints broker and name server configuration."""
    return "\n".join(f"{key:<{width}}{separator}{cell(props[key])}" for key in sorted(props))


def join_blocks(*blocks: str | None) -> str:
    """Sections of a report separated by a blank line (empty sections left out)."""
    return "\n\n".join(block for block in blocks if block)

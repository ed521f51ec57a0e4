"""What the portal takes from outside (query parameters, form fields, JSON bodies, producers' reports) must fit the
database before it reaches a query: these are the shared checks, so that a hostile value gets a 400 naming it
instead of a 500 from the database driver or the json module.

- Ids are 64-bit signed integers (``BigAutoField``); a larger number overflows SQLite's driver and PostgreSQL's
  ``bigint``.
- Names are printable text: PostgreSQL cannot store NUL in ``text`` or ``jsonb`` at all, a lone surrogate (which a
  JSON ``"\\ud800"`` escape can produce) cannot be encoded as UTF-8 for any database, and control characters
  (newlines, escapes) belong in no name an operator reads in a table, a chart legend or a log line.
- JSON bodies nest at most :data:`MAX_JSON_DEPTH` levels and hold Unicode text only (:func:`loads_json`); JSON taken
  as it is holds no NUL (:func:`validate_storable_json`).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate

from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator

#: The largest 64-bit signed integer, the largest primary key there can be.
MAX_ID = 2**63 - 1

# C0 and C1 control characters (NUL among them) and the UTF-16 surrogates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def parse_id(value: str | None) -> int | None:
    """The id a query or form parameter names (ASCII digits, 1 .. MAX_ID), or None when it names none."""
    if not value or not value.isascii() or not value.isdigit() or len(value) > len(str(MAX_ID)):
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


def is_printable(value: str) -> bool:
    """Whether ``value`` holds no control character and no lone surrogate (so every database can store it)."""
    return _UNPRINTABLE.search(value) is None


#: How deeply a JSON body may nest. The deepest body the portal takes (a producers' report) nests 7 levels; Python's
#: json module recurses per level and fails with RecursionError near 1000, so the cap is checked before parsing.
MAX_JSON_DEPTH = 32

# A JSON string, or an unterminated one up to the end of the text (so a scan never backtracks over a long body).
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\[\s\S][^"\\]*)*"?')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of a JSON text nest, read without parsing it (in linear time)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)


def loads_json(text: str) -> object:
    """Parse a JSON request body: ValueError (with a message for the client) if it nests deeper than
    :data:`MAX_JSON_DEPTH`, is not JSON (NaN and Infinity are not), or holds a lone surrogate. The size is the
    caller's to bound (Django's ``request.body`` honours ``DATA_UPLOAD_MAX_MEMORY_SIZE``; the API's parser its own)."""
    if json_depth(text) > MAX_JSON_DEPTH:
        raise ValueError(f"the JSON nests deeper than {MAX_JSON_DEPTH} levels")
    data = json.loads(text, parse_constant=_not_a_number)
    # Only a \\uD800-\\uDFFF escape can put a surrogate in a str; a correct pair decodes to one character.
    if _SURROGATE_ESCAPE.search(text) and not is_encodable(data):
        raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff), which is not Unicode text")
    return data


def is_encodable(data: object) -> bool:
    """Whether every string of parsed JSON (keys included) can be encoded as UTF-8."""
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _not_a_number(name: str):
    raise ValueError(f"{name} is not a JSON number")


def validate_storable_json(value: object) -> None:
    """A validator for JSON taken as it is (an application's payload): no string in it, keys included, may hold a
    NUL, which PostgreSQL's ``jsonb`` refuses (DRF's and Django's text fields refuse it the same way)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise ValidationError(
                    ProhibitNullCharactersValidator.message, code=ProhibitNullCharactersValidator.code
                )
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


# --- messages (the message pages and API) ---

# RocketMQ's own limits: a key or tag is at most 128 characters as the Java client checks them (Validators), a
# broker name at most 255; a queue id is a 32-bit int on the wire and a broker has at most a few thousand queues.
MAX_KEY_LENGTH = 128
MAX_BROKER_NAME_LENGTH = 255
MAX_SEARCH_KEY_LENGTH = 255
# A client id is "ip@instance" (plus "@unitName" for some clients): short, but not bounded by RocketMQ.
MAX_CLIENT_ID_LENGTH = 255
MAX_QUEUE_ID = 65535
MAX_BODY_LENGTH = 64 * 1024
# An offset message id is 32 hex characters (IPv4 store host) or 56 (IPv6); a client's UNIQ_KEY is 32.
MESSAGE_ID = re.compile(r"[0-9A-Fa-f]{32}(?:[0-9A-Fa-f]{24})?")

EXPORT_CONTENT_TYPES = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}


def printable_or_empty(value: str, max_length: int) -> str:
    """A query parameter as text the pages may use, or "" when it is too long or holds a control character."""
    value = value.strip()
    return value if len(value) <= max_length and is_printable(value) else ""


def message_id_or_404(value: str) -> str:
    """Whether a URL's message id looks like one (the page of a malformed id is a page that does not exist)."""
    return value if MESSAGE_ID.fullmatch(value) else ""

"""Read and write RocketMQ remoting bodies the way Alibaba fastjson writes them.

Java RocketMQ (4.9.x ships fastjson 1.2.69) serialises command bodies with ``JSON.toJSONString``, which is not
always valid JSON, and the C++ client answers some requests with jsoncpp output that copies fastjson's habits:

* a ``Map<Integer, ...>`` is written with unquoted integer keys: ``{"brokerAddrs":{0:"127.0.0.1:10911"}}``;
* a map keyed by an object (``MessageQueue``) is written with the object itself as the key:
  ``{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:901}}``;
* jsoncpp pretty-prints (``"key" : value``, newlines, trailing ``"\\n"``) and uses object keys too.

``loads`` accepts standard JSON plus those key forms: quoted keys stay ``str``, unquoted integer keys become ``int``
and object keys become :class:`ObjectKey` (a hashable, read-only mapping). ``dumps`` writes values back the way
fastjson does, so a compact body from a Java peer reproduces byte for byte.

Speed: bodies run to megabytes, so every JSON container is first handed to the stdlib's C scanner; only a container
it rejects is walked in Python, and each child of that container is offered to the C scanner again. Standard bodies
therefore parse at C speed and fastjson bodies drop to Python only on the path down to the odd keys. Inside the
walker, runs of scalar members (``0:388,1:416``) are matched and split by one regex. Failed C attempts re-read text,
so they draw on a budget proportional to the input size; once it is spent the walker parses the rest itself, which
keeps adversarial input linear.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from json.decoder import scanstring
from typing import Any

from monitor.remoting.errors import ProtocolError

__all__ = ["MAX_DEPTH", "ObjectKey", "dumps", "loads"]

# Deepest nesting of objects/arrays the Python walker follows before rejecting the body; fastjson bodies nest < 10.
MAX_DEPTH = 512
# The C scanner is given a slice of the text (a failure costs the stdlib O(slice) to locate); nested containers
# start with this many characters, doubled while the slice turns out too short.
_FIRST_WINDOW = 2048
# How far past a reported error position the C scanner may have read (e.g. a literal cut by the slice end).
_LOOKAHEAD = 8
# Failed C-scanner attempts may re-read at most this many times the input length before the walker stops trying.
_RESCAN_BUDGET_FACTOR = 4
# Characters that start a key only the walker understands (unquoted integer, object).
_ODD_KEY_START = "{-0123456789"

_WS = r"[ \t\n\r]*"
_PLAIN_STRING = r'("[^"\\\x00-\x1f]*")'  # a string without escapes (the group keeps the quotes: never empty)
_INT = r"(-?(?:0|[1-9][0-9]*))"
_FLOAT = r"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
_WHITESPACE = re.compile(_WS)
_NUMBER = re.compile(_INT + r"(\.[0-9]+)?([eE][-+]?[0-9]+)?")
# A key without escapes or an unquoted integer key, then the colon.
_PLAIN_KEY = re.compile(rf"(?:{_PLAIN_STRING}|{_INT}){_WS}:{_WS}")
# An object member with such a key and a scalar value without escapes (`0:388`, `"a":"b"`, `"tps":0.5`); a run of
# them separated by commas is matched, then split by findall(), in C. The lookahead stops the integer alternative
# from matching a prefix of a float or of a longer number.
_PLAIN_MEMBER_SOURCE = (
    rf"(?:{_PLAIN_STRING}|{_INT}){_WS}:{_WS}(?:{_PLAIN_STRING}|{_INT}(?![.eE0-9])|{_FLOAT}|(true|false|null))"
)
_PLAIN_MEMBER = re.compile(_PLAIN_MEMBER_SOURCE)
_PLAIN_MEMBERS = re.compile(rf"{_PLAIN_MEMBER_SOURCE}(?:{_WS},{_WS}{_PLAIN_MEMBER_SOURCE})*")
_COLON = re.compile(rf"{_WS}:{_WS}")
_OBJECT_SEPARATOR = re.compile(rf"{_WS}([,}}]){_WS}")
_ARRAY_SEPARATOR = re.compile(rf"{_WS}([,\]]){_WS}")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_LITERAL_VALUES = dict(_LITERALS.values())

# fastjson 1.2.69 SerializeWriter (default features): these characters are escaped inside strings, short forms for
# the usual five controls and the two JSON specials, \uXXXX (upper-case hex) for the rest; '/' and non-ASCII stay.
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_STANDARD = json.JSONDecoder(parse_constant=_reject_constant)
_SCALARS = (str, int, float, type(None))


class ObjectKey(Mapping[str, Any]):
    """A JSON object used as a map key (fastjson writes ``Map<MessageQueue, ...>`` this way).

    Read-only and hashable, so it can key a ``dict``. Equality and hash go by content regardless of key order, and
    an ``ObjectKey`` equals a plain mapping with the same content (``ObjectKey(queueId=0) == {"queueId": 0}``).
    The key order is kept so that :func:`dumps` writes the object back as it was read. Nested objects and arrays are
    frozen into ``ObjectKey`` and ``tuple``.
    """

    __slots__ = ("_fields", "_hash")

    def __init__(self, fields: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = (), /, **named: Any) -> None:
        self._fields = dict(fields, **named)
        for key, value in self._fields.items():
            if not isinstance(value, _SCALARS):
                self._fields[key] = _freeze(value)
        self._hash: int | None = None

    def __getitem__(self, key: Any) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ObjectKey):
            return self._fields == other._fields
        if isinstance(other, Mapping):
            return self._fields == ObjectKey(other)._fields
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._fields.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"ObjectKey({self._fields!r})"

    def __reduce__(self) -> tuple[type[ObjectKey], tuple[dict[Any, Any]]]:
        # Leave the cached hash out: str hashes differ between processes.
        return ObjectKey, (self._fields,)


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping) and not isinstance(value, ObjectKey):
        return ObjectKey(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


# ---------------------------------------------------------------------------------------------------------- reading


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a fastjson / jsoncpp / standard JSON body.

    Objects become ``dict`` (keys: ``str`` for quoted keys, ``int`` for unquoted integer keys, :class:`ObjectKey`
    for object keys), arrays ``list``; strings, numbers (``int`` exact, ``float``), ``true``/``false``/``null`` map
    to ``str``, ``int``, ``float``, ``bool`` and ``None``. Bytes must be UTF-8. Raises :class:`ProtocolError`, with
    the character position, on anything else: truncation, garbage, trailing data, ``NaN``, nesting deeper than
    :data:`MAX_DEPTH`, integers longer than Python's int-digit limit.
    """
    text = _as_text(data)
    try:
        return _Parser(text).parse()
    except RecursionError:
        # Only reachable when the caller's own stack is already deep; MAX_DEPTH normally stops the walker first.
        raise ProtocolError(
            f"malformed fastjson body of {len(text)} chars: nested too deeply for the call stack"
        ) from None


def _as_text(data: bytes | bytearray | memoryview | str) -> str:
    if isinstance(data, str):
        return data
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"fastjson.loads() takes bytes or str, not {type(data).__name__}")
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"malformed fastjson body at byte {exc.start}: invalid UTF-8 ({exc.reason})") from None


class _Parser:
    """Recursive walker over one body. Each nesting level costs one Python frame (handlers are dispatched directly)."""

    __slots__ = ("_budget", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._budget = _RESCAN_BUDGET_FACTOR * len(text)

    def parse(self) -> Any:
        pos = _WHITESPACE.match(self._text).end()
        value, pos = self._value_handler(pos)(self, pos, 1)
        pos = _WHITESPACE.match(self._text, pos).end()
        if pos != len(self._text):
            raise self._error(pos, "unexpected data after the body")
        return value

    # -- helpers

    def _error(self, pos: int, problem: str) -> ProtocolError:
        where = f"char {pos}" + (" (end of input)" if pos >= len(self._text) else "")
        near = self._text[max(0, pos - 24) : pos + 24]
        return ProtocolError(f"malformed fastjson body at {where}: {problem}, near {near!r}")

    def _value_handler(self, pos: int) -> _Handler:
        handler = _VALUE_HANDLERS.get(self._text[pos : pos + 1])
        if handler is None:
            raise self._error(pos, "expected a value")
        return handler

    def _scan_standard(self, pos: int, depth: int) -> tuple[Any, int] | None:
        """Let the C scanner parse the container at ``pos`` if it is standard JSON; ``None`` if it is not.

        The scanner sees a slice (the whole text for the outermost container), so that failing costs only the slice;
        a slice that cuts the container short is doubled until the scanner succeeds or fails on the text itself.
        """
        text = self._text
        window = len(text) if depth == 1 else _FIRST_WINDOW
        while self._budget > 0:
            end = min(pos + window, len(text))
            try:
                value, stop = _STANDARD.raw_decode(text[pos:end])
                return value, pos + stop
            except json.JSONDecodeError as exc:
                failed = pos + exc.pos
            except (ValueError, RecursionError):  # NaN, over-long integer, deep nesting: let the walker report it
                return None
            if end == len(text) or (failed < end - _LOOKAHEAD and text[failed] != '"'):
                self._budget -= failed - pos
                return None  # the text itself fails here (a string start may be an unterminated-by-the-slice one)
            self._budget -= end - pos
            window *= 2
        return None

    def _check_depth(self, pos: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self._error(pos, f"nesting deeper than {MAX_DEPTH} levels")

    def _next(self, pattern: re.Pattern[str], pos: int, expected: str) -> tuple[str, int]:
        """Match a separator (``,`` or the closing bracket, with whitespace around it); return it and the end."""
        match = pattern.match(self._text, pos)
        if match is None:
            raise self._error(pos, f"expected {expected}")
        return match.group(1), match.end()

    # -- containers

    def _object(self, pos: int, depth: int) -> tuple[dict[Any, Any], int]:
        self._check_depth(pos, depth)
        text = self._text
        first = _WHITESPACE.match(text, pos + 1).end()
        if text[first : first + 1] not in _ODD_KEY_START:  # an object whose first key is odd would fail the C scanner
            scanned = self._scan_standard(pos, depth)
            if scanned is not None:
                return scanned
        result: dict[Any, Any] = {}
        pos = first
        if text.startswith("}", pos):
            return result, pos + 1
        while True:
            plain = _PLAIN_MEMBERS.match(text, pos)
            if plain is not None:
                self._add_plain_members(result, pos, plain.end())
                pos = plain.end()
            else:
                if text.startswith("{", pos):  # an object key; parsed here so each nesting level costs one frame
                    fields, pos = self._object(pos, depth + 1)
                    key: Any = ObjectKey(fields)
                    pos = self._colon(pos)
                else:
                    key, pos = self._scalar_key(pos)
                value, pos = self._value_handler(pos)(self, pos, depth + 1)
                result[key] = value
            separator, pos = self._next(_OBJECT_SEPARATOR, pos, "',' or '}' in an object")
            if separator == "}":
                return result, pos

    def _array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        self._check_depth(pos, depth)
        scanned = self._scan_standard(pos, depth)
        if scanned is not None:
            return scanned
        text = self._text
        result: list[Any] = []
        pos = _WHITESPACE.match(text, pos + 1).end()
        if text.startswith("]", pos):
            return result, pos + 1
        while True:
            value, pos = self._value_handler(pos)(self, pos, depth + 1)
            result.append(value)
            separator, pos = self._next(_ARRAY_SEPARATOR, pos, "',' or ']' in an array")
            if separator == "]":
                return result, pos

    def _add_plain_members(self, result: dict[Any, Any], start: int, end: int) -> None:
        # findall() yields "" for the alternatives that did not match; every group that matched is non-empty.
        try:
            for text_key, int_key, text_value, int_value, float_value, literal in _PLAIN_MEMBER.findall(
                self._text, start, end
            ):
                if text_value:
                    value = text_value[1:-1]
                elif int_value:
                    value = int(int_value)
                elif float_value:
                    value = float(float_value)
                else:
                    value = _LITERAL_VALUES[literal]
                result[int(int_key) if int_key else text_key[1:-1]] = value
        except ValueError:  # longer than sys.get_int_max_str_digits()
            raise self._error(start, "integer too long in the members") from None

    def _scalar_key(self, pos: int) -> tuple[str | int, int]:
        """A quoted or unquoted-integer key and the ``:`` after it; returns the key and where its value starts."""
        match = _PLAIN_KEY.match(self._text, pos)
        if match is not None:
            quoted, number = match.groups()
            return (quoted[1:-1] if number is None else self._integer(number, pos)), match.end()
        if not self._text.startswith('"', pos):
            raise self._error(pos, "expected a key (string, integer or object)")
        key, pos = self._string(pos, 0)  # a string with escapes
        return key, self._colon(pos)

    def _colon(self, pos: int) -> int:
        match = _COLON.match(self._text, pos)
        if match is None:
            raise self._error(pos, "expected ':' after a key")
        return match.end()

    # -- scalars (depth is unused; all value handlers share one signature)

    def _string(self, pos: int, depth: int) -> tuple[str, int]:
        try:
            return scanstring(self._text, pos + 1, True)
        except json.JSONDecodeError as exc:
            raise self._error(exc.pos, exc.msg.removesuffix(" at").lower()) from None

    def _number(self, pos: int, depth: int) -> tuple[int | float, int]:
        match = _NUMBER.match(self._text, pos)
        if match is None:
            raise self._error(pos, "expected a value")
        integer, fraction, exponent = match.groups()
        if fraction or exponent:
            return float(match.group()), match.end()
        return self._integer(integer, pos), match.end()

    def _literal(self, pos: int, depth: int) -> tuple[bool | None, int]:
        word, value = _LITERALS[self._text[pos]]
        if not self._text.startswith(word, pos):
            raise self._error(pos, "expected a value")
        return value, pos + len(word)

    def _integer(self, digits: str, pos: int) -> int:
        try:
            return int(digits)
        except ValueError:  # longer than sys.get_int_max_str_digits()
            raise self._error(pos, f"integer of {len(digits)} digits is too long") from None


_Handler = Callable[[_Parser, int, int], tuple[Any, int]]
_VALUE_HANDLERS: dict[str, _Handler] = {
    "{": _Parser._object,
    "[": _Parser._array,
    '"': _Parser._string,
    "-": _Parser._number,
    **dict.fromkeys("0123456789", _Parser._number),
    **dict.fromkeys(_LITERALS, _Parser._literal),
}


# ---------------------------------------------------------------------------------------------------------- writing


def dumps(value: Any) -> str:
    """Write ``value`` as fastjson would: compact, keys in iteration order, ``int`` keys unquoted, ``ObjectKey`` keys
    as objects, floats as Java's ``Double.toString``, strings escaped like fastjson (non-ASCII kept).

    Accepts ``None``, ``bool``, ``int``, ``float``, ``str``, mappings (``dict``, ``ObjectKey``) and ``list``/``tuple``;
    NaN and infinities are written as ``null``, as fastjson does. Raises ``TypeError`` for anything else.
    """
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_quote(value))
    elif value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_java_double(value))
    elif isinstance(value, Mapping):
        _write_object(value, out)
    elif isinstance(value, list | tuple):
        _write_array(value, out)
    else:
        raise TypeError(f"fastjson.dumps() cannot write {type(value).__name__}")


def _write_object(mapping: Mapping[Any, Any], out: list[str]) -> None:
    out.append("{")
    for index, (key, item) in enumerate(mapping.items()):
        if index:
            out.append(",")
        _write_key(key, out)
        out.append(":")
        _write(item, out)
    out.append("}")


def _write_array(items: list[Any] | tuple[Any, ...], out: list[str]) -> None:
    out.append("[")
    for index, item in enumerate(items):
        if index:
            out.append(",")
        _write(item, out)
    out.append("]")


def _write_key(key: Any, out: list[str]) -> None:
    if isinstance(key, str):
        out.append(_quote(key))
    elif isinstance(key, ObjectKey):
        _write_object(key, out)
    elif isinstance(key, int) and not isinstance(key, bool):
        out.append(int.__repr__(key))
    else:
        raise TypeError(f"fastjson map keys must be str, int or ObjectKey, not {type(key).__name__}")


def _quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04X}"


def _java_double(number: float) -> str:
    """``Double.toString`` formatting of the shortest repr digits (fastjson uses Ryu, which yields the same digits)."""
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    sign = "-" if number < 0 else ""
    digits, exponent = _decimal_digits(abs(number))
    if -3 <= exponent < 7:
        return sign + _plain_decimal(digits, exponent)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _decimal_digits(magnitude: float) -> tuple[str, int]:
    """Significant digits of ``repr(magnitude)`` and the power of ten of the first one: 0.00125 -> ("125", -3)."""
    mantissa, _, power = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    exponent = len(whole) - 1 + int(power or 0) - (len(all_digits) - len(digits))
    return digits.rstrip("0"), exponent


def _plain_decimal(digits: str, exponent: int) -> str:
    if exponent < 0:
        return "0." + "0" * (-exponent - 1) + digits
    whole = digits[: exponent + 1].ljust(exponent + 1, "0")
    return f"{whole}.{digits[exponent + 1 :] or '0'}"

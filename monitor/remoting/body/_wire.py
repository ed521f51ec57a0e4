"""The one mechanism that maps typed dataclasses to fastjson bodies and back.

Each body type is a dataclass deriving from :class:`WireBean`. Attribute types drive conversion, so no type needs
hand-written (de)serialisation: the Java (wire) name of a field is the camelCase of the Python name unless the field
says otherwise with :func:`wire`. Writing follows fastjson's bean rules so an encoded body matches what a Java peer
sends byte for byte: properties sorted by Java name, null properties left out, maps in their own order, enums by
name. Reading is tolerant the way fastjson is: unknown properties are ignored (newer brokers add some), missing or
null ones take the Java default, numbers may arrive as strings and enums as ordinals (the C++ client writes both).
Anything of the wrong shape raises :class:`ProtocolError` naming the path to the bad value.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import time
import types
import typing
from collections.abc import Mapping
from typing import Any, Self

from monitor.remoting import fastjson
from monitor.remoting.errors import ProtocolError

_INT_TEXT = re.compile(r"\s*[-+]?\d+\s*")
# Characters fastjson's BrowserCompatible feature escapes beyond what plain fastjson escapes.
_BROWSER_ESCAPED = re.compile(r"[/\x7f-\U0010ffff]")


def wire(name: str, **kwargs: Any) -> Any:
    """A dataclass field whose Java name is not the camelCase of the Python name (``clientID``, ``pullRT``)."""
    return dataclasses.field(metadata={"wire": name}, **kwargs)


def now_millis() -> int:
    """``System.currentTimeMillis()``, the Java default of timestamp fields."""
    return int(time.time() * 1000)


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(frozen=True)
class _Field:
    attr: str
    wire: str
    type: Any
    field: dataclasses.Field

    def default(self, path: str) -> Any:
        if self.field.default is not dataclasses.MISSING:
            return self.field.default
        if self.field.default_factory is not dataclasses.MISSING:
            return self.field.default_factory()
        raise ProtocolError(f"{path}: required property missing")


@functools.cache
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    specs = [
        _Field(f.name, f.metadata.get("wire", _camel(f.name)), hints[f.name], f)
        for f in dataclasses.fields(cls)
        if f.init
    ]
    return tuple(sorted(specs, key=lambda spec: spec.wire))


class WireBean:
    """Base of every body type: ``from_wire``/``to_wire`` for parsed structures, ``decode``/``encode`` for bytes."""

    @classmethod
    def from_wire(cls, obj: Any) -> Self:
        """Build from the structure :func:`fastjson.loads` returned."""
        return cls._load(obj, cls.__name__)

    @classmethod
    def _load(cls, obj: Any, path: str) -> Self:
        if not isinstance(obj, Mapping):
            raise ProtocolError(f"{path}: expected a JSON object, got {_kind(obj)}")
        values = {}
        for spec in _fields(cls):
            where = f"{path}.{spec.wire}"
            raw = obj.get(spec.wire)
            values[spec.attr] = spec.default(where) if raw is None else _load(spec.type, raw, where)
        return cls(**values)

    def to_wire(self) -> dict[str, Any]:
        """The plain structure fastjson would write: Java names sorted, nulls left out."""
        out = {}
        for spec in _fields(type(self)):
            value = getattr(self, spec.attr)
            if value is not None:
                out[spec.wire] = _dump(spec.type, value)
        return out

    def to_wire_key(self) -> fastjson.ObjectKey:
        """This bean as a map key, as fastjson writes ``Map<MessageQueue, ...>``."""
        return fastjson.ObjectKey(self.to_wire())

    @classmethod
    def decode(cls, body: bytes | str) -> Self:
        return cls.from_wire(fastjson.loads(body))

    def encode(self) -> bytes:
        return fastjson.dumps(self.to_wire()).encode()


def browser_compatible_json(value: Any) -> str:
    """fastjson with BrowserCompatible + MapSortField, as 4.9.4 name servers answer clients of V4_9_4 and later.

    Map keys are sorted (Java String order is UTF-16 order) and written as strings, ``/`` and non-ASCII escaped.
    """
    text = fastjson.dumps(_standard(value))
    return _BROWSER_ESCAPED.sub(_browser_escape, text)


def _standard(value: Any) -> Any:
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: _java_order(item[0]))
        return {str(k) if isinstance(k, int) else k: _standard(v) for k, v in items}
    if isinstance(value, list):
        return [_standard(v) for v in value]
    return value


def _java_order(key: Any) -> Any:
    return key.encode("utf-16-be") if isinstance(key, str) else key


def _browser_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "/":
        return "\\/"
    units = char.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return f"{type(value).__name__} {value!r:.60}"


def _optional(tp: Any) -> Any | None:
    """``X`` for ``X | None``, else None."""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return inner
    return None


def _load(tp: Any, value: Any, path: str) -> Any:
    inner = _optional(tp)
    if inner is not None:
        return _load(inner, value, path)
    origin = typing.get_origin(tp)
    if origin is list:
        if not isinstance(value, list):
            raise ProtocolError(f"{path}: expected an array, got {_kind(value)}")
        (item,) = typing.get_args(tp)
        return [_load_present(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ProtocolError(f"{path}: expected an object, got {_kind(value)}")
        key_type, value_type = typing.get_args(tp)
        out = {}
        for k, v in value.items():
            where = f"{path}[{k!r:.60}]"
            out[_load_key(key_type, k, where)] = _load_present(value_type, v, where)
        return out
    if issubclass(tp, WireBean):
        return tp._load(value, path)
    if issubclass(tp, enum.Enum):
        return _load_enum(tp, value, path)
    return _load_scalar(tp, value, path)


def _load_present(tp: Any, value: Any, path: str) -> Any:
    if value is None:
        if _optional(tp) is not None:
            return None
        raise ProtocolError(f"{path}: null where a value is required")
    return _load(tp, value, path)


def _load_key(tp: Any, key: Any, path: str) -> Any:
    if isinstance(tp, type) and issubclass(tp, WireBean):
        return tp._load(key, path)
    if tp is str and isinstance(key, str | int):
        return str(key)
    if tp is int:
        return _load_scalar(int, key, path)
    raise ProtocolError(f"{path}: unexpected map key {_kind(key)}")


def _load_enum(tp: type[enum.Enum], value: Any, path: str) -> enum.Enum:
    try:
        if isinstance(value, str):
            return tp[value]
        if isinstance(value, int) and not isinstance(value, bool):
            return tp(value)
    except (KeyError, ValueError):
        pass
    raise ProtocolError(f"{path}: {value!r:.60} is not a {tp.__name__}")


def _load_scalar(tp: type, value: Any, path: str) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        if value in (0, 1) and not isinstance(value, float):
            return bool(value)
    elif isinstance(value, bool):
        pass
    elif tp is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):
            return int(value)
    elif tp is float:
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float):
            return str(value)
    else:
        raise TypeError(f"{path}: no wire conversion for {tp!r}")
    raise ProtocolError(f"{path}: expected {_SCALAR_NAMES[tp]}, got {_kind(value)}")


_SCALAR_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def _dump(tp: Any, value: Any) -> Any:
    inner = _optional(tp)
    if inner is not None:
        return None if value is None else _dump(inner, value)
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [_dump(item, v) for v in value]
    if origin is dict:
        key_type, value_type = typing.get_args(tp)
        return {_dump_key(key_type, k): _dump(value_type, v) for k, v in value.items()}
    if isinstance(value, WireBean):
        return value.to_wire()
    if isinstance(value, enum.Enum):
        return value.name
    if tp is float:
        return float(value)
    return value


def _dump_key(tp: Any, key: Any) -> Any:
    return key.to_wire_key() if isinstance(key, WireBean) else key

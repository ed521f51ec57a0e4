"""The one mechanism that maps typed dataclasses to fastjson bodies and back.

Each body type is a dataclass deriving from :class:`WireBean`. Attribute types drive conversion, so no type needs
hand-written (de)serialisation: the Java (wire) name of a field is the camelCase of the Python name unless the field
says otherwise with :func:`wire`. Writing follows fastjson's bean rules so an encoded body matches what a Java peer
sends byte for byte: properties sorted by Java name, null properties left out, maps in their own order, enums by
name. Reading is tolerant the way fastjson is: unknown properties are ignored (newer brokers add some), missing or
null ones take the Java default, numbers may arrive as strings and enums as ordinals (the C++ client writes both).
Anything of the wrong shape raises :class:`ProtocolError` naming the path to the bad value.

Speed (a monitor decodes bodies of 10,000 topics or groups): the type analysis is done once per type, which yields a
converter function that only checks and converts values; exact scalars pass without a call, and the path to a value
is put together only when the value is bad.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import time
import types
import typing
from collections.abc import Callable, Mapping
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


@functools.cache
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    specs = [
        _Field(f.name, f.metadata.get("wire", _camel(f.name)), hints[f.name], f)
        for f in dataclasses.fields(cls)
        if f.init
    ]
    return tuple(sorted(specs, key=lambda spec: spec.wire))


class _Mismatch(Exception):
    """A wire value of the wrong shape, raised where it is found.

    Each container it unwinds through appends its part of the path (``.field``, ``[0]``, ``['key']``), and
    :meth:`WireBean.from_wire` turns it into the :class:`ProtocolError`, so a path is only built for a bad body.
    """

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.where: list[str] = []


class WireBean:
    """Base of every body type: ``from_wire``/``to_wire`` for parsed structures, ``decode``/``encode`` for bytes."""

    @classmethod
    def from_wire(cls, obj: Any) -> Self:
        """Build from the structure :func:`fastjson.loads` returned."""
        try:
            return _bean_loader(cls)(obj)
        except _Mismatch as exc:
            raise ProtocolError(f"{cls.__name__}{''.join(reversed(exc.where))}: {exc.problem}") from None

    def to_wire(self) -> dict[str, Any]:
        """The plain structure fastjson would write: Java names sorted, nulls left out."""
        return _bean_dumper(type(self))(self)

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


def _exact(tp: Any) -> type | None:
    """The scalar type whose exact instances convert to themselves both ways for attributes typed ``tp``.

    Converters test ``type(value) is exact`` before calling anything, so the common value costs no call.
    """
    tp = _optional(tp) or tp
    return tp if tp in (bool, int, float, str) else None


# -- reading: one converter per type, compiled on first use. A converter takes a present (non-null) wire value and
# raises _Mismatch, without a path, for a value of the wrong shape.


@functools.cache
def _loader(tp: Any) -> Callable[[Any], Any]:
    inner = _optional(tp)
    if inner is not None:
        return _loader(inner)
    origin = typing.get_origin(tp)
    if origin is list:
        return _list_loader(*typing.get_args(tp))
    if origin is dict:
        return _dict_loader(*typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, WireBean):
        return _bean_loader(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_loader(tp)
    if tp in _SCALAR_LOADERS:
        return _SCALAR_LOADERS[tp]
    raise TypeError(f"no wire conversion for {tp!r}")


@functools.cache
def _bean_loader(cls: type[WireBean]) -> Callable[[Any], WireBean]:
    # Properties are read in wire order (the first bad one is reported) and passed positionally (cheaper than by
    # keyword) in __init__ order; body dataclasses have no keyword-only fields.
    params = [field.name for field in dataclasses.fields(cls) if field.init]
    steps = []
    for spec in _fields(cls):
        try:
            convert = _loader(spec.type)
        except TypeError as exc:
            raise TypeError(f"{cls.__name__}.{spec.wire}: {exc}") from None
        field = spec.field
        if field.default is not dataclasses.MISSING:
            default, factory = field.default, None
        elif field.default_factory is not dataclasses.MISSING:
            default, factory = None, field.default_factory
        else:
            default, factory = None, _required
        steps.append((params.index(spec.attr), spec.wire, _exact(spec.type), convert, default, factory))
    count = len(steps)

    def load(obj: Any) -> WireBean:
        if type(obj) is not dict and not isinstance(obj, Mapping):
            raise _Mismatch(f"expected a JSON object, got {_kind(obj)}")
        get = obj.get
        args = [None] * count
        for index, name, exact, convert, default, factory in steps:
            raw = get(name)
            try:
                if raw is None:
                    args[index] = default if factory is None else factory()
                else:
                    args[index] = raw if type(raw) is exact else convert(raw)
            except _Mismatch as exc:
                exc.where.append(f".{name}")
                raise
        return cls(*args)

    return load


def _required() -> Any:
    raise _Mismatch("required property missing")


def _list_loader(item_tp: Any) -> Callable[[Any], list[Any]]:
    convert, exact, nullable = _loader(item_tp), _exact(item_tp), _optional(item_tp) is not None

    def load(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _Mismatch(f"expected an array, got {_kind(value)}")
        out = []
        for index, item in enumerate(value):
            try:
                out.append(_null(nullable) if item is None else item if type(item) is exact else convert(item))
            except _Mismatch as exc:
                exc.where.append(f"[{index}]")
                raise
        return out

    return load


def _dict_loader(key_tp: Any, value_tp: Any) -> Callable[[Any], dict[Any, Any]]:
    convert_key, key_exact = _key_loader(key_tp), key_tp if key_tp in (str, int) else None
    convert, exact, nullable = _loader(value_tp), _exact(value_tp), _optional(value_tp) is not None

    def load(value: Any) -> dict[Any, Any]:
        if type(value) is not dict and not isinstance(value, Mapping):
            raise _Mismatch(f"expected an object, got {_kind(value)}")
        out = {}
        for key, item in value.items():
            try:  # the value first, so that its error wins over the key's, as in `out[key(k)] = value(v)`
                item = _null(nullable) if item is None else item if type(item) is exact else convert(item)
                out[key if type(key) is key_exact else convert_key(key)] = item
            except _Mismatch as exc:
                exc.where.append(f"[{key!r:.60}]")
                raise
        return out

    return load


def _null(nullable: bool) -> None:
    """An array item or map value that is null: kept for ``X | None``, else rejected."""
    if not nullable:
        raise _Mismatch("null where a value is required")


def _key_loader(tp: Any) -> Callable[[Any], Any]:
    if isinstance(tp, type) and issubclass(tp, WireBean):
        return _bean_loader(tp)
    if tp is str:
        return _load_str_key
    if tp is int:
        return _load_int
    return _reject_key


def _load_str_key(key: Any) -> str:
    if isinstance(key, str | int):
        return str(key)
    return _reject_key(key)


def _reject_key(key: Any) -> Any:
    raise _Mismatch(f"unexpected map key {_kind(key)}")


def _enum_loader(tp: type[enum.Enum]) -> Callable[[Any], enum.Enum]:
    by_name = dict(tp.__members__)

    def load(value: Any) -> enum.Enum:
        if isinstance(value, str) and value in by_name:
            return by_name[value]
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return tp(value)
            except ValueError:
                pass
        raise _Mismatch(f"{value!r:.60} is not a {tp.__name__}")

    return load


def _load_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if value in (0, 1) and not isinstance(value, float):
        return bool(value)
    raise _Mismatch(f"expected a boolean, got {_kind(value)}")


def _load_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INT_TEXT.fullmatch(value):
        try:
            return int(value)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits())
            raise _Mismatch(f"integer of {len(value)} characters is too long") from None
    raise _Mismatch(f"expected an integer, got {_kind(value)}")


def _load_float(value: Any) -> float:
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            return float(value)
    except ValueError:
        pass
    except OverflowError:  # an integer beyond the range of a double
        raise _Mismatch(f"number too large for a double: {_kind(value)}") from None
    raise _Mismatch(f"expected a number, got {_kind(value)}")


def _load_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise _Mismatch(f"expected a string, got {_kind(value)}")


_SCALAR_LOADERS: dict[type, Callable[[Any], Any]] = {
    bool: _load_bool,
    int: _load_int,
    float: _load_float,
    str: _load_str,
}


# -- writing: one converter per type as well, with the same pass-through of exact scalars.


@functools.cache
def _dumper(tp: Any) -> Callable[[Any], Any]:
    inner = _optional(tp)
    if inner is not None:
        dump_inner = _dumper(inner)
        return lambda value: None if value is None else dump_inner(value)
    origin = typing.get_origin(tp)
    if origin is list:
        return _list_dumper(*typing.get_args(tp))
    if origin is dict:
        return _dict_dumper(*typing.get_args(tp))
    return _dump_float if tp is float else _dump_value


@functools.cache
def _bean_dumper(cls: type[WireBean]) -> Callable[[WireBean], dict[str, Any]]:
    steps = [(spec.attr, spec.wire, _exact(spec.type), _dumper(spec.type)) for spec in _fields(cls)]

    def dump(bean: WireBean) -> dict[str, Any]:
        out = {}
        for attr, name, exact, convert in steps:
            value = getattr(bean, attr)
            if value is not None:
                out[name] = value if type(value) is exact else convert(value)
        return out

    return dump


def _list_dumper(item_tp: Any) -> Callable[[Any], list[Any]]:
    convert, exact = _dumper(item_tp), _exact(item_tp)
    return lambda value: [item if type(item) is exact else convert(item) for item in value]


def _dict_dumper(key_tp: Any, value_tp: Any) -> Callable[[Any], dict[Any, Any]]:
    convert, exact = _dumper(value_tp), _exact(value_tp)
    return lambda value: {
        key.to_wire_key() if isinstance(key, WireBean) else key: item if type(item) is exact else convert(item)
        for key, item in value.items()
    }


def _dump_value(value: Any) -> Any:
    """A bean as its structure, an enum by name, anything else as it is: fastjson also goes by the runtime class."""
    if isinstance(value, WireBean):
        return value.to_wire()
    if isinstance(value, enum.Enum):
        return value.name
    return value


def _dump_float(value: Any) -> Any:
    """As :func:`_dump_value`, but a number is written as a Java double (``1.0`` for an int in a float attribute)."""
    if isinstance(value, (WireBean, enum.Enum)):
        return _dump_value(value)
    return float(value)

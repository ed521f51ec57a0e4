"""Java's String.hashCode and java.util.HashMap iteration order.

Java peers write maps (extFields, message properties, name-server tables) in HashMap iteration order, and match
tags by String.hashCode; reproducing both is what lets our frames and the sandbox's bodies match a real broker's
byte for byte."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from functools import lru_cache


@lru_cache(maxsize=65536)
def java_string_hash(text: str) -> int:
    """String.hashCode: over UTF-16 code units, as a signed 32-bit int."""
    if text.isascii():
        units: bytes | tuple[int, ...] = text.encode()
    else:
        raw = text.encode("utf-16-be", errors="surrogatepass")
        units = struct.unpack(f">{len(raw) // 2}H", raw)
    value = 0
    for unit in units:
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _spread_hash(key: str | int) -> int:
    """HashMap.hash() of a String or Long key (the hash code with its high half folded into the low half)."""
    if isinstance(key, int):
        value = key & 0xFFFFFFFFFFFFFFFF
        code = (value ^ (value >> 32)) & 0xFFFFFFFF
    else:
        code = java_string_hash(key) & 0xFFFFFFFF
    return code ^ (code >> 16)


def java_hashmap_order(
    keys: Iterable[str | int], *, initial_capacity: int = 16, peak_size: int | None = None
) -> list[str | int]:
    """The order a java.util.HashMap made with `initial_capacity` iterates `keys` (given in insertion order), once it
    has held `peak_size` entries at most (default: the number of keys). The table doubles whenever its size passes
    3/4 of the capacity and never shrinks; iteration walks buckets in order and each bucket's chain in insertion
    order (resizes split chains keeping that order), so a stable sort by bucket reproduces it."""
    keys = list(keys)
    capacity = 1
    while capacity < initial_capacity:
        capacity *= 2
    peak = len(keys) if peak_size is None else max(peak_size, len(keys))
    while peak > capacity * 3 // 4:
        capacity *= 2
    mask = capacity - 1
    ranked = sorted(range(len(keys)), key=lambda i: (_spread_hash(keys[i]) & mask, i))
    return [keys[i] for i in ranked]

"""Log-bucketed latency histogram in milliseconds: fixed memory, mergeable exactly, percentiles within 1%.

Pure Python on purpose (no Django): the producer SDK (`monitor/sdk`), the portal's ingestion and queries, and the
Spark jobs all share this one definition of the buckets and of the serialized form.

Buckets: index 0 holds every value <= 0.1 ms; index i in 1..TOP holds (0.1*GAMMA**(i-1), 0.1*GAMMA**i] ms, i.e.
``i = ceil(log(x / 0.1) / log(GAMMA))``; index OVERFLOW holds values > 60 s. A bucket's representative value is
``2 * lo * GAMMA / (GAMMA + 1)`` (lo = its lower bound), whose relative distance to any value in the bucket is at
most (GAMMA - 1) / (GAMMA + 1) < 1%. So unlike MQCloud's segmented table (50 ms wide above 100 ms, stopping at the
send timeout) every percentile between 0.1 ms and 60 s is within 1% of the exact one, with 674 counters.

Percentiles are nearest-rank (the value at rank ceil(q * n) of the sorted values), clamped into [min_ms, max_ms];
rank 1 and rank n return the exact min and max. Merging adds counts, so it is exact, associative and commutative:
percentiles over any set of clients and minutes can be computed later from the merged counts. :func:`merge_into` is
the one merge: :meth:`Histogram.merge`, the portal's queries and the Spark rollups all call it.

Serialized form (JSON; the SDK's reports, the stats tables and the Spark export all use it)::

    {"v": 1, "counts": {"<index>": n, ...}, "sum_ms": f, "max_ms": f, "min_ms": f}

``counts`` is sparse (non-zero buckets only). An empty histogram has no counts and zero sum/min/max. A histogram
holds at most :data:`MAX_COUNT` values, the most a 64-bit signed counter holds (the stats tables' ``bigint``, Spark's
``LongType``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

VERSION = 1
GAMMA = 1.02
MIN_MS = 0.1
MAX_MS = 60_000.0
_LOG_GAMMA = math.log(GAMMA)
#: The last regular bucket: the one whose range contains MAX_MS.
TOP = math.ceil(math.log(MAX_MS / MIN_MS) / _LOG_GAMMA)
#: The bucket of values above MAX_MS.
OVERFLOW = TOP + 1
BUCKETS = OVERFLOW + 1
#: The most values one histogram holds.
MAX_COUNT = 2**63 - 1
#: Worst relative error of a representative value against any value of its bucket (inside [MIN_MS, MAX_MS]).
RELATIVE_ERROR = (GAMMA - 1) / (GAMMA + 1)

_FIELDS = frozenset({"v", "counts", "sum_ms", "max_ms", "min_ms"})
# Float sums of the same values added in another order differ in the last bits; allow that much in validation.
_SUM_TOLERANCE = 1e-9


def bucket_index(ms: float) -> int:
    """The bucket of a value in milliseconds. ValueError for negative, NaN or infinite values."""
    if ms > MIN_MS:
        if ms <= MAX_MS:
            return math.ceil(math.log(ms / MIN_MS) / _LOG_GAMMA)
        if ms != math.inf:
            return OVERFLOW
    elif ms >= 0:
        return 0
    raise ValueError(f"a latency must be a finite number of milliseconds >= 0, not {ms!r}")


def bucket_value(index: int) -> float:
    """The representative value of a bucket (callers clamp it into the recorded [min, max])."""
    if index <= 0:
        return MIN_MS
    if index >= OVERFLOW:
        return MAX_MS
    lower = MIN_MS * GAMMA ** (index - 1)
    return 2 * lower * GAMMA / (GAMMA + 1)


def nearest_rank(q: float, count: int) -> int:
    """The 1-based nearest rank ceil(q * count) for 0 <= q <= 1, rounded first so that 0.07 * 100 is rank 7."""
    if not 0 <= q <= 1:
        raise ValueError(f"a percentile must be between 0 and 1, not {q!r}")
    return min(count, max(1, math.ceil(round(q * count, 6))))


def percentile_from_counts(
    counts: Mapping[int | str, int], q: float, *, min_ms: float | None = None, max_ms: float | None = None
) -> float | None:
    """The nearest-rank percentile q (0..1) of merged sparse bucket counts; None when there are none.

    For callers holding aggregated counts rather than a Histogram (the Spark jobs sum counts per bucket). Keys may be
    ints or the serialized strings. With the merged min/max the result is clamped into them and rank 1 / rank n are
    exact.
    """
    items = sorted((int(index), n) for index, n in counts.items() if n)
    total = sum(n for _, n in items)
    if not total:
        return None
    rank = nearest_rank(q, total)
    if rank == total and max_ms is not None:
        return max_ms
    if rank == 1 and min_ms is not None:
        return min_ms
    seen = 0
    for index, n in items:
        seen += n
        if seen >= rank:
            value = bucket_value(index)
            if index >= OVERFLOW and max_ms is not None:
                value = max_ms
            if min_ms is not None:
                value = max(value, min_ms)
            if max_ms is not None:
                value = min(value, max_ms)
            return value
    raise AssertionError("unreachable: rank <= total")


def empty() -> dict:
    """The serialized form of a histogram holding no value: what :func:`merge_into` starts a total from."""
    return {"v": VERSION, "counts": {}, "sum_ms": 0.0, "max_ms": 0.0, "min_ms": 0.0}


def merge_into(total: dict, histogram: Mapping) -> dict:
    """Add ``histogram`` into ``total`` (both in the serialized form) and return ``total``: counts added bucket by
    bucket, sums added, min and max taken over the histograms that hold values (an empty one, whatever its min and
    max say, changes nothing).

    The one merge, so a percentile of merged minutes is the same wherever it is computed: :meth:`Histogram.merge`,
    the portal's queries (rows of the stats tables, string keys) and the Spark rollups (a Row per minute, integer
    keys) all call it. Bucket keys are kept as given: one total must not mix string and integer keys.
    """
    added = histogram["counts"]
    if not added:
        return total
    counts = total["counts"]
    if counts:
        total["min_ms"] = min(total["min_ms"], histogram["min_ms"])
        total["max_ms"] = max(total["max_ms"], histogram["max_ms"])
    else:
        total["min_ms"], total["max_ms"] = histogram["min_ms"], histogram["max_ms"]
    for index, n in added.items():
        counts[index] = counts.get(index, 0) + n
    total["sum_ms"] += histogram["sum_ms"]
    return total


def _is_bucket_key(key: str) -> bool:
    """Whether a serialized bucket key is a bucket index written plainly ("7", not "07", "٧" or "+7")."""
    return (
        key.isascii()
        and key.isdigit()
        and len(key) <= len(str(OVERFLOW))
        and str(int(key)) == key
        and int(key) < BUCKETS
    )


class Histogram:
    """A fixed-size latency histogram. Not thread-safe: the SDK's recorder serializes access with its own lock."""

    __slots__ = ("_counts", "count", "max_ms", "min_ms", "sum_ms")

    def __init__(self) -> None:
        self._counts = [0] * BUCKETS
        self.count = 0
        self.sum_ms = 0.0
        self.max_ms = 0.0
        self.min_ms = 0.0

    def record(self, ms: float) -> None:
        """Add one value in milliseconds (ValueError if negative, NaN or infinite)."""
        # bucket_index inlined: this runs once per send.
        if MIN_MS < ms <= MAX_MS:
            self._counts[math.ceil(math.log(ms / MIN_MS) / _LOG_GAMMA)] += 1
        else:
            self._counts[bucket_index(ms)] += 1
        if self.count:
            if ms > self.max_ms:
                self.max_ms = ms
            elif ms < self.min_ms:
                self.min_ms = ms
        else:
            self.max_ms = self.min_ms = ms
        self.count += 1
        self.sum_ms += ms

    def merge(self, other: Histogram) -> Histogram:
        """Add another histogram's values into this one (exact, by :func:`merge_into`); returns self.

        Through the serialized form rather than the dense counters: a merge is rare next to ``record`` (the SDK
        never merges; tests and tools do), and one merge everywhere matters more than the copies."""
        merged = merge_into(self.to_dict(), other.to_dict())
        self._counts = [0] * BUCKETS
        for key, n in merged["counts"].items():
            self._counts[int(key)] = n
        self.count += other.count
        self.sum_ms, self.max_ms, self.min_ms = merged["sum_ms"], merged["max_ms"], merged["min_ms"]
        return self

    @classmethod
    def merged(cls, histograms: Iterable[Histogram]) -> Histogram:
        """A new histogram holding the values of all the given ones."""
        result = cls()
        for histogram in histograms:
            result.merge(histogram)
        return result

    def percentile(self, q: float) -> float | None:
        """The nearest-rank percentile q (0..1, e.g. 0.99) in milliseconds, within 1%; None when empty."""
        if not self.count:
            return None
        return percentile_from_counts(self.counts(), q, min_ms=self.min_ms, max_ms=self.max_ms)

    @property
    def mean_ms(self) -> float | None:
        return self.sum_ms / self.count if self.count else None

    def counts(self) -> dict[int, int]:
        """The non-zero bucket counts, by bucket index."""
        return {index: n for index, n in enumerate(self._counts) if n}

    def to_dict(self) -> dict:
        return {
            "v": VERSION,
            "counts": {str(index): n for index, n in enumerate(self._counts) if n},
            "sum_ms": float(self.sum_ms),
            "max_ms": float(self.max_ms),
            "min_ms": float(self.min_ms),
        }

    @classmethod
    def from_dict(cls, data: object) -> Histogram:
        """Parse the serialized form, strictly: ValueError naming what is wrong, never a half-valid histogram."""
        if not isinstance(data, dict):
            raise ValueError(f"a histogram must be an object, not {type(data).__name__}")
        if set(data) != _FIELDS:
            missing, extra = sorted(_FIELDS - set(data)), sorted(set(data) - _FIELDS)
            raise ValueError(f"a histogram has exactly the fields {sorted(_FIELDS)}; missing {missing}, extra {extra}")
        if data["v"] != VERSION or isinstance(data["v"], bool):
            raise ValueError(f"unsupported histogram version {data['v']!r} (expected {VERSION})")
        histogram = cls()
        counts = data["counts"]
        if not isinstance(counts, dict):
            raise ValueError("histogram counts must be an object of bucket index -> count")
        total, indexes = 0, []
        for key, n in counts.items():
            if not isinstance(key, str) or not _is_bucket_key(key):
                raise ValueError(f"histogram bucket {key!r} is not a bucket index between 0 and {OVERFLOW}")
            if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= MAX_COUNT:
                raise ValueError(
                    f"histogram bucket {key} count must be a positive integer of at most {MAX_COUNT}, not {n!r}"
                )
            index = int(key)
            histogram._counts[index] = n
            indexes.append(index)
            total += n
        if total > MAX_COUNT:
            raise ValueError(f"a histogram holds at most {MAX_COUNT} values, not {total}")
        histogram.count = total
        for field in ("sum_ms", "max_ms", "min_ms"):
            value = data[field]
            if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(f"histogram {field} must be a finite number >= 0, not {value!r}")
            setattr(histogram, field, float(value))
        # The sparse keys give the lowest and highest buckets without a scan of every bucket (ingestion parses
        # thousands of histograms a second).
        histogram._check_consistent(min(indexes, default=0), max(indexes, default=0))
        return histogram

    def _check_consistent(self, lowest: int, highest: int) -> None:
        if not self.count:
            if self.sum_ms or self.max_ms or self.min_ms:
                raise ValueError("an empty histogram must have sum_ms, max_ms and min_ms 0")
            return
        if bucket_index(self.min_ms) != lowest:
            raise ValueError(f"histogram min_ms {self.min_ms} is not in its lowest bucket {lowest}")
        if bucket_index(self.max_ms) != highest:
            raise ValueError(f"histogram max_ms {self.max_ms} is not in its highest bucket {highest}")
        slack = _SUM_TOLERANCE * max(1.0, self.sum_ms)
        if not self.min_ms * self.count - slack <= self.sum_ms <= self.max_ms * self.count + slack:
            raise ValueError(f"histogram sum_ms {self.sum_ms} is impossible for {self.count} values in [min, max]")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return (self._counts, self.count, self.max_ms, self.min_ms) == (
            other._counts,
            other.count,
            other.max_ms,
            other.min_ms,
        ) and math.isclose(self.sum_ms, other.sum_ms, rel_tol=1e-12, abs_tol=1e-12)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"<Histogram count={self.count} min={self.min_ms} max={self.max_ms}>"

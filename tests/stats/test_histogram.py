"""The latency histogram: exact merges, percentiles within 1% of the exact nearest-rank ones, strict parsing."""

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stats.histogram import (
    MAX_MS,
    MIN_MS,
    OVERFLOW,
    RELATIVE_ERROR,
    Histogram,
    bucket_index,
    empty,
    merge_into,
    percentile_from_counts,
)

in_range = st.floats(min_value=MIN_MS, max_value=MAX_MS, allow_nan=False, allow_infinity=False)
any_latency = st.one_of(
    in_range,
    st.floats(min_value=0, max_value=MIN_MS),
    st.floats(min_value=MAX_MS, max_value=1e9, allow_nan=False, allow_infinity=False),
)
values_lists = st.lists(any_latency, max_size=200)
# Percentiles as exact decimals k/1000 so the expected rank is computed without floating point.
permilles = st.integers(min_value=0, max_value=1000)


def histogram_of(values):
    histogram = Histogram()
    for value in values:
        histogram.record(value)
    return histogram


def exact_percentile(values, permille):
    ordered = sorted(values)
    rank = max(1, math.ceil(Fraction(permille, 1000) * len(ordered)))
    return ordered[rank - 1]


@settings(max_examples=300)
@given(st.lists(in_range, min_size=1, max_size=500), permilles)
def test_percentiles_are_within_one_percent_of_exact_nearest_rank(values, permille):
    expected = exact_percentile(values, permille)
    reported = histogram_of(values).percentile(permille / 1000)
    assert abs(reported - expected) <= RELATIVE_ERROR * expected * (1 + 1e-9)
    assert RELATIVE_ERROR < 0.01


@given(st.lists(in_range, min_size=1, max_size=200), st.lists(in_range, min_size=1, max_size=200), permilles)
def test_percentiles_of_merged_histograms_are_within_one_percent_of_the_union(first, second, permille):
    merged = histogram_of(first).merge(histogram_of(second))
    expected = exact_percentile(first + second, permille)
    assert abs(merged.percentile(permille / 1000) - expected) <= RELATIVE_ERROR * expected * (1 + 1e-9)


@given(values_lists, values_lists)
def test_merge_is_exact(first, second):
    assert histogram_of(first).merge(histogram_of(second)) == histogram_of(first + second)


@given(values_lists, values_lists)
def test_merge_is_commutative(first, second):
    assert histogram_of(first).merge(histogram_of(second)) == histogram_of(second).merge(histogram_of(first))


@given(values_lists, values_lists, values_lists)
def test_merge_is_associative(a, b, c):
    left = histogram_of(a).merge(histogram_of(b)).merge(histogram_of(c))
    right = histogram_of(a).merge(histogram_of(b).merge(histogram_of(c)))
    assert left == right
    assert left.count == len(a) + len(b) + len(c)


@given(st.lists(values_lists, max_size=5))
def test_merging_serialized_histograms_gives_the_serialized_merge(lists):
    """The query layer and the Spark rollups merge serialized rows with merge_into: the same histogram as merging
    the Histograms themselves, or recording every value in one."""
    total = empty()
    for values in lists:
        merge_into(total, histogram_of(values).to_dict())
    everything = [value for values in lists for value in values]
    assert Histogram.from_dict(total) == histogram_of(everything) == Histogram.merged(map(histogram_of, lists))


def test_merging_an_empty_histogram_changes_nothing_whatever_its_min_and_max_say():
    """A sends-only row (every send failed) carries no latency; its zero min must not become the total's min."""
    total = merge_into(empty(), histogram_of([5.0, 9.0]).to_dict())
    before = json.loads(json.dumps(total))
    assert merge_into(total, {"counts": {}, "sum_ms": 0.0, "min_ms": 0.0, "max_ms": 0.0}) == before
    assert merge_into(empty(), {"counts": {}}) == empty()


@given(values_lists)
def test_serialization_round_trips_through_json(values):
    histogram = histogram_of(values)
    assert Histogram.from_dict(json.loads(json.dumps(histogram.to_dict()))) == histogram


@given(st.lists(in_range, min_size=1, max_size=200), permilles)
def test_percentile_from_merged_sparse_counts_matches_the_histogram(values, permille):
    histogram = histogram_of(values)
    serialized = histogram.to_dict()
    q = permille / 1000
    assert percentile_from_counts(
        serialized["counts"], q, min_ms=serialized["min_ms"], max_ms=serialized["max_ms"]
    ) == histogram.percentile(q)


def test_extreme_percentiles_are_the_exact_min_and_max():
    histogram = histogram_of([3.3, 7.77, 1234.5])
    assert histogram.percentile(0) == 3.3
    assert histogram.percentile(1) == 1234.5


def test_values_outside_the_range_fall_into_the_edge_buckets():
    assert bucket_index(0) == 0
    assert bucket_index(MIN_MS) == 0
    assert bucket_index(MAX_MS) == OVERFLOW - 1
    assert bucket_index(MAX_MS * 2) == OVERFLOW
    assert histogram_of([90_000.0]).percentile(0.5) == 90_000.0


@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf])
def test_recording_an_impossible_latency_is_refused(value):
    with pytest.raises(ValueError):
        Histogram().record(value)


def test_empty_histogram_has_no_percentile_and_serializes_to_zeros():
    assert Histogram().percentile(0.99) is None
    assert Histogram().to_dict() == {"v": 1, "counts": {}, "sum_ms": 0.0, "max_ms": 0.0, "min_ms": 0.0}
    assert percentile_from_counts({}, 0.5) is None


def test_memory_is_fixed_whatever_is_recorded():
    histogram = histogram_of([0.5 * 1.01**i for i in range(5000)])
    assert len(histogram._counts) == OVERFLOW + 1


VALID = {"v": 1, "counts": {"36": 1, "349": 2}, "sum_ms": 199.7, "max_ms": 100.0, "min_ms": 0.2}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"v": 2}, "version"),
        ({"v": True}, "version"),
        ({"counts": []}, "counts must be an object"),
        ({"counts": {"x": 1}}, "is not a bucket index"),
        ({"counts": {"036": 1, "349": 2}}, "is not a bucket index"),
        ({"counts": {"-1": 1}}, "is not a bucket index"),
        ({"counts": {str(OVERFLOW + 1): 1}}, "is not a bucket index"),
        ({"counts": {"36": 0, "349": 2}}, "positive integer"),
        ({"counts": {"36": 1.5, "349": 2}}, "positive integer"),
        ({"counts": {"36": True, "349": 2}}, "positive integer"),
        ({"counts": {"²": 1}}, "is not a bucket index"),
        ({"counts": {"1" * 5000: 1}}, "is not a bucket index"),
        ({"counts": {"36": 2**63, "349": 2}}, "at most 9223372036854775807"),
        ({"counts": {"36": 10**400, "349": 2}}, "at most 9223372036854775807"),
        ({"counts": {"36": 2**62, "349": 2**62}}, "holds at most 9223372036854775807 values"),
        ({"sum_ms": "204"}, "finite number"),
        ({"max_ms": math.inf}, "finite number"),
        ({"min_ms": -0.2}, "finite number"),
        ({"min_ms": 5.0}, "lowest bucket"),
        ({"max_ms": 150.0}, "highest bucket"),
        ({"sum_ms": 1000.0}, "impossible"),
        ({"counts": {}}, "empty histogram"),
    ],
)
def test_from_dict_rejects_malformed_input_with_a_clear_message(change, message):
    with pytest.raises(ValueError, match=message):
        Histogram.from_dict({**VALID, **change})


@pytest.mark.parametrize("data", [None, [], "{}", {"v": 1}, {**VALID, "extra": 1}])
def test_from_dict_rejects_objects_without_exactly_the_fields(data):
    with pytest.raises(ValueError):
        Histogram.from_dict(data)


def test_from_dict_accepts_the_documented_example():
    histogram = Histogram.from_dict(VALID)
    assert histogram.count == 3
    assert histogram.percentile(1) == 100.0

"""Thresholds of the warning rules: built-in defaults, admins' defaults over them, the owning team's overrides over
those; parameters validated per kind with field errors; everything for a cluster loaded in a fixed number of
queries."""

import math

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from portal.models import AuditEntry, Cluster, ConsumerGroup, ProducerGroup, Topic
from portal.models.warning_params import BUILTIN, PARAMS, kinds_for, validate_params
from portal.models.warnings import SubjectType, ThresholdScope, WarningKind, WarningThreshold
from portal.services.warnings.thresholds import set_default, set_override, thresholds_for

LAG = WarningKind.CONSUMER_LAG


@pytest.fixture
def own_cluster(db):
    return Cluster.objects.create(name="thresholds")


@pytest.fixture
def group(own_cluster, team):
    return ConsumerGroup.objects.create(cluster=own_cluster, team=team, name="order-consumer")


def test_the_built_in_defaults_are_the_documented_ones():
    assert BUILTIN[LAG] == {"messages": 10_000, "seconds": 300, "enabled": True, "repeat_seconds": 3600}
    assert BUILTIN[WarningKind.CLIENT_BLOCKED]["seconds"] == 10
    assert all(params["repeat_seconds"] == 3600 for params in BUILTIN.values())
    assert set(BUILTIN) == set(WarningKind.values)


def test_an_admins_default_overrides_the_built_in_one_and_an_owners_override_overrides_both(
    own_cluster, group, portal_admin, member
):
    set_default(LAG, {"messages": 50_000}, by=portal_admin)
    set_override(LAG, group, {"seconds": 60}, by=member)

    thresholds = thresholds_for(own_cluster)

    assert thresholds.get(LAG, SubjectType.CONSUMER_GROUP, "order-consumer") == {
        "messages": 50_000,
        "seconds": 60,
        "enabled": True,
        "repeat_seconds": 3600,
    }
    assert thresholds.get(LAG, SubjectType.CONSUMER_GROUP, "another-group")["seconds"] == 300
    assert thresholds.get(LAG)["messages"] == 50_000


def test_overrides_of_other_clusters_do_not_apply(own_cluster, group, team, member):
    elsewhere = Cluster.objects.create(name="elsewhere")
    twin = ConsumerGroup.objects.create(cluster=elsewhere, team=team, name="order-consumer")
    set_override(LAG, twin, {"seconds": 60}, by=member)

    assert thresholds_for(own_cluster).get(LAG, SubjectType.CONSUMER_GROUP, "order-consumer")["seconds"] == 300


def test_all_thresholds_of_a_cluster_load_in_two_queries(own_cluster, team, django_assert_num_queries):
    for index in range(20):
        topic = Topic.objects.create(cluster=own_cluster, team=team, name=f"T{index}")
        group = ConsumerGroup.objects.create(cluster=own_cluster, team=team, name=f"G{index}")
        producers = ProducerGroup.objects.create(cluster=own_cluster, team=team, name=f"P{index}")
        WarningThreshold.objects.create(
            kind=WarningKind.TRAFFIC_SURGE, scope=ThresholdScope.TOPIC, topic=topic, params={"factor": 5}
        )
        WarningThreshold.objects.create(
            kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"messages": index + 1}
        )
        WarningThreshold.objects.create(
            kind=WarningKind.PRODUCE_ERRORS,
            scope=ThresholdScope.PRODUCER_GROUP,
            producer_group=producers,
            params={"exceptions": 10},
        )

    with django_assert_num_queries(2):
        thresholds = thresholds_for(own_cluster)
        looked_up = [thresholds.get(LAG, SubjectType.CONSUMER_GROUP, f"G{index}") for index in range(20)]

    assert [params["messages"] for params in looked_up] == list(range(1, 21))
    assert thresholds.get(WarningKind.TRAFFIC_SURGE, SubjectType.TOPIC, "T3")["factor"] == 5.0
    assert thresholds.get(WarningKind.PRODUCE_ERRORS, SubjectType.PRODUCER_GROUP, "P3")["exceptions"] == 10


def test_parameters_are_validated_per_kind_with_an_error_per_field():
    with pytest.raises(ValidationError) as caught:
        validate_params(LAG, {"messages": 0, "seconds": 2.5, "factor": 3, "repeat_seconds": "soon"})

    assert caught.value.message_dict == {
        "messages": ["Must be at least 1."],
        "seconds": ["Enter a whole number."],
        "factor": ["Unknown parameter for this warning type."],
        "repeat_seconds": ["Enter a number."],
    }


@pytest.mark.parametrize(
    ("kind", "params", "field"),
    [
        (WarningKind.TRAFFIC_DROP, {"factor": 1.0}, "factor"),
        (WarningKind.TRAFFIC_SURGE, {"factor": 1}, "factor"),
        (WarningKind.SERVER_DISK, {"percent": 101}, "percent"),
        (WarningKind.BROKER_DOWN, {"grace_seconds": -1}, "grace_seconds"),
        (WarningKind.CONSUMER_LAG, {"enabled": 1}, "enabled"),
        (WarningKind.CONSUMER_LAG, {"repeat_seconds": 10}, "repeat_seconds"),
    ],
)
def test_out_of_range_parameters_are_refused(kind, params, field):
    with pytest.raises(ValidationError) as caught:
        validate_params(kind, params)

    assert list(caught.value.message_dict) == [field]


def test_valid_parameters_are_normalised():
    assert validate_params(WarningKind.TRAFFIC_DROP, {"factor": 0.5, "baseline_minutes": 30.0}) == {
        "factor": 0.5,
        "baseline_minutes": 30,
    }


def test_an_override_must_match_the_kinds_subject(own_cluster, team, member):
    topic = Topic.objects.create(cluster=own_cluster, team=team, name="orders")

    with pytest.raises(ValidationError) as caught:
        set_override(LAG, topic, {"messages": 5}, by=member)

    assert "scope" in caught.value.message_dict
    assert kinds_for(topic) == [WarningKind.TRAFFIC_SURGE, WarningKind.TRAFFIC_DROP, WarningKind.TRACE_FAILURES]


def test_only_portal_admins_set_defaults_and_only_the_owning_team_overrides(group, member, outsider, portal_admin):
    with pytest.raises(PermissionDenied):
        set_default(LAG, {"messages": 5}, by=member)
    with pytest.raises(PermissionDenied):
        set_override(LAG, group, {"messages": 5}, by=outsider)

    set_override(LAG, group, {"messages": 5}, by=portal_admin)


def test_setting_again_replaces_and_an_empty_override_removes_it_all_audited(own_cluster, group, member):
    set_override(LAG, group, {"messages": 5}, by=member)
    set_override(LAG, group, {"seconds": 30}, by=member)
    assert WarningThreshold.objects.get().params == {"seconds": 30}

    set_override(LAG, group, {}, by=member)

    assert not WarningThreshold.objects.exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "warningthreshold.created",
        "warningthreshold.updated",
        "warningthreshold.deleted",
    ]


def test_a_stored_value_that_no_longer_validates_is_ignored_not_fatal(own_cluster, group):
    WarningThreshold.objects.create(
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"messages": -5, "seconds": 42}
    )

    params = thresholds_for(own_cluster).get(LAG, SubjectType.CONSUMER_GROUP, "order-consumer")

    assert (params["messages"], params["seconds"]) == (10_000, 42)


# --- bounds (issue 15: a huge number reached the rules' date arithmetic and stopped every team's lag warnings) ---


NUMBERS = [(kind, param) for kind, params in PARAMS.items() for param in params if param.type is not bool]


@pytest.mark.parametrize(("kind", "param"), NUMBERS, ids=[f"{kind}-{param.name}" for kind, param in NUMBERS])
@pytest.mark.parametrize(
    "value",
    [10**30, 10**400, -(10**30), 1e300, math.inf, -math.inf, math.nan],
    ids=["1e30", "1e400-int", "-1e30", "1e300-float", "inf", "-inf", "nan"],
)
def test_every_number_out_of_its_range_or_not_finite_is_refused_naming_its_field(kind, param, value):
    with pytest.raises(ValidationError) as caught:
        validate_params(kind, {param.name: value})

    assert list(caught.value.message_dict) == [param.name]


@pytest.mark.parametrize(("kind", "param"), NUMBERS, ids=[f"{kind}-{param.name}" for kind, param in NUMBERS])
def test_every_number_has_a_range_holding_its_default_and_both_ends_are_accepted(kind, param):
    ends = [
        end
        for end, exclusive in ((param.minimum, param.exclusive_minimum), (param.maximum, param.exclusive_maximum))
        if not exclusive
    ]

    assert validate_params(kind, {param.name: param.default}) == {param.name: param.default}
    for end in ends:
        assert validate_params(kind, {param.name: end}) == {param.name: param.type(end)}


def test_the_range_is_said_in_the_error_and_in_words_for_the_forms():
    with pytest.raises(ValidationError) as caught:
        validate_params(LAG, {"seconds": 10**30, "messages": math.nan})

    assert caught.value.message_dict == {
        "seconds": ["Must be at most 604,800."],
        "messages": ["Enter a finite number."],
    }
    seconds = next(param for param in PARAMS[LAG] if param.name == "seconds")
    drop = next(param for param in PARAMS[WarningKind.TRAFFIC_DROP] if param.name == "factor")
    assert (seconds.range_text, drop.range_text) == ("From 1 to 604,800.", "More than 0 and less than 1.")


def test_a_huge_override_is_refused_by_the_model_validation_every_entry_point_shares(group, member):
    with pytest.raises(ValidationError) as caught:
        set_override(LAG, group, {"seconds": 10**30}, by=member)
    row = WarningThreshold(
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"seconds": 1e30}
    )
    with pytest.raises(ValidationError) as cleaned:
        row.full_clean()

    assert caught.value.message_dict == {"seconds": ["Must be at most 604,800."]}
    assert cleaned.value.message_dict == {"seconds": ["Must be at most 604,800."]}
    assert not WarningThreshold.objects.exists()


def test_a_stored_value_out_of_range_is_ignored_with_a_log_line_and_the_inherited_value_applies(
    own_cluster, group, portal_admin, caplog
):
    set_default(LAG, {"seconds": 600}, by=portal_admin)
    WarningThreshold.objects.create(  # written before the bounds existed, or around validation
        kind=LAG, scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"seconds": 10**30, "messages": 7}
    )

    params = thresholds_for(own_cluster).get(LAG, SubjectType.CONSUMER_GROUP, "order-consumer")

    assert (params["messages"], params["seconds"]) == (7, 600)
    assert "seconds=1000000000000000000000000000000: Must be at most 604,800." in caplog.text


def test_a_stored_row_of_an_unknown_kind_is_ignored_not_fatal(own_cluster, group):
    WarningThreshold.objects.create(kind="retired_kind", scope=ThresholdScope.DEFAULT, params={"seconds": 5})
    WarningThreshold.objects.create(
        kind="retired_kind", scope=ThresholdScope.CONSUMER_GROUP, consumer_group=group, params={"seconds": 5}
    )

    assert thresholds_for(own_cluster).get(LAG, SubjectType.CONSUMER_GROUP, "order-consumer") == BUILTIN[LAG]

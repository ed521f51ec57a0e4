"""The application pages: each form submits through the service and shows its field errors inline, the list and
the page of an application (status, decision reason, last error, cancel), and the end-to-end path through the pages:
a member applies for a topic and a consumer group with the forms, a portal admin approves them in the approval
queue, and both exist on the sandbox cluster."""

import pytest
from django.urls import reverse

from monitor.remoting.admin import MQAdmin
from portal.models import (
    Application,
    ApplicationKind,
    ApplicationState,
    AssociationRole,
    ConsumerGroup,
    ProducerGroup,
    Subscription,
    Topic,
)
from portal.services import cluster_ops


@pytest.fixture
def as_member(client, member):
    client.force_login(member)
    return client


def topic_form(team, cluster, groups=(), **fields):
    """The topic form with its consumer-group rows (name, message model, tag expression)."""
    data = {
        "team": team.pk,
        "cluster": cluster.pk,
        "queue_nums": 8,
        "reason": "orders",
        "group-TOTAL_FORMS": len(groups),
        "group-INITIAL_FORMS": 0,
        **fields,
    }
    for i, (name, model, expression) in enumerate(groups):
        data.update(
            {f"group-{i}-name": name, f"group-{i}-message_model": model, f"group-{i}-tag_expression": expression}
        )
    return data


def group_form(team, cluster, name, rows, **fields):
    """The consumer-group form with its subscription rows (topic name, tag expression)."""
    data = {
        "team": team.pk,
        "cluster": cluster.pk,
        "name": name,
        "message_model": "CLUSTERING",
        "sub-TOTAL_FORMS": len(rows),
        "sub-INITIAL_FORMS": 0,
        **fields,
    }
    for i, (topic, expression) in enumerate(rows):
        data[f"sub-{i}-topic"] = topic
        data[f"sub-{i}-tag_expression"] = expression
    return data


def test_applying_for_a_topic_files_a_pending_application_and_shows_it(as_member, member, team, cluster):
    response = as_member.post(reverse("apply-topic"), topic_form(team, cluster, name="PAY_REFUNDED", ordered="on"))
    application = Application.objects.get()
    assert response.status_code == 302 and response.url == reverse("application-detail", args=[application.pk])
    assert (application.kind, application.state, application.applicant, application.team) == (
        ApplicationKind.TOPIC_CREATE,
        ApplicationState.PENDING,
        member,
        team,
    )
    assert application.payload["name"] == "PAY_REFUNDED" and application.payload["ordered"] is True
    page = as_member.get(response.url)
    assert "PAY_REFUNDED" in page.text and "pending" in page.text
    assert reverse("application-cancel", args=[application.pk]) in page.text


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "TBW102"}, "name", "TBW102 is a RocketMQ system topic name and cannot be used."),
        ({"name": "bad name!"}, "name", "Only letters, digits, '-' and '_' are allowed"),
        ({"name": "%RETRY%x"}, "name", "The characters % and | are reserved by RocketMQ"),
        ({"name": "OK_NAME", "queue_nums": 0}, "queue_nums", "The queue count must be between 1 and 256."),
        ({"name": "OK_NAME", "queue_nums": 10_000}, "queue_nums", "The queue count must be between 1 and 256."),
    ],
)
def test_topic_form_shows_the_services_errors_on_their_fields(as_member, team, cluster, fields, field, message):
    response = as_member.post(reverse("apply-topic"), topic_form(team, cluster, **fields))
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == [field] and errors[field][0].startswith(message)
    assert '<ul class="errorlist"' in response.text
    assert not Application.objects.exists()


def test_a_taken_topic_name_is_an_error_on_the_name(as_member, team, cluster, topic):
    response = as_member.post(reverse("apply-topic"), topic_form(team, cluster, name=topic.name))
    assert "already exists on cluster sandbox (owned by payments)" in response.context["form"].errors["name"][0]


def test_only_the_users_teams_can_be_chosen(as_member, team, other_team, cluster):
    form = as_member.get(reverse("apply-topic")).context["form"]
    assert list(form.fields["team"].queryset) == [team]
    response = as_member.post(reverse("apply-topic"), topic_form(other_team, cluster, name="SNEAKY"))
    assert "team" in response.context["form"].errors


def test_a_consumer_group_application_subscribes_to_topics_by_name(as_member, team, cluster, topic):
    other = Topic.objects.create(cluster=cluster, team=team, name="PAY_ORDER_PAID")
    data = group_form(team, cluster, "GID_BILLING", [(topic.name, "TagA || TagB"), (other.name, ""), ("", "")])
    response = as_member.post(reverse("apply-consumer-group"), data)
    assert response.status_code == 302
    assert Application.objects.get().payload["subscriptions"] == [
        {"topic_id": topic.pk, "tag_expression": "TagA || TagB"},
        {"topic_id": other.pk, "tag_expression": "*"},
    ]


def test_the_topic_page_prefills_the_consumer_group_form(as_member, topic):
    response = as_member.get(reverse("apply-consumer-group"), {"cluster": topic.cluster_id, "topic": topic.name})
    assert response.context["formset"].forms[0].initial == {"topic": topic.name}
    assert response.context["form"]["cluster"].value() == str(topic.cluster_id)


def test_a_consumer_group_without_subscriptions_shows_the_error_on_the_subscription_rows(as_member, team, cluster):
    response = as_member.post(reverse("apply-consumer-group"), group_form(team, cluster, "GID_LONELY", [("", "")]))
    assert response.status_code == 200
    assert response.context["formset"].non_form_errors() == ["Subscribe to at least one topic."]
    assert '<ul class="errorlist nonform">' in response.text
    assert not Application.objects.exists()


def test_bad_subscription_rows_are_errors_on_those_rows(as_member, team, cluster, topic):
    data = group_form(team, cluster, "GID_TYPO", [(topic.name, "TagA ||"), ("NO_SUCH_TOPIC", "*")])
    response = as_member.post(reverse("apply-consumer-group"), data)
    rows = response.context["formset"].forms
    assert rows[1].errors == {"topic": ["No topic named NO_SUCH_TOPIC is registered on cluster sandbox."]}
    # once every topic is known, the service checks the tag expressions
    data = group_form(team, cluster, "GID_TYPO", [(topic.name, "TagA ||")])
    response = as_member.post(reverse("apply-consumer-group"), data)
    assert response.context["formset"].non_form_errors() == [
        "Separate tags with || and leave no tag empty, e.g. TagA || TagB."
    ]


def test_a_consumer_group_name_error_stays_on_the_name_while_the_rows_keep_their_values(
    as_member, team, cluster, topic
):
    data = group_form(team, cluster, "DEFAULT_CONSUMER", [(topic.name, "TagA")])
    response = as_member.post(reverse("apply-consumer-group"), data)
    assert list(response.context["form"].errors) == ["name"]
    assert f'value="{topic.name}"' in response.text and 'value="TagA"' in response.text


def test_a_producer_group_application_names_its_topics(as_member, team, cluster, topic):
    response = as_member.post(
        reverse("apply-producer-group"),
        {"team": team.pk, "cluster": cluster.pk, "name": "PID_BILLING", "topics": f"{topic.name}, NOPE"},
    )
    assert response.context["form"].errors == {"topics": ["Not registered on cluster sandbox: NOPE"]}
    response = as_member.post(
        reverse("apply-producer-group"),
        {"team": team.pk, "cluster": cluster.pk, "name": "PID_BILLING", "topics": topic.name},
    )
    assert response.status_code == 302
    assert Application.objects.get().payload["topic_ids"] == [topic.pk]


def test_a_topic_change_sends_only_what_changes(as_member, topic):
    url = reverse("topic-apply-change", args=[topic.pk])
    assert as_member.get(url).context["form"].initial == {"queue_nums": 8, "trace_enabled": False}
    response = as_member.post(url, {"queue_nums": 8})
    assert response.context["form"].non_field_errors() == ["Change the queue count or the trace setting."]
    response = as_member.post(url, {"queue_nums": 16, "reason": "more consumers"})
    assert response.status_code == 302
    application = Application.objects.get()
    assert application.topic == topic and application.payload == {"name": topic.name, "queue_nums": 16}


def test_a_topic_deletion_is_refused_while_groups_subscribe(client, team_admin, team, topic):
    group = ConsumerGroup.objects.create(cluster=topic.cluster, team=team, name="GID_STILL_HERE")
    Subscription.objects.create(consumer_group=group, topic=topic)
    client.force_login(team_admin)
    response = client.post(reverse("topic-apply-delete", args=[topic.pk]), {"reason": "retired"})
    assert response.status_code == 200
    assert "GID_STILL_HERE" in response.context["form"].non_field_errors()[0]
    group.delete()
    response = client.post(reverse("topic-apply-delete", args=[topic.pk]), {"reason": "retired"})
    assert response.status_code == 302
    assert Application.objects.get().kind == ApplicationKind.TOPIC_DELETE


def test_group_deletions_are_applied_for_on_their_pages(client, team_admin, team, cluster):
    consumer = ConsumerGroup.objects.create(cluster=cluster, team=team, name="GID_OLD")
    producer = ProducerGroup.objects.create(cluster=cluster, team=team, name="PID_OLD")
    client.force_login(team_admin)
    client.post(reverse("consumer-group-apply-delete", args=[consumer.pk]), {"reason": "gone"})
    client.post(reverse("producer-group-apply-delete", args=[producer.pk]), {"reason": "gone"})
    assert {(a.kind, a.subject_name) for a in Application.objects.all()} == {
        (ApplicationKind.CONSUMER_GROUP_DELETE, "GID_OLD"),
        (ApplicationKind.PRODUCER_GROUP_DELETE, "PID_OLD"),
    }


def test_another_team_applies_for_an_association(client, outsider, other_team, topic):
    client.force_login(outsider)
    url = reverse("topic-associate", args=[topic.pk])
    response = client.post(url, {"team": other_team.pk, "reason": "we consume it"})
    assert list(response.context["form"].errors) == ["role"]
    response = client.post(url, {"team": other_team.pk, "role": AssociationRole.CONSUMER})
    assert response.status_code == 302
    assert Application.objects.get().payload == {"name": topic.name, "role": "consumer"}


def test_the_owning_team_needs_no_association(as_member, team, topic):
    response = as_member.post(reverse("topic-associate", args=[topic.pk]), {"team": team.pk, "role": "producer"})
    assert response.context["form"].non_field_errors() == [
        "Your team owns PAY_ORDER_CREATED; no association is needed."
    ]


def test_the_application_list_shows_mine_and_my_teams_and_filters_by_state(
    client, member, team_admin, outsider, team, other_team, cluster
):
    def application(applicant, team, name, state=ApplicationState.PENDING):
        return Application.objects.create(
            kind=ApplicationKind.TOPIC_CREATE,
            applicant=applicant,
            team=team,
            cluster=cluster,
            payload={"name": name},
            state=state,
        )

    application(member, team, "MINE_PENDING")
    application(member, team, "MINE_REJECTED", ApplicationState.REJECTED)
    application(team_admin, team, "TEAMMATES")
    application(outsider, other_team, "OTHER_TEAM")
    client.force_login(member)

    def subjects(**query):
        response = client.get(reverse("application-list"), query)
        return sorted(app.subject_name for app in response.context["page"].object_list)

    assert subjects() == ["MINE_PENDING", "MINE_REJECTED", "TEAMMATES"]
    assert subjects(state="rejected") == ["MINE_REJECTED"]
    assert subjects(mine="on", state="pending") == ["MINE_PENDING"]


def test_the_application_page_shows_the_decision_and_the_last_error(as_member, member, team, cluster):
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE,
        applicant=member,
        team=team,
        cluster=cluster,
        payload={"name": "X"},
        state=ApplicationState.REJECTED,
        decision_reason="Use the existing PAY topic.",
        last_error="broker-a: CODE 1 topic create failed",
    )
    text = as_member.get(reverse("application-detail", args=[application.pk])).text
    assert "Use the existing PAY topic." in text and "broker-a: CODE 1 topic create failed" in text
    assert reverse("application-cancel", args=[application.pk]) not in text


def test_the_applicant_cancels_a_pending_application(as_member, member, team, cluster):
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE, applicant=member, team=team, cluster=cluster, payload={"name": "X"}
    )
    response = as_member.post(reverse("application-cancel", args=[application.pk]))
    assert response.status_code == 302
    application.refresh_from_db()
    assert application.state == ApplicationState.CANCELLED
    assert as_member.post(reverse("application-cancel", args=[application.pk])).status_code == 403


def test_a_portal_admin_is_offered_no_cancel_on_someone_elses_application_and_is_refused_one(
    client, member, portal_admin, team, cluster
):
    application = Application.objects.create(
        kind=ApplicationKind.TOPIC_CREATE, applicant=member, team=team, cluster=cluster, payload={"name": "X"}
    )
    client.force_login(portal_admin)
    page = client.get(reverse("application-detail", args=[application.pk])).text
    assert reverse("application-cancel", args=[application.pk]) not in page and "Cancel application" not in page
    assert client.post(reverse("application-cancel", args=[application.pk])).status_code == 403
    application.refresh_from_db()
    assert application.state == ApplicationState.PENDING


def test_the_topic_form_offers_consumer_group_rows(as_member):
    response = as_member.get(reverse("apply-topic"))
    assert len(response.context["formset"].forms) == 3
    assert 'name="group-0-name"' in response.text and 'name="group-0-tag_expression"' in response.text


def test_an_invalid_group_on_the_topic_form_refuses_the_application_and_names_the_group(as_member, team, cluster):
    rows = [("GID_FINE", "CLUSTERING", "*"), ("bad group!", "CLUSTERING", "*")]
    response = as_member.post(reverse("apply-topic"), topic_form(team, cluster, rows, name="PAY_WITH_GROUPS"))
    assert response.status_code == 200
    errors = response.context["formset"].non_form_errors()
    assert len(errors) == 1 and errors[0].startswith("bad group!: Only letters, digits")
    assert "bad group!: Only letters, digits" in response.text
    assert not response.context["form"].errors
    assert not Application.objects.exists()


def test_through_the_pages_a_topic_with_two_consumer_groups_is_approved_once_and_all_exist_on_the_sandbox(
    client, member, portal_admin, team, cluster, sandbox
):
    client.force_login(member)
    rows = [
        ("GID_PAGES_BILLING", "CLUSTERING", "paid"),
        ("GID_PAGES_AUDIT", "BROADCASTING", ""),
        ("", "CLUSTERING", "*"),
    ]
    response = client.post(reverse("apply-topic"), topic_form(team, cluster, rows, name="PAGES_WITH_GROUPS"))
    application = Application.objects.get()
    assert response.url == reverse("application-detail", args=[application.pk])
    page = client.get(response.url).text
    assert "GID_PAGES_BILLING (clustering, tags: paid)" in page and "GID_PAGES_AUDIT (broadcasting, tags: *)" in page

    client.force_login(portal_admin)
    assert client.post(reverse("application-approve", args=[application.pk])).status_code == 302

    application.refresh_from_db()
    assert application.state == ApplicationState.APPROVED
    topic = Topic.objects.get(name="PAGES_WITH_GROUPS")
    groups = ConsumerGroup.objects.filter(subscriptions__topic=topic, team=team)
    assert sorted(groups.values_list("name", flat=True)) == ["GID_PAGES_AUDIT", "GID_PAGES_BILLING"]
    with MQAdmin(sandbox.namesrv_addr) as admin:
        for data in admin.examine_broker_cluster_info().broker_addr_table.values():
            assert "PAGES_WITH_GROUPS" in admin.get_all_topic_config(data.master_addr).topic_config_table
            table = admin.get_all_subscription_group(data.master_addr).subscription_group_table
            assert {"GID_PAGES_BILLING", "GID_PAGES_AUDIT"} <= set(table)


def test_through_the_pages_a_topic_and_a_consumer_group_are_applied_for_approved_and_created_on_the_sandbox(
    client, member, portal_admin, team, cluster, sandbox
):
    cluster_ops.discover_brokers(cluster)
    client.force_login(member)
    client.post(reverse("apply-topic"), topic_form(team, cluster, name="E2E_PAGES_ORDERS", queue_nums=4))
    client.post(
        reverse("apply-consumer-group"),
        group_form(team, cluster, "GID_E2E_PAGES", [("E2E_PAGES_ORDERS", "*")]),
    )
    # the group cannot be applied for before the topic is registered
    assert Application.objects.count() == 1
    topic_application = Application.objects.get()

    client.force_login(portal_admin)
    queue = client.get(reverse("approval-queue"))
    assert "E2E_PAGES_ORDERS" in queue.text
    response = client.post(reverse("application-approve", args=[topic_application.pk]))
    assert response.status_code == 302
    topic = Topic.objects.get(name="E2E_PAGES_ORDERS")

    client.force_login(member)
    response = client.post(
        reverse("apply-consumer-group"), group_form(team, cluster, "GID_E2E_PAGES", [(topic.name, "*")])
    )
    group_application = Application.objects.get(kind=ApplicationKind.CONSUMER_GROUP_CREATE)
    assert response.url == reverse("application-detail", args=[group_application.pk])

    client.force_login(portal_admin)
    client.post(reverse("application-approve", args=[group_application.pk]))
    group_application.refresh_from_db()
    assert group_application.state == ApplicationState.APPROVED

    client.force_login(member)
    dashboard = client.get(reverse("dashboard")).text
    assert "E2E_PAGES_ORDERS" in dashboard and "GID_E2E_PAGES" in dashboard
    with MQAdmin(sandbox.namesrv_addr) as admin:
        masters = [data.master_addr for data in admin.examine_broker_cluster_info().broker_addr_table.values()]
        assert len(masters) == 2
        for addr in masters:
            assert admin.get_all_topic_config(addr).topic_config_table["E2E_PAGES_ORDERS"].read_queue_nums == 4
            assert "GID_E2E_PAGES" in admin.get_all_subscription_group(addr).subscription_group_table

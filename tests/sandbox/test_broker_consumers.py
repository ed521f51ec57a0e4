"""The sandbox broker's consumer administration and message lookups, against the captures and the real C++ client:
consume progress, connections, running info relayed to a client, offset resets pushed to clients, sent-back
messages, queries by key and id, and a master sending a lagging consumer to its slave (seed-003).
"""

import json

import pytest

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin import MQAdmin
from monitor.remoting.client import RemotingClient
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand, decode_frame, encode_frame
from monitor.remoting.errors import RemotingError
from monitor.remoting.message import decode_messages
from monitor.remoting.sync import run_sync
from monitor.sandbox.cluster import SandboxCluster
from monitor.sandbox.stats import GROUP_GET_NUMS
from tests.fixtures import captured_request, captured_response
from tests.sandbox.test_broker_messaging import (
    client_process,
    finish,
    h_topic,
    messages,
    put,
    run_client,
    stored,
)
from tests.support.waiting import wait_for

JAVA_CLIENT_ID = "127.0.0.1@28238#7787385373909"
CPP_CLIENT_ID = "28364-127.0.0.1@DEFAULT"


def same_frame(ours: RemotingCommand, real: RemotingCommand) -> bool:
    ours.opaque = real.opaque
    return encode_frame(ours) == encode_frame(real)


class Client:
    """A raw client connection that answers the broker's requests like a consumer would."""

    def __init__(self, addr: str, answers: dict[int, RemotingCommand] | None = None):
        self.addr = addr
        self.answers = answers or {}
        self.requests: list[RemotingCommand] = []
        self.client = RemotingClient(timeout=5.0, request_handler=self._answer)

    async def _answer(self, addr: str, cmd: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(cmd)
        answer = self.answers.get(cmd.code)
        if answer is None:
            return None
        return RemotingCommand(
            code=answer.code,
            language=answer.language,
            version=answer.version,
            flag=answer.flag,
            remark=answer.remark,
            ext_fields=answer.ext_fields,
            body=answer.body,
        )

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        return run_sync(self.client.invoke(self.addr, cmd))

    def close(self) -> None:
        run_sync(self.client.close())


@pytest.fixture
def cluster():
    with SandboxCluster() as sandbox:
        yield sandbox


@pytest.fixture
def broker(cluster):
    return cluster.broker()


@pytest.fixture
def admin(cluster):
    client = MQAdmin(cluster.namesrv_addr, timeout=5.0)
    yield client
    client.close()


@pytest.fixture
def clients(broker):
    opened = []

    def connect(answers: dict[int, RemotingCommand] | None = None) -> Client:
        opened.append(Client(broker.addr, answers))
        return opened[-1]

    yield connect
    for client in opened:
        client.close()


def with_topic_test(admin, broker) -> None:
    admin.create_and_update_topic_config(broker.addr, h_topic("TopicTest", 8))


# --- connections -----------------------------------------------------------------------------------------------------


def test_consumer_connections_have_the_captured_shape(broker, clients):
    admin_peer = clients()
    assert same_frame(
        admin_peer.call(captured_request("GET_CONSUMER_CONNECTION_LIST")),
        captured_response("GET_CONSUMER_CONNECTION_LIST_not_online"),
    )
    clients().call(captured_request("HEART_BEAT"))
    clients().call(captured_request("HEART_BEAT_cpp_client"))
    ours = admin_peer.call(captured_request("GET_CONSUMER_CONNECTION_LIST"))
    real = captured_response("GET_CONSUMER_CONNECTION_LIST")
    assert (ours.code, ours.ext_fields, ours.remark) == (real.code, real.ext_fields, real.remark)
    ours_body, real_body = b.ConsumerConnection.decode(ours.body), b.ConsumerConnection.decode(real.body)
    assert [(c.client_id, c.language, c.version) for c in ours_body.connection_set] == [
        (c.client_id, c.language, c.version) for c in real_body.connection_set
    ]
    assert ours_body.subscription_table.keys() == real_body.subscription_table.keys()
    assert (ours_body.consume_type, ours_body.message_model, ours_body.consume_from_where) == (
        real_body.consume_type,
        real_body.message_model,
        real_body.consume_from_where,
    )
    assert list(json.loads(ours.body)) == list(json.loads(real.body))


def test_producer_connections(broker, clients, admin):
    heartbeat = b.HeartbeatData(client_id="31942-127.0.0.1@DEFAULT", producer_data_set=[b.ProducerData("pg_slow")])
    producer = clients()
    producer.call(RemotingCommand.request(RequestCode.HEART_BEAT, body=heartbeat.encode(), language="CPP", version=63))
    ours = clients().call(captured_request("GET_PRODUCER_CONNECTION_LIST"))
    real = captured_response("GET_PRODUCER_CONNECTION_LIST")
    assert (ours.code, ours.ext_fields, ours.remark) == (real.code, real.ext_fields, real.remark)
    (connection,) = b.ProducerConnection.decode(ours.body).connection_set
    assert (connection.client_id, connection.language, connection.version) == ("31942-127.0.0.1@DEFAULT", "CPP", 63)
    producer.close()  # like Java's ProducerManager, the group stays, empty
    wait_for(lambda: admin.examine_producer_connection_info("pg_slow", "TBW102").connection_set == [], timeout=10.0)
    with pytest.raises(RemotingError) as err:
        admin.examine_producer_connection_info("pg_none", "TBW102")
    assert (err.value.code, err.value.remark) == (ResponseCode.SYSTEM_ERROR, "the producer group[pg_none] not exist")


# --- consume progress ------------------------------------------------------------------------------------------------


def test_consume_stats_of_a_group_without_offsets_is_the_captured_frame(clients):
    peer = clients()
    assert same_frame(
        peer.call(captured_request("GET_CONSUME_STATS_unknown_group")),
        captured_response("GET_CONSUME_STATS_unknown_group"),
    )


def test_consume_stats_broker_stats_and_who_consumes(broker, clients, admin):
    with_topic_test(admin, broker)
    put(broker, "TopicTest", 3)
    peer = clients()
    peer.call(captured_request("HEART_BEAT"))  # cg_test subscribes TopicTest and its retry topic
    for queue_id in range(8):
        admin.update_consumer_offset(broker.addr, "cg_test", "TopicTest", queue_id, 2 if queue_id == 0 else 0)
    admin.update_consumer_offset(broker.addr, "cg_test", "%RETRY%cg_test", 0, 0)
    ours, real = peer.call(captured_request("GET_CONSUME_STATS")), captured_response("GET_CONSUME_STATS")
    assert (ours.code, ours.ext_fields, ours.remark) == (real.code, real.ext_fields, real.remark)
    stats = b.ConsumeStats.decode(ours.body)
    assert list(stats.offset_table) == list(b.ConsumeStats.decode(real.body).offset_table)
    first = stats.offset_table[b.MessageQueue("TopicTest", "broker-a", 0)]
    assert (first.broker_offset, first.consumer_offset, first.lag) == (3, 2, 1)
    assert first.last_timestamp == broker.store.message_store_timestamp("TopicTest", 0, 1)
    assert same_frame(
        peer.call(captured_request("QUERY_TOPIC_CONSUME_BY_WHO")), captured_response("QUERY_TOPIC_CONSUME_BY_WHO")
    )
    ours = peer.call(captured_request("GET_BROKER_CONSUME_STATS"))
    body = b.ConsumeStatsList.decode(ours.body)
    assert (body.broker_addr, body.total_diff) == (broker.addr, 1)
    groups = [group for entry in body.consume_stats_list for group in entry]
    assert groups == [
        g
        for g in b.ConsumeStatsList.decode(captured_response("GET_BROKER_CONSUME_STATS").body).by_group()
        if g in groups
    ]
    assert [len(stats.offset_table) for stats in body.by_group()["cg_test"]] == [1, 8]


# --- calls into the clients ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heartbeat", "client_id", "admin_request", "relayed", "admin_answer"),
    [
        (
            "HEART_BEAT",
            JAVA_CLIENT_ID,
            "GET_CONSUMER_RUNNING_INFO",
            "GET_CONSUMER_RUNNING_INFO_broker_to_java_client",
            "GET_CONSUMER_RUNNING_INFO",
        ),
        (
            "HEART_BEAT_cpp_client",
            CPP_CLIENT_ID,
            "GET_CONSUMER_RUNNING_INFO_cpp_client",
            "GET_CONSUMER_RUNNING_INFO_broker_to_cpp_client",
            "GET_CONSUMER_RUNNING_INFO_cpp_client",
        ),
    ],
)
def test_running_info_is_relayed_to_the_client_and_its_answer_returned(
    clients, heartbeat, client_id, admin_request, relayed, admin_answer
):
    consumer = clients({RequestCode.GET_CONSUMER_RUNNING_INFO: captured_response(relayed)})
    consumer.call(captured_request(heartbeat))
    answer = clients().call(captured_request(admin_request))
    assert same_frame(answer, captured_response(admin_answer))
    (seen,) = [cmd for cmd in consumer.requests if cmd.code == RequestCode.GET_CONSUMER_RUNNING_INFO]
    assert same_frame(seen, captured_request(relayed))


def test_running_info_of_an_unknown_client(clients):
    request = captured_request("GET_CONSUMER_RUNNING_INFO")
    answer = clients().call(request)
    assert (answer.code, answer.remark) == (1, f"The Consumer <cg_test> <{JAVA_CLIENT_ID}> not online")


def test_running_info_of_the_real_cpp_consumer(cluster, broker, admin, tmp_path):
    with_topic_test(admin, broker)
    consumer = client_process(
        {"namesrv": cluster.namesrv_addr, "consume": {"group": "cg_info", "topic": "TopicTest", "expect": 1}}, tmp_path
    )
    try:
        # Asked before its first rebalance, the C++ client answers with a malformed empty mqTable ('"mqTable":}'):
        # wait until it pulls, which it does once it has queues.
        wait_for(
            lambda: any(broker.pull.hold_service.held("TopicTest", queue_id) for queue_id in range(8)), timeout=10.0
        )
        (client_id,) = broker.consumers.get("cg_info").client_ids()
        info = admin.get_consumer_running_info("cg_info", client_id, broker_addr=broker.addr)
        assert {sub.topic for sub in info.subscription_set} == {"TopicTest", "%RETRY%cg_info"}
    finally:
        run_client(
            {"namesrv": cluster.namesrv_addr, "produce": {"group": "pg", "messages": messages("TopicTest", 1)}},
            tmp_path,
        )
        finish(consumer)


def test_offset_reset_without_consumers_is_the_captured_frame(broker, admin, clients):
    with_topic_test(admin, broker)
    for queue_id in range(8):
        admin.update_consumer_offset(broker.addr, "cg_test", "TopicTest", queue_id, 0)
    assert same_frame(
        clients().call(captured_request("INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online")),
        captured_response("INVOKE_BROKER_TO_RESET_OFFSET_consumer_not_online"),
    )


def test_offset_reset_is_pushed_to_the_online_consumers(broker, admin, clients):
    with_topic_test(admin, broker)
    put(broker, "TopicTest", 3)
    for queue_id in range(8):
        admin.update_consumer_offset(broker.addr, "cg_test", "TopicTest", queue_id, 0)
    consumer = clients()
    consumer.call(captured_request("HEART_BEAT"))
    request = captured_request("INVOKE_BROKER_TO_RESET_OFFSET")
    request.ext_fields["timestamp"] = "-1"  # to the end of every queue
    answer = clients().call(request)
    real = captured_response("INVOKE_BROKER_TO_RESET_OFFSET")
    assert (answer.code, answer.remark, answer.ext_fields) == (real.code, real.remark, real.ext_fields)
    table = b.ResetOffsetBody.decode(answer.body).offset_table
    assert list(table) == list(b.ResetOffsetBody.decode(real.body).offset_table)
    assert table[b.MessageQueue("TopicTest", "broker-a", 0)] == 3
    wait_for(
        lambda: any(cmd.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET for cmd in consumer.requests), timeout=10.0
    )
    (push,) = [cmd for cmd in consumer.requests if cmd.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
    real_push = captured_request("RESET_CONSUMER_CLIENT_OFFSET_broker_to_client")
    assert (push.flag, push.language, push.version) == (real_push.flag, real_push.language, real_push.version)
    assert push.ext_fields == {**real_push.ext_fields, "timestamp": "-1"}  # isForce "false", as captured
    assert b.ResetOffsetBody.decode(push.body).offset_table == table


# --- sent-back messages and lookups ----------------------------------------------------------------------------------


def test_send_back_answers_like_the_capture_and_stores_a_delayed_retry(broker, admin, clients):
    with_topic_test(admin, broker)
    put(broker, "TopicTest", 1)
    request = captured_request("CONSUMER_SEND_MSG_BACK")
    request.ext_fields["offset"] = "0"
    assert same_frame(clients().call(request), captured_response("CONSUMER_SEND_MSG_BACK"))
    (delayed,) = stored(broker, "SCHEDULE_TOPIC_XXXX")
    assert delayed.queue_id == 2  # delay level 3 (= 3 + reconsumeTimes 0), queue level - 1
    assert delayed.properties["REAL_TOPIC"] == "%RETRY%cg_test" and delayed.properties["RETRY_TOPIC"] == "TopicTest"
    wait_for(lambda: len(stored(broker, "%RETRY%cg_test")) == 1, timeout=10.0)
    (retry,) = stored(broker, "%RETRY%cg_test")
    assert (retry.body, retry.reconsume_times, retry.properties["DELAY"]) == (b"m0", 1, "3")


def test_a_delayed_retry_still_waiting_shows_its_level_in_the_runtime_info_as_on_a_real_broker():
    """Java's timer task records a level's offset (updateOffset) as soon as it finds a message waiting there, so the
    runtime info lists scheduleMessageOffset_<level> before anything of the level is delivered."""
    with SandboxCluster(delay_time_scale=1.0) as sandbox, MQAdmin(sandbox.namesrv_addr, timeout=5.0) as admin:
        broker = sandbox.broker()
        with_topic_test(admin, broker)
        put(broker, "TopicTest", 1)
        request = captured_request("CONSUMER_SEND_MSG_BACK")
        request.ext_fields["offset"] = "0"
        client = Client(broker.addr)
        try:
            assert client.call(request).code == ResponseCode.SUCCESS
        finally:
            client.close()
        wait_for(lambda: "scheduleMessageOffset_3" in admin.fetch_broker_runtime_stats(broker.addr).table, 10.0)
        assert admin.fetch_broker_runtime_stats(broker.addr).table["scheduleMessageOffset_3"] == "0,1"
        assert stored(broker, "%RETRY%cg_test") == []  # level 3 waits 10 s: nothing delivered yet


def test_query_by_key_and_view_by_id_find_what_the_cpp_client_sent(cluster, broker, admin, tmp_path):
    sent = run_client(
        {"namesrv": cluster.namesrv_addr, "produce": {"group": "pg", "messages": messages("TopicTest", 2)}}, tmp_path
    )
    (found,) = admin.query_message("TopicTest", "KEY_1")
    assert (found.body, found.uniq_key) == (b"body 1", sent["sent"][1]["id"])
    assert admin.view_message(found.msg_id).body == b"body 1"
    assert admin.query_message("TopicTest", "NO_SUCH_KEY") == []
    query = h.QueryMessageRequestHeader(
        topic="TopicTest", key="NO_SUCH_KEY", max_num=32, begin_timestamp=0, end_timestamp=2**62
    )
    answer = call(broker.addr, RemotingCommand.request(RequestCode.QUERY_MESSAGE, query.to_ext_fields()))
    assert (answer.code, answer.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "can not find message, maybe time range not correct",
    )
    view = h.ViewMessageRequestHeader(offset=7)
    answer = call(broker.addr, RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, view.to_ext_fields()))
    assert (answer.code, answer.remark) == (1, "can not find message by the offset, 7")


# --- seed-003: a lagging consumer is sent to the slave ---------------------------------------------------------------


def test_master_sends_a_lagging_consumer_to_the_slave_which_serves_it(tmp_path):
    with SandboxCluster(slaves=True, slave_sync_interval=0.1, suggest_slave_behind_bytes=2000) as cluster:
        master, slave = cluster.broker("broker-a", 0), cluster.broker("broker-a", 1)
        with MQAdmin(cluster.namesrv_addr) as admin:
            admin.create_and_update_topic_config(master.addr, h_topic("TopicTest", 1))
            wait_for(lambda: "TopicTest" in slave.topics.table, timeout=10.0)
        put(master, "TopicTest", 60)
        first = decode_frame(encode_frame(pull(master.addr, offset=0)))
        assert first.ext_fields["suggestWhichBrokerId"] == "1"  # 28 messages behind is more than 2000 bytes
        wait_for(lambda: slave.store.max_offset("TopicTest", 0) == 60, timeout=10.0)
        result = run_client(
            {"namesrv": cluster.namesrv_addr, "consume": {"group": "cg_lag", "topic": "TopicTest", "expect": 60}},
            tmp_path,
        )
        assert sorted(m["body"] for m in result["received"]) == sorted(f"m{n}" for n in range(60))
        assert slave.stats.get_stats_item(GROUP_GET_NUMS, "TopicTest@cg_lag").value > 0
        assert master.stats.get_stats_item(GROUP_GET_NUMS, "TopicTest@cg_lag").value < 60


def pull(addr: str, offset: int) -> RemotingCommand:
    header = h.PullMessageRequestHeader(
        consumer_group="cg_raw",
        topic="TopicTest",
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=4,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    answer = call(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext_fields()))
    assert len(decode_messages(answer.body)) == 32
    return answer


def call(addr: str, cmd: RemotingCommand) -> RemotingCommand:
    client = RemotingClient(timeout=5.0)
    try:
        return run_sync(client.invoke(addr, cmd))
    finally:
        run_sync(client.close())

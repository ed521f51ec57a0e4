"""NameServer: 4.9.4's DefaultRequestProcessor on the sandbox RemotingServer, answering every request code the real
one handles from the route tables and the configuration (see the package notes)."""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Self

from monitor.remoting import headers as h
from monitor.remoting.admin import ORDER_TOPIC_NAMESPACE
from monitor.remoting.body import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicList,
    format_properties,
    parse_properties,
)
from monitor.remoting.codes import RequestCode, ResponseCode
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import ProtocolError
from monitor.sandbox.connection import Connection
from monitor.sandbox.namesrv.config import KVConfigManager, default_config, java_text, parse_like
from monitor.sandbox.namesrv.routes import RouteInfoManager, decode_register_broker_body
from monitor.sandbox.server import RemotingServer

log = logging.getLogger(__name__)

# RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME and NamesrvController's scan period.
BROKER_CHANNEL_EXPIRED_SECONDS = 120.0
SCAN_NOT_ACTIVE_BROKER_SECONDS = 10.0
# MQVersion.Version ordinals: brokers older than V3_0_11 register a bare TopicConfigSerializeWrapper; clients of
# V4_9_4 and later get standard JSON routes.
_V3_0_11 = 37
_V4_9_4 = 401
# FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL).
_APPLY_TOPIC_HINT = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."


# --- the server ------------------------------------------------------------------------------------------------------


class NameServer(RemotingServer):
    """A 4.9.4 name server on 127.0.0.1: ``NameServer(port=0).start()``, then ``.addr``, ``.stop()``.

    ``config`` overrides NamesrvConfig/NettyServerConfig entries as a ``-c namesrv.properties`` file would;
    ``broker_expiry`` and ``scan_interval`` shorten the 120 s / 10 s broker expiry for tests."""

    def __init__(
        self,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        config: Mapping[str, str] | None = None,
        broker_expiry: float = BROKER_CHANNEL_EXPIRED_SECONDS,
        scan_interval: float = SCAN_NOT_ACTIVE_BROKER_SECONDS,
    ):
        super().__init__(host=host, port=port, answer_unknown_codes=False, name="namesrv")
        self.routes = RouteInfoManager()
        self.kv = KVConfigManager()
        self.config = default_config()
        self.broker_expiry = broker_expiry
        self.scan_interval = scan_interval
        self._scan_task: asyncio.Task | None = None
        if config:
            self._update_config(config)
        self.on_close(lambda conn: self.routes.on_channel_destroy(conn.remote_addr, conn))
        handlers = {
            RequestCode.PUT_KV_CONFIG: self._put_kv_config,
            RequestCode.GET_KV_CONFIG: self._get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self._delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self._query_data_version,
            RequestCode.REGISTER_BROKER: self._register_broker,
            RequestCode.UNREGISTER_BROKER: self._unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self._get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self._get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self._wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self._add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self._topic_list(self.routes.get_all_topic_list),
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self._delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self._get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self._get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self._topic_list(self.routes.get_system_topic_list),
            RequestCode.GET_UNIT_TOPIC_LIST: self._topic_list(self.routes.get_unit_topics),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._topic_list(self.routes.get_has_unit_sub_topic_list),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._topic_list(
                self.routes.get_has_unit_sub_un_unit_topic_list
            ),
            RequestCode.UPDATE_NAMESRV_CONFIG: self._update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self._get_namesrv_config,
        }
        for code, handler in handlers.items():
            self.register(code, handler)

    # --- lifecycle -------------------------------------------------------------------------------------------------

    async def start_async(self) -> Self:
        await super().start_async()
        self.config["listenPort"] = self.port
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_not_active_brokers())
        return self

    async def stop_async(self) -> None:
        if self._scan_task is not None:
            self._scan_task.cancel()
            await asyncio.gather(self._scan_task, return_exceptions=True)
            self._scan_task = None
        await super().stop_async()

    async def _scan_not_active_brokers(self) -> None:
        while True:
            await asyncio.sleep(self.scan_interval)
            self.routes.scan_not_active_broker(self.broker_expiry)

    # --- KV config -------------------------------------------------------------------------------------------------

    async def _put_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.PutKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv.put(header.namespace, header.key, header.value)
        return cmd.make_response()

    async def _get_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is not None:
            return cmd.make_response(ext_fields={"value": value})
        remark = f"No config item, Namespace: {header.namespace} Key: {header.key}"
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, remark, ext_fields={})

    async def _delete_kv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.DeleteKVConfigRequestHeader.from_ext_fields(cmd.ext_fields)
        self.kv.delete(header.namespace, header.key)
        return cmd.make_response()

    async def _get_kv_list_by_namespace(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetKVListByNamespaceRequestHeader.from_ext_fields(cmd.ext_fields)
        body = self.kv.kv_list(header.namespace)
        if body is not None:
            return cmd.make_response(body=body)
        return cmd.make_response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}")

    # --- brokers ---------------------------------------------------------------------------------------------------

    async def _register_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.RegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        if header.body_crc32 != 0 and zlib.crc32(cmd.body) & 0x7FFFFFFF != header.body_crc32:
            log.warning("receive registerBroker request,crc32 not match,from %s", conn.remote_addr)
            return cmd.make_response(ResponseCode.SYSTEM_ERROR, "crc32 not match", ext_fields={})
        empty_version = DataVersion(timestamp=0, counter=0)
        filter_servers: list[str] | None
        if cmd.version >= _V3_0_11:
            if cmd.body:
                body = decode_register_broker_body(cmd.body, header.compressed)
            else:
                body = RegisterBrokerBody(TopicConfigSerializeWrapper(data_version=empty_version))
            wrapper, filter_servers = body.topic_config_serialize_wrapper, body.filter_server_list
        else:
            if cmd.body:
                wrapper = TopicConfigSerializeWrapper.decode(cmd.body)
            else:
                wrapper = TopicConfigSerializeWrapper(data_version=empty_version)
            filter_servers = None
        result = self.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            wrapper,
            filter_servers,
            conn,
        )
        response_header = h.RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        )
        return cmd.make_response(
            ext_fields=response_header.to_ext_fields(), body=self.kv.kv_list(ORDER_TOPIC_NAMESPACE) or b""
        )

    async def _unregister_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.UnRegisterBrokerRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
        return cmd.make_response()

    async def _query_data_version(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        """A broker asking whether its topic config version is the one registered (brokers with
        forceRegister=false ask before re-registering); an unchanged answer counts as a heartbeat."""
        header = _QueryDataVersionRequestHeader.from_ext_fields(cmd.ext_fields)
        data_version = DataVersion.decode(cmd.body)
        changed = self.routes.is_broker_topic_config_changed(header.broker_addr, data_version)
        if not changed:
            self.routes.update_broker_info_update_timestamp(header.broker_addr)
        registered = self.routes.query_broker_topic_config(header.broker_addr)
        return cmd.make_response(
            ext_fields={"changed": "true" if changed else "false"},
            body=registered.encode() if registered is not None else b"",
        )

    async def _wipe_write_perm_of_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = _BrokerNameRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, wipe=True)
        log.info("wipe write perm of broker[%s], client: %s, %s", header.broker_name, conn.remote_addr, count)
        return cmd.make_response(ext_fields={"wipeTopicCount": str(count)})

    async def _add_write_perm_of_broker(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = _BrokerNameRequestHeader.from_ext_fields(cmd.ext_fields)
        count = self.routes.change_write_perm(header.broker_name, wipe=False)
        log.info("add write perm of broker[%s], client: %s, %s", header.broker_name, conn.remote_addr, count)
        return cmd.make_response(ext_fields={"addTopicCount": str(count)})

    # --- topics and routes -----------------------------------------------------------------------------------------

    async def _get_route_info_by_topic(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetRouteInfoRequestHeader.from_ext_fields(cmd.ext_fields)
        route = self.routes.pickup_topic_route_data(header.topic)
        if route is None:
            remark = f"No topic route info in name server for the topic: {header.topic}{_APPLY_TOPIC_HINT}"
            return cmd.make_response(ResponseCode.TOPIC_NOT_EXIST, remark)
        if self.config["orderMessageEnable"]:
            route.order_topic_conf = self.kv.get(ORDER_TOPIC_NAMESPACE, header.topic)
        standard_json = cmd.version >= _V4_9_4 or bool(header.accept_standard_json_only)
        return cmd.make_response(body=route.encode(standard_json=standard_json))

    async def _get_broker_cluster_info(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        return cmd.make_response(body=self.routes.get_all_cluster_info().encode())

    def _topic_list(
        self, build: Callable[[], TopicList]
    ) -> Callable[[Connection, RemotingCommand], Awaitable[RemotingCommand]]:
        """A handler answering with a TopicList body, for the codes that differ only in which list."""

        async def handler(conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
            return cmd.make_response(body=build().encode())

        return handler

    async def _get_topics_by_cluster(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.GetTopicsByClusterRequestHeader.from_ext_fields(cmd.ext_fields)
        return cmd.make_response(body=self.routes.get_topics_by_cluster(header.cluster).encode())

    async def _delete_topic_in_namesrv(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        header = h.DeleteTopicFromNamesrvRequestHeader.from_ext_fields(cmd.ext_fields)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return cmd.make_response()

    # --- configuration ---------------------------------------------------------------------------------------------

    async def _get_namesrv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        text = format_properties({key: java_text(value) for key, value in self.config.items()})
        return cmd.make_response(body=text.encode("utf-8"))

    async def _update_namesrv_config(self, conn: Connection, cmd: RemotingCommand) -> RemotingCommand:
        log.info("updateConfig called by %s", conn.remote_addr)
        if cmd.body:
            try:
                properties = parse_properties(cmd.body)
            except ProtocolError:
                return cmd.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            self._update_config(properties)
        return cmd.make_response()

    def _update_config(self, properties: Mapping[str, str]) -> None:
        """Configuration.update: only existing keys, each parsed like its field; unparsable values are ignored."""
        for key, text in properties.items():
            if key in self.config:
                value = parse_like(self.config[key], text)
                if value is not None:
                    self.config[key] = value
        self.idle_timeout = float(self.config["serverChannelMaxIdleTimeSeconds"]) or None


@h.header
class _QueryDataVersionRequestHeader(h.CommandHeader):
    broker_name: str = h.wire(required=True)
    broker_addr: str = h.wire(required=True)
    cluster_name: str = h.wire(required=True)
    broker_id: int = h.wire(required=True)


@h.header
class _BrokerNameRequestHeader(h.CommandHeader):
    """WipeWritePermOfBrokerRequestHeader and AddWritePermOfBrokerRequestHeader."""

    broker_name: str = h.wire(required=True)

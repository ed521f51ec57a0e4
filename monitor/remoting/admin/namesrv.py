"""Name-server calls: cluster info, routes, topic lists, name-server config and the KV store."""

from __future__ import annotations

from collections.abc import Iterable

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    AdminBase,
    _config_properties,
)
from monitor.remoting.codes import RequestCode, ResponseCode


class NamesrvAdmin(AdminBase):
    async def examine_broker_cluster_info(self) -> b.ClusterInfo:
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_BROKER_CLUSTER_INFO))
        return b.ClusterInfo.decode(response.body)

    async def fetch_all_topic_list(self) -> b.TopicList:
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        return b.TopicList.decode(response.body)

    async def fetch_topics_by_cluster(self, cluster: str) -> b.TopicList:
        header = h.GetTopicsByClusterRequestHeader(cluster=cluster)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_TOPICS_BY_CLUSTER, header))
        return b.TopicList.decode(response.body)

    async def examine_topic_route_info(self, topic: str) -> b.TopicRouteData:
        header = h.GetRouteInfoRequestHeader(topic=topic)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_ROUTEINFO_BY_TOPIC, header))
        return b.TopicRouteData.decode(response.body)

    async def get_name_server_config(self, addrs: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
        configs = {}
        for addr in addrs or self.namesrv_addrs:
            response = await self.call(addr, self._command(RequestCode.GET_NAMESRV_CONFIG))
            configs[addr] = _config_properties(response, addr)
        return configs

    async def update_name_server_config(self, properties: dict[str, str], addrs: Iterable[str] | None = None) -> None:
        body = b.format_properties(properties).encode("utf-8")
        for addr in addrs or self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.UPDATE_NAMESRV_CONFIG, body=body))

    async def delete_topic_in_name_server(self, topic: str, cluster_name: str | None = None) -> None:
        header = h.DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster_name)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_TOPIC_IN_NAMESRV, header))

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        header = h.GetKVConfigRequestHeader(namespace=namespace, key=key)
        response = await self.call_namesrv(
            lambda: self._command(RequestCode.GET_KV_CONFIG, header), ResponseCode.QUERY_NOT_FOUND
        )
        return response.ext("value") if response.code == ResponseCode.SUCCESS else None

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        header = h.PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.PUT_KV_CONFIG, header))

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        header = h.DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        for addr in self.namesrv_addrs:
            await self.call(addr, self._command(RequestCode.DELETE_KV_CONFIG, header))

    async def get_kv_list_by_namespace(self, namespace: str) -> b.KVTable:
        header = h.GetKVListByNamespaceRequestHeader(namespace=namespace)
        response = await self.call_namesrv(lambda: self._command(RequestCode.GET_KVLIST_BY_NAMESPACE, header))
        return b.KVTable.decode(response.body)

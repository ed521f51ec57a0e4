"""Broker calls: subscription-group configs, broker config, runtime info and stats counters."""

from __future__ import annotations

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.admin.base import (
    AdminBase,
    _config_properties,
)
from monitor.remoting.codes import RequestCode


class BrokerAdmin(AdminBase):
    async def create_and_update_subscription_group_config(
        self, broker_addr: str, config: b.SubscriptionGroupConfig
    ) -> None:
        cmd = self._command(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.encode())
        await self.call(broker_addr, cmd)

    async def delete_subscription_group(self, broker_addr: str, group: str, remove_offset: bool = False) -> None:
        """Delete the group's config on one broker, with ``remove_offset`` its committed offsets too (asked under
        both names: 4.x reads removeOffset, 5.x cleanOffset)."""
        header = h.DeleteSubscriptionGroupRequestHeader(
            group_name=group, remove_offset=remove_offset, clean_offset=remove_offset or None
        )
        await self.call(broker_addr, self._command(RequestCode.DELETE_SUBSCRIPTIONGROUP, header))

    async def get_all_subscription_group(self, broker_addr: str) -> b.SubscriptionGroupWrapper:
        response = await self.call(broker_addr, self._command(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        return b.SubscriptionGroupWrapper.decode(response.body)

    async def fetch_broker_runtime_stats(self, broker_addr: str, *, timeout: float | None = None) -> b.KVTable:
        cmd = self._command(RequestCode.GET_BROKER_RUNTIME_INFO)
        response = await self.call(broker_addr, cmd, timeout=timeout)
        return b.KVTable.decode(response.body)

    async def get_broker_config(self, broker_addr: str) -> dict[str, str]:
        response = await self.call(broker_addr, self._command(RequestCode.GET_BROKER_CONFIG))
        return _config_properties(response, broker_addr)

    async def update_broker_config(self, broker_addr: str, properties: dict[str, str]) -> None:
        body = b.format_properties(properties).encode("utf-8")
        await self.call(broker_addr, self._command(RequestCode.UPDATE_BROKER_CONFIG, body=body))

    async def view_broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> b.BrokerStatsData:
        """One BrokerStatsManager counter (TOPIC_PUT_NUMS: key topic; GROUP_GET_NUMS: key topic@group, ...).
        An unknown key is RocketMQ's SYSTEM_ERROR "The stats <NAME> <KEY> not exist", raised as RemotingError."""
        header = h.ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
        response = await self.call(broker_addr, self._command(RequestCode.VIEW_BROKER_STATS_DATA, header))
        return b.BrokerStatsData.decode(response.body)

    async def fetch_consume_stats_in_broker(self, broker_addr: str, is_order: bool = False) -> b.ConsumeStatsList:
        header = h.GetConsumeStatsInBrokerHeader(is_order=is_order)
        response = await self.call(broker_addr, self._command(RequestCode.GET_BROKER_CONSUME_STATS, header))
        return b.ConsumeStatsList.decode(response.body)

"""A consumer group's broker-side settings (its SubscriptionGroupConfig): pause and resume, retries, broadcast,
which broker id to read from.

Each master keeps its own copy of the config (slaves copy their master's), and a client reads from every master that
serves its topics, so a change is made on every master of the cluster. Each change is a read-modify-write of that
master's config: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP replaces the whole config, so every field not changed is sent
back as the broker had it. A master without the group gets the config of a master that has it, changed the same
way (otherwise a paused group would go on consuming there).

Pausing is consumeEnable=false: the broker refuses the group's pulls (NO_PERMISSION) while its clients stay
connected, and resuming lets them pull again from their committed offsets.
"""

from __future__ import annotations

import dataclasses

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin

_MASTER_ID = 0


def _masters(admin: MQAdmin) -> list[str]:
    info = admin.examine_broker_cluster_info()
    return sorted(addr for bd in info.broker_addr_table.values() if (addr := bd.broker_addrs.get(_MASTER_ID)))


def _configs(admin: MQAdmin, group: str) -> dict[str, b.SubscriptionGroupConfig | None]:
    """Each master's config of the group (None where it has none)."""
    return {
        addr: admin.get_all_subscription_group(addr).subscription_group_table.get(group) for addr in _masters(admin)
    }


def group_settings(admin: MQAdmin, group: str) -> b.SubscriptionGroupConfig:
    """The group's config as the first master that has it holds it; LookupError when none has it."""
    for config in _configs(admin, group).values():
        if config is not None:
            return config
    raise LookupError(f"no master of the cluster knows consumer group {group}")


def _update(admin: MQAdmin, group: str, changes: dict) -> b.SubscriptionGroupConfig:
    configs = _configs(admin, group)
    template = next((c for c in configs.values() if c is not None), None)
    if template is None:
        raise LookupError(f"no master of the cluster knows consumer group {group}")
    for addr, config in configs.items():
        admin.create_and_update_subscription_group_config(addr, dataclasses.replace(config or template, **changes))
    return dataclasses.replace(template, **changes)


def set_consume_enabled(admin: MQAdmin, group: str, enabled: bool) -> b.SubscriptionGroupConfig:
    """Pause (False) or resume (True) the group on every master."""
    return _update(admin, group, {"consume_enable": bool(enabled)})


def update_group_settings(
    admin: MQAdmin,
    group: str,
    *,
    retry_queue_nums: int | None = None,
    retry_max_times: int | None = None,
    consume_broadcast_enable: bool | None = None,
    which_broker_when_consume_slowly: int | None = None,
    broker_id: int | None = None,
) -> b.SubscriptionGroupConfig:
    """Change the given settings on every master, keeping the others; returns the new config.

    retryQueueNums: queues of %RETRY%group (0 makes the broker drop what consumers send back); retryMaxTimes:
    deliveries before a message goes to %DLQ%group (clients of 3.4.9 and later send their own max, which wins);
    consumeBroadcastEnable: whether broadcast consumers may pull; brokerId: the broker id the group reads from;
    whichBrokerWhenConsumeSlowly: the broker id it is sent to when it lags too far behind."""
    changes = {
        name: value
        for name, value in {
            "retry_queue_nums": retry_queue_nums,
            "retry_max_times": retry_max_times,
            "consume_broadcast_enable": consume_broadcast_enable,
            "which_broker_when_consume_slowly": which_broker_when_consume_slowly,
            "broker_id": broker_id,
        }.items()
        if value is not None
    }
    for name, value in changes.items():
        if name != "consume_broadcast_enable" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be a whole number of 0 or more, not {value!r}")
    if not changes:
        raise ValueError("no setting to change")
    return _update(admin, group, changes)

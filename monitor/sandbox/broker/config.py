"""The sandbox broker's configuration: 4.9.4's merged BrokerConfig, NettyServerConfig, NettyClientConfig and
MessageStoreConfig, as GET_BROKER_CONFIG lists them and UPDATE_BROKER_CONFIG changes them.

Tools read this text (mqadmin getBrokerConfig, the portal's config page), so it has the real key set, in the order
a 4.9.4 broker prints it (the hash order of its Properties, which depends only on the keys) and with the values of
the captured cluster: autoCreateTopicEnable, traceTopicEnable and slaveReadEnable on, like the setup the fixtures
were taken from. Several entries steer the sandbox exactly as they steer a broker (auto-creation of topics and
groups, slaveReadEnable, long polling, brokerPermission, messageDelayLevel, aclEnable...); the rest are reported
only. Paths follow the Java defaults under the home directory; the sandbox writes nothing there.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from monitor.remoting.body import DataVersion, format_properties
from monitor.sandbox.broker._common import next_version

ConfigValue = str | int | bool

_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_DELAY_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _defaults(
    cluster_name: str, broker_name: str, broker_id: int, namesrv_addr: str, store_root: str, rocketmq_home: str
) -> dict[str, ConfigValue]:
    role = "ASYNC_MASTER" if broker_id == 0 else "SLAVE"
    return {
        "shortPollingTimeMills": 1000,
        "serverSocketBacklog": 1024,
        "clientWorkerThreads": 4,
        "clientAsyncSemaphoreValue": 65535,
        "channelNotActiveInterval": 60000,
        "enableConsumeQueueExt": False,
        "clientSocketSndBufSize": 0,
        "haHousekeepingInterval": 20000,
        "consumerManageThreadPoolNums": 32,
        "transactionCheckInterval": 60000,
        "storePathRootDir": store_root,
        "autoCreateTopicEnable": True,
        "syncFlushTimeout": 5000,
        "clientChannelMaxIdleTimeSeconds": 120,
        "autoDeleteUnusedStats": False,
        "maxIndexNum": 20000000,
        "defaultTopicQueueNums": 8,
        "clientSocketRcvBufSize": 0,
        "clientManagerThreadPoolQueueCapacity": 1000000,
        "writeBufferLowWaterMark": 0,
        "debugLockEnable": False,
        "notifyConsumerIdsChangedEnable": True,
        "enableDetailStat": True,
        "brokerFastFailureEnable": True,
        "transientStorePoolEnable": False,
        "queryMessageThreadPoolNums": 10,
        "maxMessageSize": 4194304,
        "useReentrantLockWhenPutMessage": True,
        "waitTimeMillsInTransactionQueue": 3000,
        "messageIndexEnable": True,
        "commercialBaseCount": 1,
        "diskFallRecorded": True,
        "scheduleAsyncDeliverMaxResendNum2Blocked": 3,
        "endTransactionThreadPoolNums": 12,
        "filterSupportRetry": False,
        "brokerTopicEnable": True,
        "destroyMapedFileIntervalForcibly": 120000,
        "messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
        "offsetCheckInSlave": False,
        "deleteConsumeQueueFilesInterval": 100,
        "flushCommitLogTimed": True,
        "isolateLogEnable": False,
        "haSlaveFallbehindMax": 268435456,
        "waitTimeMillsInSendQueue": 200,
        "defaultQueryMaxNum": 32,
        "namesrvAddr": namesrv_addr,
        "clientCloseSocketIfTimeout": True,
        "haSendHeartbeatInterval": 5000,
        "serverCallbackExecutorThreads": 0,
        "brokerName": broker_name,
        "fetchNamesrvAddrByAddressServer": False,
        "longPollingEnable": True,
        "enableCalcFilterBitMap": False,
        "redeleteHangedFileInterval": 120000,
        "diskMaxUsedSpaceRatio": 75,
        "transactionCheckMax": 15,
        "maxTransferBytesOnMessageInMemory": 262144,
        "enableScheduleMessageStats": True,
        "flushCommitLogLeastPages": 4,
        "maxHashSlotNum": 5000000,
        "sendMessageThreadPoolNums": 2,
        "serverSocketRcvBufSize": 0,
        "putMsgIndexHightWater": 600000,
        "accessMessageInMemoryMaxRatio": 40,
        "slaveReadEnable": True,
        "fileReservedTime": 48,
        "enableDLegerCommitLog": False,
        "commercialTransCount": 1,
        "replyThreadPoolQueueCapacity": 10000,
        "consumerFallbehindThreshold": 17179869184,
        "maxErrorRateOfBloomFilter": 20,
        "storeReplyMessageEnable": True,
        "heartbeatThreadPoolNums": 2,
        "startAcceptSendRequestTimeStamp": 0,
        "traceOn": True,
        "flushDiskType": "ASYNC_FLUSH",
        "maxLmqConsumeQueueNum": 20000,
        "rejectTransactionMessage": False,
        "flushIntervalConsumeQueue": 1000,
        "clientOnewaySemaphoreValue": 65535,
        "isEnableBatchPush": False,
        "highSpeedMode": False,
        "adminBrokerThreadPoolNums": 16,
        "flushConsumeQueueThoroughInterval": 60000,
        "sendThreadPoolQueueCapacity": 10000,
        "putThreadPoolQueueCapacity": 10000,
        "commercialTimerCount": 1,
        "pullThreadPoolQueueCapacity": 100000,
        "haListenPort": 10912,
        "commitIntervalCommitLog": 200,
        "serverSocketSndBufSize": 0,
        "enableMultiDispatch": False,
        "flushConsumeQueueLeastPages": 2,
        "mappedFileSizeConsumeQueue": 6000000,
        "transientStorePoolSize": 5,
        "registerNameServerPeriod": 30000,
        "writeBufferHighWaterMark": 0,
        "disableConsumeIfConsumerReadSlowly": False,
        "serverChannelMaxIdleTimeSeconds": 120,
        "commercialBigCount": 1,
        "mappedFileSizeCommitLog": 1073741824,
        "maxTransferBytesOnMessageInDisk": 65536,
        "serverOnewaySemaphoreValue": 256,
        "checkCRCOnRecover": True,
        "forceRegister": True,
        "transferMsgByHeap": True,
        "flushConsumerOffsetInterval": 5000,
        "flushDelayOffsetInterval": 10000,
        "endTransactionPoolQueueCapacity": 100000,
        "flushIntervalCommitLog": 500,
        "waitTimeMillsInPullQueue": 5000,
        "deleteWhen": "04",
        "flushCommitLogThoroughInterval": 10000,
        "aclEnable": False,
        "cleanResourceInterval": 10000,
        "serverAsyncSemaphoreValue": 64,
        "connectTimeoutMillis": 3000,
        "storePathCommitLog": os.path.join(store_root, "commitlog"),
        "clientPooledByteBufAllocatorEnable": False,
        "commitCommitLogThoroughInterval": 200,
        "rocketmqHome": rocketmq_home,
        "useEpollNativeSelector": False,
        "maxTransferCountOnMessageInMemory": 32,
        "serverPooledByteBufAllocatorEnable": True,
        "autoCreateSubscriptionGroup": True,
        "flushLeastPagesWhenWarmMapedFile": 4096,
        "filterDataCleanTimeSpan": 86400000,
        "warmMapedFileEnable": False,
        "traceTopicEnable": True,
        "clientManageThreadPoolNums": 32,
        "consumerManagerThreadPoolQueueCapacity": 1000000,
        "cleanFileForciblyEnable": True,
        "serverSelectorThreads": 3,
        "enableScheduleAsyncDeliver": False,
        "compressedRegister": False,
        "brokerIP2": "127.0.0.1",
        "enableLmq": False,
        "commitCommitLogLeastPages": 4,
        "brokerRole": role,
        "brokerIP1": "127.0.0.1",
        "brokerPermission": 6,
        "maxDelayTime": 40,
        "transactionTimeOut": 6000,
        "maxTransferCountOnMessageInDisk": 8,
        "clientCallbackExecutorThreads": 2,
        "filterServerNums": 0,
        "fastFailIfNoBufferInStorePool": False,
        "useTLS": False,
        "duplicationEnable": False,
        "pullMessageThreadPoolNums": 20,
        "brokerId": broker_id,
        "registerBrokerTimeoutMills": 6000,
        "mappedFileSizeConsumeQueueExt": 50331648,
        "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC",
        "osPageCacheBusyTimeOutMills": 1000,
        "expectConsumerNumUseFilter": 32,
        "scheduleAsyncDeliverMaxPendingLimit": 2000,
        "serverWorkerThreads": 8,
        "slaveTimeout": 3000,
        "queryThreadPoolQueueCapacity": 20000,
        "maxMsgsNumBatch": 64,
        "flushConsumerOffsetHistoryInterval": 60000,
        "bitMapLengthConsumeQueueExt": 112,
        "processReplyMessageThreadPoolNums": 20,
        "clusterTopicEnable": True,
        "regionId": "DefaultRegion",
        "putMessageFutureThreadPoolNums": 2,
        "brokerClusterName": cluster_name,
        "commercialEnable": True,
        "haTransferBatchSize": 32768,
        "messageStorePlugIn": "",
        "listenPort": 10911,
        "waitTimeMillsInHeartbeatQueue": 31000,
        "messageIndexSafe": False,
        "heartbeatThreadPoolQueueCapacity": 50000,
        "enablePropertyFilter": False,
        "deleteCommitLogFilesInterval": 100,
    }


def _java_text(value: ConfigValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_like(current: ConfigValue, text: str) -> ConfigValue | None:
    """MixAll.properties2Object's conversion for a field of ``current``'s type; None where Java's parse throws
    (the entry is then skipped, as Configuration.update skips it)."""
    if isinstance(current, bool):
        return text.strip().lower() == "true"  # Boolean.parseBoolean
    if isinstance(current, int):
        text = text.strip()
        if not _JAVA_LONG.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
            return None
        return int(text)
    return text


def parse_delay_levels(text: str) -> list[int]:
    """ScheduleMessageService.parseDelayLevel: "1s 5s 10s ..." to milliseconds per level (level 1 first).

    Like Java, an entry with an unknown unit or a bad number makes the whole parse fail; the broker then keeps
    the levels it had."""
    levels = []
    for entry in text.split():
        unit = _DELAY_UNITS_MS.get(entry[-1:])
        if unit is None or not entry[:-1].isdigit():
            raise ValueError(f"bad messageDelayLevel entry {entry!r}")
        levels.append(int(entry[:-1]) * unit)
    return levels


class BrokerConfig:
    """The broker's live configuration and its DataVersion (sent as GET_BROKER_CONFIG's extFields.version).

    ``overrides`` are applied like a ``-c broker.properties`` file at start-up, so they do not count as an update.
    """

    def __init__(
        self,
        cluster_name: str,
        broker_name: str,
        broker_id: int,
        namesrv_addrs: list[str],
        overrides: Mapping[str, str | int | bool] | None = None,
    ):
        user_home = os.path.expanduser("~")
        store_root = os.path.join(user_home, "store", broker_name if broker_id == 0 else f"{broker_name}-s")
        rocketmq_home = os.environ.get("ROCKETMQ_HOME") or str(Path(__file__).resolve().parent)
        self.values = _defaults(
            cluster_name, broker_name, broker_id, ";".join(namesrv_addrs), store_root, rocketmq_home
        )
        self.data_version = DataVersion(counter=0)
        if overrides:
            self._merge({key: _java_text(value) for key, value in overrides.items()})

    def __getitem__(self, key: str) -> ConfigValue:
        return self.values[key]

    def set(self, key: str, value: ConfigValue) -> None:
        """Set a value the broker itself determines (the bound ports), without a new DataVersion."""
        self.values[key] = value

    def properties_text(self) -> str:
        """Configuration.getAllConfigsFormatString: the GET_BROKER_CONFIG body."""
        return format_properties({key: _java_text(value) for key, value in self.values.items()})

    def update(self, properties: Mapping[str, str]) -> list[str]:
        """Configuration.update: known keys only, each parsed like its field, then a new DataVersion. Returns the
        keys that changed value."""
        changed = self._merge(properties)
        next_version(self.data_version)
        return changed

    def _merge(self, properties: Mapping[str, str]) -> list[str]:
        changed = []
        for key, text in properties.items():
            if key not in self.values:
                continue
            value = _parse_like(self.values[key], text)
            if value is not None and value != self.values[key]:
                self.values[key] = value
                changed.append(key)
        return changed

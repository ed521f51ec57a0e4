"""The sandbox broker: RocketMQ 4.9.4's broker, in memory, on the sandbox RemotingServer (see :mod:`.core`)."""

from monitor.sandbox.broker.core import Broker

__all__ = ["Broker"]

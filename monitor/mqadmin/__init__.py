"""RocketMQ's mqadmin subcommands, for ``python manage.py mqadmin``.

Each area module describes its subcommands as :class:`~monitor.mqadmin.common.SubCommand` entries: options named
and lettered as in Apache RocketMQ 4.9.4's mqadmin, a function ``(admin, args) -> result`` that does the work with
:class:`monitor.remoting.admin.MQAdmin` and returns plain data, and a renderer printing that data as mqadmin's
tables (``--json`` prints the same data through :mod:`monitor.mqadmin.output` instead).
"""

from monitor.mqadmin import browse, cluster, consumers, groups, messages, offsets, produce, stats, topics, traces

COMMANDS = {
    command.name: command
    for module in (cluster, topics, groups, consumers, offsets, stats, messages, browse, produce, traces)
    for command in module.COMMANDS
}

__all__ = ["COMMANDS"]

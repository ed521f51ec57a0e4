"""The ROCKETMQ_HOME a started server reads: logging configuration (without it 4.x startups exit), the ACL account
file brokers check and the tools' credentials file mqadmin signs with, and properties files written the way
RocketMQ reads them (``key=value`` lines).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# Console-only logging: each JVM's stdout is its log file in the run's folder, nothing goes to ~/logs.
_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""
# 4.x reads conf/logback_<role>.xml; 5.x reads conf/rmq.<role>.logback.xml (a role without one logs to ~/logs).
_LOGBACK_NAMES = (
    "logback_namesrv.xml",
    "logback_broker.xml",
    "logback_tools.xml",
    "logback_controller.xml",
    "logback_proxy.xml",
    "rmq.namesrv.logback.xml",
    "rmq.broker.logback.xml",
    "rmq.tools.logback.xml",
    "rmq.controller.logback.xml",
    "rmq.proxy.logback.xml",
    "rmq.client.logback.xml",
)


def write_home(home: Path, acl: tuple[str, str] | None = None) -> Path:
    """Create ``home/conf`` with logging for every role and, with ``acl`` (access key, secret key), one admin
    account in plain_acl.yml (brokers) and the same credentials in tools.yml (mqadmin)."""
    conf = home / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for name in _LOGBACK_NAMES:
        (conf / name).write_text(_LOGBACK)
    if acl is not None:
        access_key, secret_key = acl
        (conf / "plain_acl.yml").write_text(
            "globalWhiteRemoteAddresses: []\n"
            "accounts:\n"
            f"  - accessKey: {access_key}\n"
            f"    secretKey: {secret_key}\n"
            "    whiteRemoteAddress:\n"
            "    admin: true\n"
        )
        (conf / "tools.yml").write_text(f"accessKey: {access_key}\nsecretKey: {secret_key}\n")
    return home


def write_properties(path: Path, values: Mapping[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}={_text(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

"""The plumbing every admin call shares: the remoting client, request building, calls to one address or to the
name servers in turn, and the constants RocketMQ's admin tools use."""

from __future__ import annotations

from collections.abc import Iterable

from monitor.remoting import body as b
from monitor.remoting import headers as h
from monitor.remoting.acl import AclCredentials
from monitor.remoting.client import RemotingClient, ServerRequestHandler, expect_success
from monitor.remoting.codes import RequestCode, SerializeType
from monitor.remoting.command import RemotingCommand
from monitor.remoting.errors import (
    ProtocolError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)

MIXALL_RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DEFAULT_TOPIC = "TBW102"
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
# The name-server KV namespace holding ordered topics' queue layout (NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
MAX_TIMESTAMP = 9223372036854775807
# PullSysFlag bits.
PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4
# MixAll.REQ_T with RequestType.STREAM: what mqadmin's pull consumer adds to its pulls.
REQ_T_STREAM = {"ReqT": "0"}
# The timestamp mqadmin sends for "-s now": reset to each queue's max offset.
RESET_TO_NOW = -1


def retry_topic(group: str) -> str:
    return MIXALL_RETRY_GROUP_TOPIC_PREFIX + group


def _config_properties(response: RemotingCommand, addr: str) -> dict[str, str]:
    """The Properties text of a GET_BROKER_CONFIG / GET_NAMESRV_CONFIG answer. A body that is not such text (not
    UTF-8, a broken escape) is a ProtocolError naming the server, so a caller probing many servers can say which."""
    try:
        return b.parse_properties(response.body)
    except ProtocolError as exc:
        raise ProtocolError(f"configuration from {addr} is unreadable: {exc}") from None


class AdminBase:
    """Admin calls against one cluster, reached through its name servers: the shared plumbing."""

    def __init__(
        self,
        namesrv_addrs: Iterable[str] | str = (),
        *,
        acl: AclCredentials | None = None,
        timeout: float = 5.0,
        connect_timeout: float = 3.0,
        max_inflight: int = 64,
        serialize_type: SerializeType = SerializeType.JSON,
        request_handler: ServerRequestHandler | None = None,
    ):
        if isinstance(namesrv_addrs, str):
            namesrv_addrs = [a.strip() for a in namesrv_addrs.split(";") if a.strip()]
        self.namesrv_addrs = list(namesrv_addrs)
        self.serialize_type = serialize_type
        self.client = RemotingClient(
            acl=acl,
            timeout=timeout,
            connect_timeout=connect_timeout,
            max_inflight=max_inflight,
            request_handler=request_handler,
        )

    # --- plumbing ------------------------------------------------------------------------------------------------

    def _command(self, code: RequestCode, header: h.CommandHeader | None = None, body: bytes = b"", **extra):
        ext = header.to_ext_fields() if header is not None else None
        if extra:
            ext = {**(ext or {}), **extra}
        return RemotingCommand.request(code, ext, body, serialize_type=self.serialize_type)

    async def call(self, addr: str, cmd: RemotingCommand, *ok_codes: int, timeout: float | None = None):
        """Send to one address; a non-success code (other than ok_codes) raises RemotingError."""
        response = await self.client.invoke(addr, cmd, timeout=timeout)
        return expect_success(response, cmd, addr, *ok_codes)

    async def call_namesrv(self, make_cmd, *ok_codes: int, timeout: float | None = None) -> RemotingCommand:
        """Ask the name servers in turn; the first that answers decides (unreachable ones are skipped)."""
        if not self.namesrv_addrs:
            raise RemotingConnectError("(no name server)", "no name server address configured")
        last: Exception | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self.call(addr, make_cmd(), *ok_codes, timeout=timeout)
            except (RemotingConnectError, RemotingTimeoutError, RemotingClosedError) as exc:
                last = exc
        raise last

    async def close(self) -> None:
        await self.client.close()

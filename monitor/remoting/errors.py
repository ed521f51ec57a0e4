"""Errors raised by the wire client.

Every failure the client can meet has its own type, so callers (Celery tasks, the CLI, the portal) can tell
"the broker said no" from "the broker is not there" from "the bytes made no sense" without parsing messages.
"""


class RemotingClientError(Exception):
    """Base class of every error the wire client raises."""


class ProtocolError(RemotingClientError):
    """Bytes that are not a valid RocketMQ frame, header or body (truncated, absurd lengths, garbage)."""


class RemotingError(RemotingClientError):
    """The server answered with a non-success response code; carries RocketMQ's code and remark."""

    def __init__(self, code: int, remark: str | None, *, request_code: int | None = None, addr: str | None = None):
        self.code = code
        self.remark = remark
        self.request_code = request_code
        self.addr = addr
        super().__init__(self._describe())

    def _describe(self) -> str:
        from monitor.remoting.codes import request_code_name, response_code_name

        where = f" from {self.addr}" if self.addr else ""
        what = f" to {request_code_name(self.request_code)}" if self.request_code is not None else ""
        remark = (self.remark or "").strip()
        return f"{response_code_name(self.code)} ({self.code}){what}{where}: {remark or 'no remark'}"


class RemotingConnectError(RemotingClientError):
    """The address could not be connected to (refused, unreachable, name not resolved)."""

    def __init__(self, addr: str, reason: str = ""):
        self.addr = addr
        self.reason = reason
        super().__init__(f"connect to {addr} failed" + (f": {reason}" if reason else ""))


class RemotingTimeoutError(RemotingClientError):
    """No response arrived in time; names the address and the request."""

    def __init__(self, addr: str, request_code: int, timeout: float):
        from monitor.remoting.codes import request_code_name

        self.addr = addr
        self.request_code = request_code
        self.timeout = timeout
        super().__init__(f"{request_code_name(request_code)} to {addr} timed out after {timeout:g}s")


class RemotingClosedError(RemotingClientError):
    """The connection closed while a request was waiting for its response."""

    def __init__(self, addr: str, reason: str = "connection closed"):
        self.addr = addr
        super().__init__(f"{addr}: {reason}")

"""What each online client of a consumer group says about itself: its running info (subscriptions, thread pool,
consume TPS and RT, failures, the queues it holds) and, on demand, its thread stack.

Both come from the client itself: the broker relays GET_CONSUMER_RUNNING_INFO to the client's connection and
returns its answer. A Java client fills the stack when asked (jstack); the C++ client answers with an empty one,
so for it there is no stack to show (:data:`NO_STACK_NOTE`). One client failing to answer (busy, gone, an answer
it wrote badly) is that client's error, not the group's.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.remoting import body as b
from monitor.remoting.admin import MQAdmin
from monitor.remoting.codes import ResponseCode
from monitor.remoting.errors import ProtocolError, RemotingError

NO_STACK_NOTE = "this client sent no thread stack (the C++ client never does; Java clients send one when asked)"


@dataclass(frozen=True)
class ClientDiagnostics:
    """One online client: who it is (id, address, language, MQVersion ordinal) and its running info, or why there
    is none."""

    client_id: str
    client_addr: str
    language: str
    version: int
    running_info: b.ConsumerRunningInfo | None
    error: str | None = None


def online_clients(admin: MQAdmin, group: str) -> list[b.Connection]:
    """The group's connected clients; empty when none is online."""
    try:
        return list(admin.examine_consumer_connection_info(group).connection_set)
    except RemotingError as exc:
        if exc.code in (ResponseCode.CONSUMER_NOT_ONLINE, ResponseCode.TOPIC_NOT_EXIST):
            return []
        raise


def _describe(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def client_running_info(admin: MQAdmin, group: str) -> list[ClientDiagnostics]:
    """Each online client's running info, in client id order."""
    result = []
    for connection in sorted(online_clients(admin, group), key=lambda c: c.client_id):
        info, error = None, None
        try:
            info = admin.get_consumer_running_info(group, connection.client_id)
        except (RemotingError, ProtocolError) as exc:
            error = _describe(exc)
        result.append(
            ClientDiagnostics(
                connection.client_id, connection.client_addr, connection.language or "", connection.version, info, error
            )
        )
    return result


def client_stack(admin: MQAdmin, group: str, client_id: str) -> str | None:
    """The client's thread stack (GET_CONSUMER_RUNNING_INFO with jstack); None when it sent none (show
    :data:`NO_STACK_NOTE`). A client that is not online or does not answer raises RemotingError."""
    info = admin.get_consumer_running_info(group, client_id, jstack=True)
    return info.jstack or None

"""HTTP requests to URLs that users typed (webhook channels), made so they cannot reach the portal's own network.

A user who can configure a URL can otherwise make the portal fetch cloud metadata (169.254.169.254), its own admin
ports on loopback, or services on the private network, and read the answers back through the error shown to them.
So one POST here:

- resolves the host once and refuses it if any address it resolves to is internal — loopback, private, link-local,
  multicast, reserved, unspecified, IPv6 site-local, and IPv4 hidden in IPv6 (mapped ``::ffff:a.b.c.d``,
  compatible ``::a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4, Teredo) — unless ``settings.WEBHOOK_ALLOWED_NETWORKS``
  names it. Odd IPv4 spellings (``2130706433``, ``0x7f.1``, ``127.1``) are caught because the resolved address is
  judged, never the text;
- connects to that very address (a second DNS answer cannot swap it: no rebinding), sending the URL's host in the
  ``Host`` header and, for https, as SNI and the name the certificate is checked against;
- never follows a redirect (the caller sees the 3xx status);
- keeps one deadline for the whole exchange (connect, TLS, send, every read), so a server dripping a byte at a time
  cannot hold a worker; DNS is bounded by the system resolver's own timeouts;
- reads at most ``MAX_ANSWER_BYTES`` of a 2xx answer and nothing of any other;
- turns every transport failure into :class:`OutboundError` with a short reason that never contains the answer's
  bytes.
"""

from __future__ import annotations

import dataclasses
import http.client
import ipaddress
import socket
import ssl
import time
import urllib.parse

from django.conf import settings

# The most of a 2xx answer that is read (webhook endpoints answer a few bytes: "ok", {"errcode": 0}).
MAX_ANSWER_BYTES = 64 * 1024

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_PRINTABLE = "".join(chr(code) for code in range(33, 127))

# IPv6 prefixes whose last 32 bits are the IPv4 address really reached: RFC 4291 IPv4-compatible and RFC 6052's
# well-known NAT64 prefix (the local-use 64:ff9b:1::/48 is internal as a whole).
_IPV4_IN_LOW_BITS = (ipaddress.IPv6Network("::/96"), ipaddress.IPv6Network("64:ff9b::/96"))


class OutboundError(Exception):
    """The request failed. ``reason`` is short and safe to show the user (no bytes of the answer); ``permanent``:
    sending the same request again will fail the same way (a refused address, an invalid host name)."""

    def __init__(self, reason: str, *, permanent: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


@dataclasses.dataclass(frozen=True)
class Answer:
    status: int
    # Empty unless the status is 2xx.
    body: bytes


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """``settings.WEBHOOK_ALLOWED_NETWORKS`` (CIDRs, validated when settings load) as networks."""
    return [ipaddress.ip_network(cidr, strict=False) for cidr in settings.WEBHOOK_ALLOWED_NETWORKS]


def _ipv4_behind(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to (mapped, compatible, NAT64, 6to4, Teredo)."""
    found = []
    if address.ipv4_mapped is not None:
        found.append(address.ipv4_mapped)
    if any(address in network for network in _IPV4_IN_LOW_BITS):
        found.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def is_internal(address: IPAddress) -> bool:
    """Whether ``address`` is (or leads to) anything but a public unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        behind = _ipv4_behind(address)
        if address.ipv4_mapped is not None or any(address in network for network in _IPV4_IN_LOW_BITS):
            # A translated address reaches exactly its IPv4 address: judge that alone (a NAT64 gateway's
            # 64:ff9b::8.8.8.8 is public although the prefix is "reserved").
            return any(is_internal(ipv4) for ipv4 in behind)
        if address.is_site_local or any(is_internal(ipv4) for ipv4 in behind):
            return True
    return (
        not address.is_global
        or address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def is_allowed(address: IPAddress, allowed: list) -> bool:
    """A public address, or one the admins' allow-list names (directly or as the IPv4 behind it)."""
    candidates = [address, *(_ipv4_behind(address) if isinstance(address, ipaddress.IPv6Address) else [])]
    if any(candidate in network for candidate in candidates for network in allowed):
        return True
    return not is_internal(address)


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline reached")
    return left


class _DeadlineSocket(socket.socket):
    """A TCP socket whose every send and receive may only use what is left of one deadline (a plain socket timeout
    restarts with each read, so a drip-feeding server could hold it forever)."""

    deadline: float

    def recv_into(self, buffer, nbytes=0, flags=0):
        self.settimeout(_remaining(self.deadline))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags=0):
        self.settimeout(_remaining(self.deadline))
        return super().sendall(data, flags)


class _DeadlineSSLSocket(ssl.SSLSocket):
    deadline: float

    def recv_into(self, buffer, nbytes=None, flags=0):
        self.settimeout(_remaining(self.deadline))
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags=0):
        self.settimeout(_remaining(self.deadline))
        return super().sendall(data, flags)


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.sslsocket_class = _DeadlineSSLSocket
    return context


def _resolve(host: str, port: int) -> list[tuple[int, tuple]]:
    """Every (family, socket address) ``host`` resolves to, each checked; OutboundError if any is internal."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise OutboundError("cannot resolve the host name") from None
    allowed = allowed_networks()
    resolved = []
    for family, _type, _proto, _canonname, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        if not is_allowed(ipaddress.ip_address(sockaddr[0]), allowed):
            raise OutboundError(
                "the host's address is internal, which webhooks may not reach "
                "(a portal admin may allow its network in WEBHOOK_ALLOWED_NETWORKS)",
                permanent=True,
            )
        resolved.append((family, sockaddr))
    if not resolved:
        raise OutboundError("the host name has no IPv4 or IPv6 address")
    return resolved


def _connect(addresses: list[tuple[int, tuple]], deadline: float) -> _DeadlineSocket:
    """A connection to the first of ``addresses`` that accepts one."""
    failure: OSError = ConnectionRefusedError()
    for family, sockaddr in addresses:
        sock = _DeadlineSocket(family, socket.SOCK_STREAM)
        sock.deadline = deadline
        try:
            sock.settimeout(_remaining(deadline))
            sock.connect(sockaddr)
        except OSError as error:
            sock.close()
            if isinstance(error, TimeoutError):
                raise
            failure = error
            continue
        return sock
    raise failure


def _open(scheme: str, host: str, port: int, deadline: float) -> http.client.HTTPConnection:
    """An HTTP(S) connection already connected to the checked address of ``host``."""
    sock = _connect(_resolve(host, port), deadline)
    if scheme == "http":
        connection = http.client.HTTPConnection(host, port)
        connection.sock = sock
        return connection
    context = _tls_context()
    try:
        tls = context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise
    tls.deadline = deadline
    connection = http.client.HTTPSConnection(host, port, context=context)
    connection.sock = tls
    return connection


def _read_body(response: http.client.HTTPResponse, limit: int) -> bytes:
    body = response.read(limit + 1)
    if len(body) > limit:
        raise OutboundError(f"the answer is larger than {limit // 1024} KiB")
    if response.length:  # fewer bytes than Content-Length announced before the connection closed
        raise http.client.IncompleteRead(b"", response.length)
    return body


def _reason(error: BaseException, timeout: float) -> str:
    """A short, fixed description of a transport failure: never the exception's text where that may quote what
    the server sent (BadStatusLine carries the status line it could not parse)."""
    if isinstance(error, TimeoutError):
        return f"no complete answer within {timeout:g} s"
    if isinstance(error, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(error, http.client.IncompleteRead):
        return "the answer ended early"
    if isinstance(error, ssl.SSLCertVerificationError):  # before ValueError, which it also is
        return f"TLS certificate rejected: {error.verify_message}"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed: {error.reason or type(error).__name__}"
    if isinstance(error, (http.client.HTTPException, ValueError)):  # http.client's parsing raises ValueError too
        return "the answer is not valid HTTP"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ConnectionResetError):
        return "the connection was reset"
    if isinstance(error, OSError):
        return f"network error: {error.strerror or type(error).__name__}"
    return type(error).__name__


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Answer:
    """POST ``body`` to ``url`` (http or https) within ``timeout`` seconds in all; the answer's status, and its
    body when 2xx. Raises OutboundError for a refused address and every transport failure."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise OutboundError("only http and https URLs are allowed", permanent=True)
    try:
        host = parts.hostname.encode("idna").decode("ascii")
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except (UnicodeError, ValueError):
        raise OutboundError("the URL's host or port is not valid", permanent=True) from None
    # Characters a request line cannot carry (non-ASCII, controls) percent-encoded; the URL is otherwise sent as is.
    target = urllib.parse.quote(urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, "")), safe=_PRINTABLE)
    deadline = time.monotonic() + timeout
    connection = None
    try:
        connection = _open(parts.scheme, host, port, deadline)
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        answer_body = _read_body(response, MAX_ANSWER_BYTES) if 200 <= response.status < 300 else b""
        return Answer(status=response.status, body=answer_body)
    except OutboundError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as error:
        raise OutboundError(_reason(error, timeout)) from None
    finally:
        if connection is not None:
            connection.close()

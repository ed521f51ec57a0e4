"""SSH to a server to run one fixed command, with the server's host key checked against a pin.

Trust on first use, like ``ssh`` with ``StrictHostKeyChecking=accept-new``: the caller passes the key pinned for
the host (or ``None`` on first contact); a server presenting any other key (another key of the same type, or a key
of another type) is refused with :class:`HostKeyChanged` before any credential is sent, and the key seen is
returned so the caller can pin it. The caller owns the pins (they are database rows, and this module never touches
the database, so it can run in worker threads).

Only public-key logins without a passphrase are supported: a passphrase would be stored next to the key, so it
would protect nothing. The command is the caller's constant; this module puts nothing into it.
"""

from __future__ import annotations

import base64
import io
import socket
from dataclasses import dataclass

import paramiko

# paramiko names an RSA key "ssh-rsa" but negotiates it as one of these signature algorithms.
_RSA_ALGORITHMS = ("rsa-sha2-512", "rsa-sha2-256")


class SSHError(Exception):
    """Collection over SSH failed; ``str()`` is a message fit to show an administrator."""


class ServerUnreachable(SSHError):
    pass


class HostKeyChanged(SSHError):
    pass


class AuthenticationFailed(SSHError):
    pass


class CommandFailed(SSHError):
    pass


@dataclass(frozen=True)
class HostKey:
    """A server's public host key as ``known_hosts`` writes it (type and base64 blob)."""

    key_type: str
    public_key: str

    @property
    def fingerprint(self) -> str:
        """``SHA256:...``, the form ``ssh-keygen -lf`` prints, for an administrator to compare by eye."""
        return paramiko.PKey.from_type_string(self.key_type, base64.b64decode(self.public_key)).fingerprint

    @classmethod
    def of(cls, key: paramiko.PKey) -> HostKey:
        return cls(key_type=key.get_name(), public_key=key.get_base64())


def host_key_changed(host: str, port: int, *, pinned: HostKey, seen: HostKey) -> HostKeyChanged:
    return HostKeyChanged(
        f"the host key of {host}:{port} changed: pinned {pinned.key_type} {pinned.fingerprint}, the server showed "
        f"{seen.key_type} {seen.fingerprint}; if the change is expected, remove the pinned key so the next "
        "collection pins the new one"
    )


def load_private_key(text: str) -> paramiko.PKey:
    """The key in ``text`` (OpenSSH or PEM format; Ed25519, ECDSA or RSA). Raises ValueError with a message fit
    for a form field when the text is not such a key or is protected by a passphrase."""
    for key_class in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return key_class.from_private_key(io.StringIO(text.strip() + "\n"))
        except paramiko.PasswordRequiredException:
            raise ValueError("the private key is protected by a passphrase; store a key without one") from None
        except (paramiko.SSHException, ValueError, TypeError, IndexError):
            continue
    raise ValueError("not an Ed25519, ECDSA or RSA private key in OpenSSH or PEM format")


def _prefer(transport: paramiko.Transport, key_type: str) -> None:
    """Ask the server for the pinned type of host key first, so a server holding several keys shows the pinned one."""
    options = transport.get_security_options()
    preferred = _RSA_ALGORITHMS if key_type == "ssh-rsa" else (key_type,)
    preferred = tuple(name for name in preferred if name in options.key_types)
    options.key_types = preferred + tuple(name for name in options.key_types if name not in preferred)


def run_command(
    host: str,
    port: int,
    *,
    username: str,
    private_key: paramiko.PKey,
    command: str,
    pinned: HostKey | None,
    timeout: float,
) -> tuple[str, HostKey]:
    """Run ``command`` on ``host`` and return (its standard output, the host key seen).

    ``timeout`` bounds the TCP connect, the SSH handshake, the login and each wait for output. A non-zero exit
    status raises CommandFailed with the start of standard error."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise ServerUnreachable(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
    transport = paramiko.Transport(sock)
    try:
        transport.banner_timeout = transport.handshake_timeout = transport.auth_timeout = timeout
        if pinned is not None:
            _prefer(transport, pinned.key_type)
        try:
            transport.start_client(timeout=timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ServerUnreachable(f"SSH handshake with {host}:{port} failed: {exc}") from None
        seen = HostKey.of(transport.get_remote_server_key())
        if pinned is not None and seen != pinned:
            raise host_key_changed(host, port, pinned=pinned, seen=seen)
        try:
            transport.auth_publickey(username, private_key)
        except paramiko.AuthenticationException:
            raise AuthenticationFailed(f"{host}:{port} refused the private key for user {username!r}") from None
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise ServerUnreachable(f"SSH login to {host}:{port} failed: {exc}") from None
        return _execute(transport, command, timeout, where=f"{host}:{port}"), seen
    finally:
        transport.close()


def _execute(transport: paramiko.Transport, command: str, timeout: float, *, where: str) -> str:
    try:
        channel = transport.open_session(timeout=timeout)
        channel.settimeout(timeout)
        channel.exec_command(command)
        stdout = channel.makefile("rb").read()
        stderr = channel.makefile_stderr("rb").read()
        status = channel.recv_exit_status()
    except TimeoutError:
        raise ServerUnreachable(f"{where} stopped answering while the command ran") from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise ServerUnreachable(f"running the command on {where} failed: {exc}") from None
    if status != 0:
        detail = stderr.decode(errors="replace").strip()[:500]
        raise CommandFailed(f"the command exited with status {status} on {where}: {detail}")
    return stdout.decode(errors="replace")

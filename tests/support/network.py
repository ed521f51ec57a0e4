"""Ports on 127.0.0.1: one free to listen on, and addresses where nothing listens (connections are refused)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now; the caller starts a server there (another process may take it first, which
    the tests accept as unlikely)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def closed_port_addr() -> str:
    """``127.0.0.1:<port>`` where nothing listens, as a name server or broker address."""
    return f"127.0.0.1:{free_port()}"


def closed_port_url() -> str:
    """An http:// address on 127.0.0.1 where nothing listens."""
    return f"http://{closed_port_addr()}"

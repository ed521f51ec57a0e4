"""Typed environment helpers for settings: a wrong value fails loudly at start, naming the variable."""

import contextlib
import ipaddress
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from pathlib import Path


class ImproperEnvironment(RuntimeError):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperEnvironment(f"{name} must be an integer, got {raw!r}") from None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperEnvironment(f"{name} must be a boolean (true/false), got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str, default: list[str]) -> list[str]:
    """Comma-separated CIDRs (``10.0.0.0/8, ::1/128``); a bare address is a network of one."""
    networks = env_list(name, default)
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperEnvironment(f"{name} must list networks such as 10.0.0.0/8, got {network!r}") from None
    return networks


def env_choice(name: str, default: str, choices: set[str]) -> str:
    raw = os.environ.get(name) or default
    if raw not in choices:
        raise ImproperEnvironment(f"{name} must be one of {', '.join(sorted(choices))}, got {raw!r}")
    return raw


def env_rate(name: str, default: str) -> str:
    """A request rate as DRF throttles read it: ``<count>/<period>``, the period starting with s, m, h or d."""
    raw = os.environ.get(name) or default
    if not re.fullmatch(r"[1-9][0-9]*/[smhd][a-z]*", raw.strip()):
        raise ImproperEnvironment(f"{name} must be a rate such as 100/minute or 5/second, got {raw!r}")
    return raw.strip()


def read_or_create_secret(path: Path, generate: Callable[[], str]) -> str:
    """The secret kept in ``path``, generated with ``generate`` and written there (mode 0600) if there is none.

    Safe when several processes start at once (the web server, the Celery worker and beat on a fresh install): the
    new secret is written whole to a temporary file beside ``path`` and hard-linked into place, which fails if the
    file exists. So ``path`` never exists half-written, exactly one candidate wins and the losers read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        existing = path.read_text().strip()
    except FileNotFoundError:
        existing = None
    if existing is None:
        fd, candidate = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(generate())
                handle.flush()
                os.fsync(handle.fileno())
            with contextlib.suppress(FileExistsError):  # another process won: its secret is the one
                os.link(candidate, path)
        finally:
            os.unlink(candidate)
        existing = path.read_text().strip()
    if not existing:
        raise ImproperEnvironment(f"{path} is empty; delete it to have a new secret generated")
    return existing


def secret_key(var_dir: Path) -> str:
    """DJANGO_SECRET_KEY if set; otherwise a key generated once into var/ (never committed) and reused."""
    from_env = os.environ.get("DJANGO_SECRET_KEY")
    if from_env:
        return from_env
    return read_or_create_secret(var_dir / "secret_key", lambda: secrets.token_urlsafe(50))

"""Encryption at rest for secrets the portal must keep but never show back (ACL secret keys, SSH private keys,
webhook secrets).

The key is FIELD_ENCRYPTION_KEY (a Fernet key) from the environment, or one generated once into var/. It is kept
apart from SECRET_KEY on purpose: rotating the session-signing key must not make stored secrets unreadable.
Several keys may be given comma-separated (newest first) to rotate: values are written with the first and read
with any of them.
"""

import os
from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models

from portal.env import read_or_create_secret


class SecretUnreadable(RuntimeError):
    """A stored secret cannot be decrypted with any configured key (the key was lost or changed)."""


def _key_file() -> Path:
    return Path(settings.VAR_DIR) / "field_encryption_key"


def _load_keys() -> list[bytes]:
    from_env = os.environ.get("FIELD_ENCRYPTION_KEY", "").strip()
    if from_env:
        return [key.strip().encode() for key in from_env.split(",") if key.strip()]
    # Created at most once even when the web server, the worker and beat start together on a fresh install.
    key = read_or_create_secret(_key_file(), lambda: Fernet.generate_key().decode())
    return [key.encode()]


@lru_cache(maxsize=1)
def _fernet() -> MultiFernet:
    return MultiFernet([Fernet(key) for key in _load_keys()])


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("a stored secret cannot be decrypted with the configured FIELD_ENCRYPTION_KEY") from None


class EncryptedTextField(models.TextField):
    """A text column holding Fernet ciphertext; Python code sees the plaintext. An empty string stays empty, so
    "no secret" needs no encryption and can be tested for in queries."""

    def from_db_value(self, value, expression, connection):
        if not value:
            return value
        return decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)

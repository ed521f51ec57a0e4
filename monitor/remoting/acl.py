"""Request signing for clusters with ACL enabled, as RocketMQ's AclClientRPCHook does it.

The signature is HmacSHA1(secretKey, values of all extFields except Signature (and _UNIQUE_KEY_QUERY, which brokers
leave out), sorted by key, concatenated, then the body), Base64-encoded. AccessKey (and SecurityToken, if any)
are added before signing so they are signed too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from monitor.remoting.command import RemotingCommand

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
# Brokers leave this QUERY_MESSAGE flag out when they check a signature (PlainAccessValidator, 4.9.x and 5.x), while
# the Java client's hook signs it, so mqadmin's queryMsgByKey fails on ACL clusters. We sign what brokers check.
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
UNSIGNED_FIELDS = frozenset({SIGNATURE, UNIQUE_MSG_QUERY_FLAG})


def _as_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def calculate_signature(ext_fields: dict, body: bytes, secret_key: str) -> str:
    content = "".join(_as_text(ext_fields[k]) for k in sorted(ext_fields) if k not in UNSIGNED_FIELDS).encode()
    digest = hmac.new(secret_key.encode(), content + (body or b""), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


@dataclass(frozen=True)
class AclCredentials:
    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        return f"AclCredentials(access_key={self.access_key!r}, secret_key='***')"

    def sign(self, cmd: RemotingCommand) -> RemotingCommand:
        """Add AccessKey/SecurityToken first and Signature last, in the order the Java hook inserts them."""
        fields = {ACCESS_KEY: self.access_key}
        if self.security_token is not None:
            fields[SECURITY_TOKEN] = self.security_token
        for key, value in (cmd.ext_fields or {}).items():
            if key not in (ACCESS_KEY, SECURITY_TOKEN, SIGNATURE):
                fields[key] = value
        fields[SIGNATURE] = calculate_signature(fields, cmd.body, self.secret_key)
        cmd.ext_fields = fields
        return cmd


def verify_signature(cmd: RemotingCommand, secret_key: str) -> bool:
    """True when the request's Signature matches its content under this secret (used by the sandbox broker)."""
    fields = cmd.ext_fields or {}
    given = fields.get(SIGNATURE)
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given, calculate_signature(fields, cmd.body, secret_key))

"""The broker's ACL check (PlainAccessValidator / PlainPermissionManager.validate): who signed a request, and the
AclException remark a request that is not properly signed gets."""

from __future__ import annotations

from collections.abc import Mapping

from monitor.remoting.acl import verify_signature
from monitor.remoting.command import RemotingCommand

ACCESS_KEY = "AccessKey"


def acl_problem(cmd: RemotingCommand, accounts: Mapping[str, str]) -> str | None:
    """PlainPermissionManager.validate's verdict on a request's credentials, as the remark a broker sends (the
    AclException and the line of 4.9.4's PlainPermissionManager that throws it), None when they are good.

    The signed content is every extFields value but Signature and _UNIQUE_KEY_QUERY, sorted by key, then the
    body (PlainAccessValidator.parse)."""
    fields = cmd.ext_fields or {}
    access_key = fields.get(ACCESS_KEY)
    if access_key is None:
        return _acl_exception("No accessKey is configured", 663)
    access_key = str(access_key)
    secret = accounts.get(access_key)
    if secret is None:
        return _acl_exception(f"No acl config for {access_key}", 667)
    if not verify_signature(cmd, secret):
        return _acl_exception(f"Check signature failed for accessKey={access_key}", 683)
    return None


def _acl_exception(message: str, line: int) -> str:
    """RemotingHelper.exceptionSimpleDesc of an AclException thrown in PlainPermissionManager.validate."""
    return (
        f"org.apache.rocketmq.acl.common.AclException: {message}, "
        f"org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:{line})"
    )

"""Issuing and revoking a group's client tokens on its page, for producer and consumer groups alike
(:mod:`portal.services.client_tokens`): the owning team (and admins) only. A token is shown in full once, on the
page that answers its issue; afterwards only its prefix is."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from portal import access
from portal.services import client_tokens
from portal.web.entries import visible_entry


@dataclass(frozen=True)
class TokenPages:
    """One kind of token on its group's page: the token kind, the group's detail page, the tokens card's anchor."""

    kind: client_tokens.TokenKind
    group_model: type
    detail_url: str
    anchor: str
    scheme: str


def tokens_context(user, group) -> dict:
    can_manage = access.can_manage_client_tokens(user, group)
    return {
        "can_manage_tokens": can_manage,
        "tokens": group.tokens.select_related("created_by", "revoked_by") if can_manage else [],
    }


def _managed_group(request, pages: TokenPages, pk):
    group = visible_entry(pages.group_model, request.user, pk)
    if not access.can_manage_client_tokens(request.user, group):
        raise PermissionDenied
    return group


def issue(request, pages: TokenPages, pk):
    group = _managed_group(request, pages, pk)
    try:
        issued = client_tokens.issue(pages.kind, group, by=request.user, label=request.POST.get("label", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(pages.detail_url, group.pk)
    return render(request, "portal/client_token_issued.html", {"group": group, "issued": issued, "page": pages})


def revoke(request, pages: TokenPages, pk, token_pk):
    group = _managed_group(request, pages, pk)
    token = get_object_or_404(group.tokens, pk=token_pk)
    try:
        client_tokens.revoke(pages.kind, token, by=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Token %(prefix)s… revoked.") % {"prefix": token.prefix})
    return redirect(pages.detail_url, group.pk)

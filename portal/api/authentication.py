"""How API callers authenticate besides the login session: people with their personal token
(``Authorization: Token <key>``, which expires; :mod:`portal.services.api_tokens`) and producers (the SDK) with their
producer group's token (``Authorization: Producer <token>``).

Users never authenticate with a producer token, and producer tokens authenticate nothing else: the report
endpoints accept only this scheme, so a request without it is answered 401 with ``WWW-Authenticate: Producer``. The
token becomes ``request.auth`` (the user stays anonymous); :class:`HasProducerToken` requires it.
"""

from django.contrib.auth.models import AnonymousUser
from django.utils import formats
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission

from portal.models import ProducerToken
from portal.services import api_tokens, producer_tokens

KEYWORD = "Producer"


class ExpiringTokenAuthentication(authentication.TokenAuthentication):
    """DRF's token authentication, refusing a token older than API_TOKEN_TTL_DAYS with a message that says so."""

    def authenticate_credentials(self, key):
        if not (key.isascii() and key.isalnum() and len(key) <= 64):  # a key is 40 hex digits; NUL breaks PostgreSQL
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        user, token = super().authenticate_credentials(key)
        if api_tokens.is_expired(token):
            raise exceptions.AuthenticationFailed(
                _(
                    "This API token expired on %(when)s. "
                    "Get a new one from POST /api/v1/auth/token/ or your settings page."
                )
                % {"when": formats.date_format(api_tokens.expires_at(token), "Y-m-d H:i e")}
            )
        return user, token


class ProducerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].decode(errors="replace") != KEYWORD:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(_("Expected the header Authorization: Producer <token>."))
        token = producer_tokens.authenticate(parts[1].decode(errors="replace"))
        if token is None:
            raise exceptions.AuthenticationFailed(_("Unknown or revoked producer token."))
        return AnonymousUser(), token

    def authenticate_header(self, request) -> str:
        return KEYWORD


class HasProducerToken(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ProducerToken)


class ProducerTokenScheme(OpenApiAuthenticationExtension):
    """How the schema describes the scheme (drf-spectacular finds extensions by subclassing)."""

    target_class = ProducerTokenAuthentication
    name = "producerTokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A producer group's token, issued on the group's page: `Producer <token>`.",
        }

"""How API callers authenticate besides the login session: people with their personal token
(``Authorization: Token <key>``, which expires; :mod:`portal.services.api_tokens`) and SDK clients with their
producer group's token (``Authorization: Producer <token>``) or consumer group's token (``Authorization: Consumer
<token>``).

Users never authenticate with a client token, and client tokens authenticate nothing else: the report
endpoints accept only their scheme, so a request without it is answered 401 with ``WWW-Authenticate: Producer``
(or ``Consumer``). The
token becomes ``request.auth`` (the user stays anonymous); :class:`HasProducerToken` requires it.
"""

from django.contrib.auth.models import AnonymousUser
from django.utils import formats
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission

from portal.models import ConsumerToken, ProducerToken
from portal.models.client_tokens import ClientToken
from portal.services import api_tokens, consumer_tokens, producer_tokens

KEYWORD = "Producer"
CONSUMER_KEYWORD = "Consumer"


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


class _ClientTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: <keyword> <token>`` for one kind of client token (the subclasses below)."""

    keyword = ""
    authenticate_token = staticmethod(lambda secret: None)

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].decode(errors="replace") != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                _("Expected the header Authorization: %(keyword)s <token>.") % {"keyword": self.keyword}
            )
        token = self.authenticate_token(parts[1].decode(errors="replace"))
        if token is None:
            raise exceptions.AuthenticationFailed(
                _("Unknown or revoked %(kind)s token.") % {"kind": self.keyword.lower()}
            )
        return AnonymousUser(), token

    def authenticate_header(self, request) -> str:
        return self.keyword


class ProducerTokenAuthentication(_ClientTokenAuthentication):
    keyword = KEYWORD
    authenticate_token = staticmethod(producer_tokens.authenticate)


class ConsumerTokenAuthentication(_ClientTokenAuthentication):
    keyword = CONSUMER_KEYWORD
    authenticate_token = staticmethod(consumer_tokens.authenticate)


class HasProducerToken(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ProducerToken)


class HasConsumerToken(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ConsumerToken)


class HasClientToken(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ClientToken)


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


class ConsumerTokenScheme(OpenApiAuthenticationExtension):
    target_class = ConsumerTokenAuthentication
    name = "consumerTokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A consumer group's token, issued on the group's page: `Consumer <token>`.",
        }

"""A user's personal API token: obtained with username and password (the login throttle applies), rotated and
revoked by its owner. The rules (lifetime, revocation on password change) are in :mod:`portal.services.api_tokens`.
"""

import datetime as dt

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.services import api_tokens


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(source="key")
    expires_at = serializers.SerializerMethodField()

    def get_expires_at(self, token) -> dt.datetime:
        return serializers.DateTimeField().to_representation(api_tokens.expires_at(token))


def _rendered(token, status_code=status.HTTP_200_OK) -> Response:
    return Response(TokenSerializer(token).data, status=status_code)


class TokenView(ObtainAuthToken):
    """POST username and password for your token (the live one, or a new one once it expired); DELETE revokes it."""

    # DRF's view opts out of throttling and uses its own parsers; the API's defaults apply here as everywhere.
    throttle_classes = APIView.throttle_classes
    parser_classes = APIView.parser_classes

    def get_permissions(self):
        return [IsAuthenticated()] if self.request.method == "DELETE" else []

    @extend_schema(request=ObtainAuthToken.serializer_class, responses={200: TokenSerializer})
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # django-axes marks the request it authenticated, DRF's; its middleware, which answers a locked-out login
            # with 429 (portal/web/lockout.py), looks at Django's.
            request._request.axes_locked_out = getattr(request, "axes_locked_out", False)
            raise serializers.ValidationError(serializer.errors)
        return _rendered(api_tokens.obtain(serializer.validated_data["user"]))

    @extend_schema(responses={204: None})
    def delete(self, request, *args, **kwargs):
        api_tokens.revoke(request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenRotateView(APIView):
    """A new token at once; the one you had stops working."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={201: TokenSerializer})
    def post(self, request):
        return _rendered(api_tokens.rotate(request.user), status.HTTP_201_CREATED)

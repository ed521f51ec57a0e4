"""How the services' exceptions reach an API client.

The services raise Django's ``ValidationError`` (keyed by field), ``PermissionDenied``, ``InvalidTransition`` and
``ClusterOperationError``; DRF knows only the second. :class:`ServiceErrorsMixin` gives every viewset one mapping:
field errors -> 400 with field keys, a decision on an application that is no longer pending -> 409, a cluster that
did not do what it was asked -> 502 with the message (nothing was recorded, so the client may retry).
"""

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, status
from rest_framework.settings import api_settings

from portal.services.applications import InvalidTransition
from portal.services.cluster_ops import ClusterOperationError


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = _("The request conflicts with the current state of the resource.")
    default_code = "conflict"


class ClusterUnavailable(exceptions.APIException):
    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = _("The cluster did not complete the operation.")
    default_code = "cluster_error"


def field_errors(error: DjangoValidationError, *, nest_under: str = "", top_level=frozenset()) -> dict | list:
    """A Django ValidationError as DRF's error body. ``__all__`` becomes ``non_field_errors``; with ``nest_under``,
    keys that are not in ``top_level`` go into a nested object under that key (an application's payload fields)."""
    if not hasattr(error, "error_dict"):
        return {api_settings.NON_FIELD_ERRORS_KEY: error.messages}
    body: dict = {}
    for key, messages in error.message_dict.items():
        if key == NON_FIELD_ERRORS:
            body[api_settings.NON_FIELD_ERRORS_KEY] = messages
        elif nest_under and key not in top_level:
            body.setdefault(nest_under, {})[key] = messages
        else:
            body[key] = messages
    return body


class ServiceErrorsMixin:
    """For viewsets that call services. Override :meth:`validation_error_body` to shape field errors."""

    def validation_error_body(self, error: DjangoValidationError) -> dict | list:
        return field_errors(error)

    def handle_exception(self, exc):
        if isinstance(exc, DjangoValidationError):
            exc = exceptions.ValidationError(self.validation_error_body(exc))
        elif isinstance(exc, InvalidTransition):
            exc = Conflict(str(exc))
        elif isinstance(exc, ClusterOperationError):
            exc = ClusterUnavailable(str(exc))
        return super().handle_exception(exc)

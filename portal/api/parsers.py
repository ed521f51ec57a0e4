"""The API's JSON parser (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``). DRF's own lets a deeply nested body crash
the json module with a RecursionError (a 500), and reads every JSON body through ``request.body``, so that one
limit, ``DATA_UPLOAD_MAX_MEMORY_SIZE``, holds for all of them (answered with a bare 400). This one reads the stream
itself, at most the view's ``max_body_size`` bytes (``DATA_UPLOAD_MAX_MEMORY_SIZE`` unless the view says otherwise:
producers' batches are larger; 413 beyond), and parses with :func:`portal.inputs.loads_json` (depth capped, no
NaN, no lone surrogates; 400 otherwise). It is not a subclass of DRF's ``JSONParser``, which DRF would feed from
``request.body``."""

from django.conf import settings
from django.utils.translation import gettext_lazy as _
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import JSONRenderer

from portal.inputs import loads_json


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = _("The request body is too large.")
    default_code = "too_large"


class BoundedJSONParser(BaseParser):
    media_type = "application/json"
    renderer_class = JSONRenderer  # the browsable API's raw-data form, as for DRF's parser

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = getattr(parser_context.get("view"), "max_body_size", settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        raw = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(raw) > limit:
            raise RequestTooLarge(_("The request body is larger than %(limit)d bytes.") % {"limit": limit})
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            return loads_json(raw.decode(encoding))
        except ValueError as error:
            raise ParseError(f"JSON parse error - {error}") from None  # as DRF's parser says it

"""The shape every API write takes: parse the request with an input serializer, call a service, render the result
with the viewset's output serializer."""

from rest_framework import status, viewsets
from rest_framework.response import Response

from portal.api.errors import ServiceErrorsMixin


class ServiceViewSet(ServiceErrorsMixin, viewsets.GenericViewSet):
    def validated(self, serializer_class) -> dict:
        """The request body checked by ``serializer_class`` (400 with field errors otherwise)."""
        serializer = serializer_class(data=self.request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def rendered(self, obj, status_code: int = status.HTTP_200_OK) -> Response:
        """``obj`` as the viewset renders it, read again through ``get_queryset`` so relations are fresh."""
        fresh = self.get_queryset().get(pk=obj.pk)
        return Response(self.get_serializer(fresh).data, status=status_code)

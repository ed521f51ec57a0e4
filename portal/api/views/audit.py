"""The audit log, for portal admins only."""

from rest_framework import viewsets
from rest_framework.permissions import IsAuthenticated

from portal.api.permissions import IsPortalAdmin
from portal.api.serializers import AuditEntrySerializer
from portal.filters import AuditEntryFilterSet
from portal.models import AuditEntry


class AuditEntryViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = AuditEntry.objects.all()
    serializer_class = AuditEntrySerializer
    permission_classes = [IsAuthenticated, IsPortalAdmin]
    filterset_class = AuditEntryFilterSet
    ordering_fields = ["created_at", "action", "object_type"]

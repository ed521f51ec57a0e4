"""Writing probe rounds: one upsert per round, keyed by (name server or broker, minute), so a round run twice in a
minute keeps the later answer."""

from django.db import transaction

from stats.models import BrokerProbe, NameServerProbe

_BROKER_KEY = ("id", "cluster_id", "broker_name", "broker_id", "minute")


def store_probes(name_servers: list[NameServerProbe], brokers: list[BrokerProbe]) -> None:
    """Upsert one probe round (name servers and brokers of a cluster, one minute)."""
    with transaction.atomic():
        NameServerProbe.objects.bulk_create(
            name_servers,
            update_conflicts=True,
            unique_fields=["cluster_id", "address", "minute"],
            update_fields=["ok", "latency_ms", "attempts", "error"],
        )
        BrokerProbe.objects.bulk_create(
            brokers,
            update_conflicts=True,
            unique_fields=["cluster_id", "broker_name", "broker_id", "minute"],
            update_fields=[f.name for f in BrokerProbe._meta.concrete_fields if f.name not in _BROKER_KEY],
        )

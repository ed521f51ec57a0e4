"""A registered RocketMQ cluster: the name servers the portal talks to, and the brokers it discovered there."""

from django.db import models
from django.utils.translation import gettext_lazy as _

from portal.models.crypto import EncryptedTextField
from portal.models.validation import TRACE_TOPIC, validate_trace_topic_name


class Cluster(models.Model):
    """One RocketMQ deployment reached through its name servers. ``name`` is the portal's name for it; the
    RocketMQ cluster name(s) its brokers report are kept on each Broker."""

    name = models.CharField(_("name"), max_length=64, unique=True)
    description = models.TextField(_("description"), blank=True)
    acl_access_key = models.CharField(_("ACL access key"), max_length=128, blank=True)
    acl_secret_key = EncryptedTextField(_("ACL secret key"), blank=True)
    # Where this cluster's tracing clients write their trace records; the message pages read traces from it.
    trace_topic = models.CharField(
        _("trace topic"),
        max_length=127,
        default=TRACE_TOPIC,
        validators=[validate_trace_topic_name],
        help_text=_(
            "The topic tracing clients write to: RMQ_SYS_TRACE_TOPIC, or the custom trace topic they are given."
        ),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_synced_at = models.DateTimeField(_("last synced at"), null=True, blank=True)
    last_sync_error = models.TextField(_("last sync error"), blank=True)
    # The registry sync's lease: set while a sync of this cluster runs, so a second one (another worker, a click on
    # "sync now") backs off instead of importing the same names twice; a lease older than the sync's maximum run
    # time belongs to a sync that died and may be taken over.
    sync_started_at = models.DateTimeField(_("sync started at"), null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")

    def __str__(self) -> str:
        return self.name

    @property
    def acl_enabled(self) -> bool:
        return bool(self.acl_access_key)

    @property
    def namesrv_addr(self) -> str:
        """The name-server list the way RocketMQ clients take it: ``host:port;host:port``."""
        return ";".join(ns.address for ns in self.name_servers.all())


class NameServer(models.Model):
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="name_servers")
    address = models.CharField(_("address"), max_length=255, help_text=_("host:port"))

    class Meta:
        ordering = ["address"]
        constraints = [models.UniqueConstraint(fields=["cluster", "address"], name="nameserver_unique_address")]
        verbose_name = _("name server")
        verbose_name_plural = _("name servers")

    def __str__(self) -> str:
        return self.address


class BrokerRole(models.TextChoices):
    ASYNC_MASTER = "ASYNC_MASTER", _("async master")
    SYNC_MASTER = "SYNC_MASTER", _("sync master")
    SLAVE = "SLAVE", _("slave")


class Broker(models.Model):
    """A broker as the name server reports it (discovered, never typed by hand). Broker id 0 is the master of its
    broker name; the role and version come from the broker's own runtime info."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="brokers")
    cluster_name = models.CharField(_("RocketMQ cluster name"), max_length=255)
    broker_name = models.CharField(_("broker name"), max_length=255)
    broker_id = models.PositiveIntegerField(_("broker id"))
    address = models.CharField(_("address"), max_length=255)
    role = models.CharField(_("role"), max_length=16, choices=BrokerRole.choices, blank=True)
    version = models.CharField(_("version"), max_length=64, blank=True)
    present = models.BooleanField(_("present in the cluster"), default=True)
    last_seen_at = models.DateTimeField(_("last seen at"), null=True, blank=True)

    class Meta:
        ordering = ["broker_name", "broker_id"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "broker_name", "broker_id"], name="broker_unique_name_id")
        ]
        verbose_name = _("broker")
        verbose_name_plural = _("brokers")

    def __str__(self) -> str:
        return f"{self.broker_name}[{self.broker_id}] {self.address}"

    @property
    def is_master(self) -> bool:
        return self.broker_id == 0

    @property
    def host(self) -> str:
        """The machine the broker runs on, from its ``ip:port`` (``[v6]:port`` too): what server stats are kept
        by."""
        return self.address.rpartition(":")[0].strip("[]") or self.address

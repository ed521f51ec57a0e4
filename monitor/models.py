"""What monitoring needs beyond the registry: how to log in to a cluster's servers, and the host keys it trusts."""

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from monitor.ssh import load_private_key
from portal.models import Cluster
from portal.models.crypto import EncryptedTextField


class ServerAccess(models.Model):
    """The SSH login used to read server stats on the hosts of a cluster's brokers (one account for all of them, as
    operations teams deploy it). The private key is encrypted at rest and never shown back; give the account no
    more than a login shell, and optionally pin the collector's fixed command in ``authorized_keys``
    (``restrict,command="..."`` with :data:`monitor.collect.procfs.SERVER_COMMAND`)."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="server_access")
    username = models.CharField(
        _("SSH user"),
        max_length=32,
        validators=[RegexValidator(r"^[A-Za-z_][A-Za-z0-9_.-]*$", _("Enter a valid user name."))],
    )
    port = models.PositiveIntegerField(
        _("SSH port"), default=22, validators=[MinValueValidator(1), MaxValueValidator(65535)]
    )
    private_key = EncryptedTextField(
        _("private key"), help_text=_("OpenSSH or PEM format, without a passphrase. It is never shown again.")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("server access")
        verbose_name_plural = _("server accesses")

    def __str__(self) -> str:
        return f"{self.cluster}: {self.username}, port {self.port}"

    def clean(self) -> None:
        if self.private_key:
            try:
                load_private_key(self.private_key)
            except ValueError as exc:
                raise ValidationError({"private_key": str(exc)}) from None


class PinnedHostKey(models.Model):
    """The host key a server showed the first time it was collected (trust on first use). A server showing any
    other key is refused until an administrator deletes this row, after which the next collection pins anew."""

    host = models.CharField(_("host"), max_length=255)
    port = models.PositiveIntegerField(_("port"))
    key_type = models.CharField(_("key type"), max_length=64)
    public_key = models.TextField(_("public key"), help_text=_("base64, as in known_hosts"))
    fingerprint = models.CharField(_("fingerprint"), max_length=100)
    first_seen_at = models.DateTimeField(_("first seen at"), auto_now_add=True)

    class Meta:
        ordering = ["host", "port"]
        constraints = [models.UniqueConstraint(fields=["host", "port"], name="pinnedhostkey_unique_host_port")]
        verbose_name = _("pinned host key")
        verbose_name_plural = _("pinned host keys")

    def __str__(self) -> str:
        return f"{self.host}:{self.port} {self.key_type} {self.fingerprint}"


# --- per-minute collection of a cluster (monitor.collect.traffic) ---------------------------------------------------


class CollectionState(models.Model):
    """The per-minute collector's lease and memory for one cluster.

    ``started_at`` is the lease: set by a conditional UPDATE when a collection starts and cleared when it ends, so
    a second collection of the cluster (a duplicated or late beat, another worker) finds it taken and does nothing;
    a lease older than the longest a collection may run belongs to a collector that died and is taken over.
    ``memory`` is what the collector needs from the cycles before (see :mod:`monitor.collect.memory`): the offsets
    and counters that prove a stats key idle, the stats keys the brokers said do not exist, and the read position
    in each OFFSET_MOVED_EVENT queue. It is written only by the lease holder."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="collection_state")
    started_at = models.DateTimeField(null=True, editable=False)
    finished_at = models.DateTimeField(null=True, editable=False)
    last_error = models.TextField(blank=True)
    memory = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"collection of {self.cluster}"

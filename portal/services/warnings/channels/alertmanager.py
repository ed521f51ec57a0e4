"""The Prometheus Alertmanager channel: each warning event posted to an existing Alertmanager's ``/api/v2/alerts``,
so teams that route alerts there (silences, inhibition, on-call receivers) get the portal's warnings the same way.

A warning is one alert, identified by its labels: ``alertname`` (``MQCloudWarning`` + the kind in CamelCase, as the
shipped Prometheus rules name the warning types), ``kind``, ``severity``, ``cluster``, ``subject_type``,
``subject`` and, when the warning is about one topic, ``topic``. Several users posting the same warning to one
Alertmanager post the same alert (Alertmanager merges them). Fired and repeated events post it firing since the
warning opened (``startsAt``); a resolved one posts ``endsAt`` = when it was resolved.

Alertmanager resolves a firing alert by itself when it is not posted again before its ``endsAt`` (absent: its
``resolve_timeout``, five minutes by default). The portal posts a warning only at its transitions (repeats at most
every ``repeat_seconds``, up to 7 days, none once acknowledged), so a firing alert carries ``endsAt`` =
:data:`FIRING_FOR` ahead: longer than any repeat interval; the resolution ends it sooner.

``url``: the Alertmanager's address (``http://alertmanager:9093``, with any path prefix it is served under; the
API path is added); ``secret`` (optional): a bearer token for a proxy in front of it. Posted through
``portal.services.outbound`` like every webhook (internal addresses refused unless ``WEBHOOK_ALLOWED_NETWORKS``
names them)."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from portal.models.warnings import ChannelKind, Transition
from portal.services.warnings.channels.base import Message, Transport, host_of, post_json, validate_webhook_url

API_PATH = "/api/v2/alerts"
# How long a posted firing alert lasts in Alertmanager without being posted again (see the module docstring).
FIRING_FOR = dt.timedelta(days=8)
MAX_TOKEN_LENGTH = 4096


def alerts_url(url: str) -> str:
    """The alerts endpoint under the Alertmanager's address (kept as is when it already names it)."""
    base = url.rstrip("/")
    return base if base.endswith(API_PATH) else base + API_PATH


def alertname(kind: str) -> str:
    return "MQCloudWarning" + "".join(word.capitalize() for word in kind.split("_"))


def alert(payload: dict, now: dt.datetime) -> dict:
    """The postable alert of one event, from the generic webhook's document (``Message.payload``)."""
    warning, event = payload["warning"], payload["event"]
    labels = {
        "alertname": alertname(warning["kind"]),
        "kind": warning["kind"],
        "severity": warning["severity"],
        "cluster": warning["cluster"],
        "subject_type": warning["subject_type"],
        "subject": warning["subject_name"],
    }
    if warning["topic"]:
        labels["topic"] = warning["topic"]
    annotations = {"summary": warning["summary"], "kind_label": warning["kind_label"]}
    if event["transition"] == Transition.RESOLVED:
        ends = warning["resolved_at"] or event["at"]
    else:
        ends = (now + FIRING_FOR).astimezone(dt.UTC).isoformat()
    document = {"labels": labels, "annotations": annotations, "startsAt": warning["opened_at"], "endsAt": ends}
    if warning["url"].startswith(("http://", "https://")):
        document["generatorURL"] = warning["url"]
        annotations["url"] = warning["url"]
    return document


class AlertmanagerTransport(Transport):
    kind = ChannelKind.ALERTMANAGER
    config_fields = ("url", "secret")

    def clean_config(self, config: dict) -> dict:
        super().clean_config(config)
        token = config.get("secret") or ""
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or any(ch.isspace() for ch in token):
            raise ValidationError({"secret": _("Enter the bearer token exactly as issued, or nothing.")})
        return {"url": validate_webhook_url(config.get("url")), "secret": token}

    def describe(self, config: dict) -> str:
        return host_of(config["url"]) if config.get("url") else ""

    def notify(self, channel, config: dict, message: Message) -> None:
        """Alertmanager answers 200 with an empty body; 400 (an alert it refuses) is permanent, 5xx transient."""
        headers = {"Authorization": f"Bearer {config['secret']}"} if config.get("secret") else None
        post_json(alerts_url(config["url"]), [alert(message.payload, timezone.now())], headers=headers)

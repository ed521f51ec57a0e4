"""What every transport shares: the message it is given, the error it raises, config validation and HTTP posting
(through ``portal.services.outbound``: errors say what went wrong but never quote what the endpoint answered)."""

from __future__ import annotations

import abc
import dataclasses
import http
import json
import urllib.parse

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from portal.services import outbound

# Longest webhook URL accepted (DingTalk and WeCom tokens make URLs of about 150 characters).
MAX_URL_LENGTH = 2000
# HTTP statuses after which the same request may succeed later (timeouts, rate limits, server trouble).
_TRANSIENT_STATUSES = {408, 425, 429}


class TransportError(Exception):
    """A delivery failed. ``permanent``: sending again will fail the same way (a revoked webhook, a refused
    address) — the channel is disabled at once. ``blame_channel``: False when the portal's side failed (the SMTP
    server is down), so the failure is not counted against the user's channel."""

    def __init__(self, message: str, *, permanent: bool = False, blame_channel: bool = True):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.blame_channel = blame_channel


@dataclasses.dataclass(frozen=True)
class Message:
    """One notification, rendered for one recipient (in their language); each transport lays it out in its own
    format. ``facts`` are (label, value) lines; ``path`` the portal page (in-app links), ``link`` the same absolute
    (e-mail and webhooks); ``payload`` the generic webhook's JSON document."""

    title: str
    summary: str
    facts: tuple[tuple[str, str], ...]
    path: str
    link: str
    link_label: str
    transition: str
    payload: dict

    @property
    def text(self) -> str:
        lines = [self.summary, "", *(f"{label}: {value}" for label, value in self.facts)]
        if self.link:
            lines += ["", f"{self.link_label}: {self.link}"]
        return "\n".join(lines)

    @property
    def markdown(self) -> str:
        """Markdown as DingTalk and WeCom robots render it: a heading, the summary, bold labels and a link."""
        lines = [f"### {self.title}", "", self.summary, ""]
        lines += [f"- **{label}**: {value}" for label, value in self.facts]
        if self.link:
            lines += ["", f"[{self.link_label}]({self.link})"]
        return "\n".join(lines)


class Transport(abc.ABC):
    """One channel kind. Subclasses set ``kind`` and implement ``notify``; ``clean_config`` validates what the user
    typed (field errors keyed by config key) and returns what is stored."""

    kind: str = ""
    config_fields: tuple[str, ...] = ()

    def clean_config(self, config: dict) -> dict:
        unknown = set(config) - set(self.config_fields)
        if unknown:
            raise ValidationError({name: _("Unknown setting for this channel.") for name in sorted(unknown)})
        return {}

    @abc.abstractmethod
    def notify(self, channel, config: dict, message: Message) -> None:
        """Send ``message``; raise TransportError (saying whether it is permanent) when it could not be sent."""

    def describe(self, config: dict) -> str:
        """What the pages show of the configuration (never a secret or a webhook token)."""
        return ""


def validate_webhook_url(url) -> str:
    """An absolute http(s) URL without credentials in it; raises ValidationError keyed ``url``."""
    if not isinstance(url, str) or not url.strip():
        raise ValidationError({"url": _("Enter the webhook URL.")})
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise ValidationError({"url": _("The URL is too long.")})
    try:
        parts = urllib.parse.urlsplit(url)
        _port = parts.port  # raises ValueError for a port out of range
    except ValueError:
        raise ValidationError({"url": _("Enter a valid URL.")}) from None
    if parts.scheme not in {"http", "https"}:
        raise ValidationError({"url": _("Only http and https URLs are allowed.")})
    if not parts.hostname:
        raise ValidationError({"url": _("Enter a valid URL.")})
    if parts.username is not None or parts.password is not None:
        raise ValidationError({"url": _("Do not put credentials in the URL.")})
    if parts.fragment or any(ch.isspace() for ch in url):
        raise ValidationError({"url": _("Enter a valid URL.")})
    return url


def host_of(url: str) -> str:
    """The scheme and host of a URL, what the pages show of a webhook (its path and query carry the token)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def encode_json(document: dict) -> bytes:
    """The exact bytes ``post_json`` sends for ``document`` (what a signature is computed over)."""
    return json.dumps(document, ensure_ascii=False).encode()


def _status_text(code: int) -> str:
    """``HTTP 404 Not Found``: the standard phrase, not the server's (a status line is the server's text too)."""
    try:
        return f"HTTP {code} {http.HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def post_json(url: str, document: dict, *, headers: dict[str, str] | None = None) -> bytes:
    """POST ``document`` as UTF-8 JSON through ``portal.services.outbound`` (internal addresses refused, no
    redirects, one deadline); returns the 2xx answer's body. Raises TransportError, whose message never quotes the
    answer: permanent for a refused address, a redirect or a 4xx answer (except timeouts and rate limits), transient
    for 5xx, 408/425/429 and network failures."""
    try:
        answer = outbound.post(
            url,
            encode_json(document),
            {"Content-Type": "application/json; charset=utf-8", **(headers or {})},
            timeout=settings.WARNING_WEBHOOK_TIMEOUT,
        )
    except outbound.OutboundError as error:
        raise TransportError(f"cannot reach {host_of(url)}: {error.reason}", permanent=error.permanent) from None
    if 200 <= answer.status < 300:
        return answer.body
    if 300 <= answer.status < 400:
        raise TransportError(
            f"{_status_text(answer.status)}: redirects are not followed; enter the URL it leads to", permanent=True
        )
    permanent = 400 <= answer.status < 500 and answer.status not in _TRANSIENT_STATUSES
    raise TransportError(_status_text(answer.status), permanent=permanent)


def parse_json_answer(raw: bytes) -> dict:
    """A JSON object answer, or a transient TransportError (an endpoint that answers garbage may be a proxy's page
    during an outage)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        raise TransportError("the answer is not JSON") from None
    if not isinstance(answer, dict):
        raise TransportError("the answer is not a JSON object")
    return answer

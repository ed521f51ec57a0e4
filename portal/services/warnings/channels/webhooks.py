"""Webhook transports with ready payload formats: DingTalk and WeCom group robots, Slack incoming webhooks, and a
generic JSON webhook (``payload`` documented in ``portal/services/warnings/messages.py``).

Each validates its URL (http/https, no credentials in it) and keeps the URL and any secret only in the channel's
encrypted configuration; the pages see ``describe()`` (scheme and host), never the token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
import urllib.parse

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from portal.models.warnings import ChannelKind
from portal.services.warnings.channels.base import (
    Message,
    Transport,
    TransportError,
    encode_json,
    host_of,
    parse_json_answer,
    post_json,
    validate_webhook_url,
)

# Longest secret accepted (DingTalk's are 67 characters).
MAX_SECRET_LENGTH = 200
# WeCom rejects markdown content over 4096 bytes; DingTalk and Slack allow more, but a warning never needs it.
MAX_MARKDOWN_BYTES = 4000


def _truncate(text: str, limit: int = MAX_MARKDOWN_BYTES) -> str:
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    return encoded[: limit - 3].decode(errors="ignore") + "..."


class _WebhookTransport(Transport):
    config_fields = ("url",)

    def clean_config(self, config: dict) -> dict:
        super().clean_config(config)
        return {"url": validate_webhook_url(config.get("url"))}

    def describe(self, config: dict) -> str:
        return host_of(config["url"]) if config.get("url") else ""


def _clean_secret(config: dict) -> str:
    secret = config.get("secret") or ""
    if not isinstance(secret, str) or len(secret) > MAX_SECRET_LENGTH or any(ch.isspace() for ch in secret):
        raise ValidationError({"secret": _("Enter the secret exactly as the robot's settings show it.")})
    return secret


class _RobotTransport(_WebhookTransport):
    """DingTalk and WeCom robots answer HTTP 200 with ``{"errcode": 0, "errmsg": "ok"}``; a non-zero errcode is
    permanent (bad token, robot removed, keyword or signature mismatch) except the rate limits and "system busy"
    listed in ``transient_codes``."""

    transient_codes: frozenset[int] = frozenset()

    def check_answer(self, raw: bytes) -> None:
        answer = parse_json_answer(raw)
        code = answer.get("errcode")
        if type(code) is not int or not -(2**31) <= code < 2**31:
            raise TransportError("the answer has no errcode", permanent=True)
        if code == 0:
            return
        # The code alone: errmsg is the endpoint's text, and answers are never quoted back (see outbound).
        raise TransportError(f"the robot answered errcode {code}", permanent=code not in self.transient_codes)


class DingTalkTransport(_RobotTransport):
    """``url``: the robot's webhook (https://oapi.dingtalk.com/robot/send?access_token=...); ``secret``: the
    "加签" secret (SEC...), when the robot has signing on. A markdown message; when signed, ``timestamp`` (ms) and
    ``sign`` = base64(HMAC-SHA256(key=secret, msg=f"{timestamp}\\n{secret}")), URL-encoded, are added to the query
    as DingTalk documents."""

    kind = ChannelKind.DINGTALK
    config_fields = ("url", "secret")
    # -1 system busy; 130101 / 410100 sending too fast (more than 20 messages a minute).
    transient_codes = frozenset({-1, 130101, 410100})

    def clean_config(self, config: dict) -> dict:
        cleaned = super().clean_config({k: v for k, v in config.items() if k != "secret"})
        cleaned["secret"] = _clean_secret(config)
        return cleaned

    @staticmethod
    def signed_url(url: str, secret: str, timestamp_ms: int) -> str:
        string_to_sign = f"{timestamp_ms}\n{secret}".encode()
        digest = hmac.new(secret.encode(), string_to_sign, hashlib.sha256).digest()
        sign = urllib.parse.quote_plus(base64.b64encode(digest))
        separator = "&" if urllib.parse.urlsplit(url).query else "?"
        return f"{url}{separator}timestamp={timestamp_ms}&sign={sign}"

    @staticmethod
    def document(message: Message) -> dict:
        return {"msgtype": "markdown", "markdown": {"title": message.title, "text": _truncate(message.markdown)}}

    def notify(self, channel, config: dict, message: Message) -> None:
        url = config["url"]
        if config.get("secret"):
            url = self.signed_url(url, config["secret"], int(time.time() * 1000))
        self.check_answer(post_json(url, self.document(message)))


class WeComTransport(_RobotTransport):
    """``url``: the group robot's webhook (https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=...). A markdown
    message (``content`` at most 4096 bytes)."""

    kind = ChannelKind.WECOM
    # -1 system busy; 45009 / 45033 over the frequency limit.
    transient_codes = frozenset({-1, 45009, 45033})

    @staticmethod
    def document(message: Message) -> dict:
        return {"msgtype": "markdown", "markdown": {"content": _truncate(message.markdown)}}

    def notify(self, channel, config: dict, message: Message) -> None:
        self.check_answer(post_json(config["url"], self.document(message)))


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackTransport(_WebhookTransport):
    """``url``: an incoming webhook (https://hooks.slack.com/services/...). ``text`` (the notification's fallback)
    plus Block Kit blocks: a header, the summary, the facts as fields, and the link. Slack answers ``ok``; errors
    come as HTTP statuses (403/404/410 permanent: token revoked, channel gone or archived)."""

    kind = ChannelKind.SLACK

    @staticmethod
    def document(message: Message) -> dict:
        blocks: list[dict] = [
            {"type": "header", "text": {"type": "plain_text", "text": message.title[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": _slack_escape(message.summary)[:3000]}},
        ]
        if message.facts:
            fields = [
                {"type": "mrkdwn", "text": f"*{_slack_escape(label)}*\n{_slack_escape(value)}"}
                for label, value in message.facts[:10]
            ]
            blocks.append({"type": "section", "fields": fields})
        if message.link:
            blocks.append(
                {"type": "context", "elements": [{"type": "mrkdwn", "text": f"<{message.link}|{message.link_label}>"}]}
            )
        return {"text": f"{message.title}: {message.summary}"[:3000], "blocks": blocks}

    def notify(self, channel, config: dict, message: Message) -> None:
        raw = post_json(config["url"], self.document(message))
        if raw.strip() != b"ok":
            raise TransportError('the answer is not "ok"')


class GenericWebhookTransport(_WebhookTransport):
    """``url``: any endpoint taking a JSON POST; ``secret`` (optional): signs each request with the headers
    ``X-MQCloud-Timestamp`` (Unix seconds) and ``X-MQCloud-Signature`` = ``sha256=`` + hex HMAC-SHA256(key=secret,
    msg=f"{timestamp}.{body}"). ``X-MQCloud-Event`` names the transition. Any 2xx answer is success; other 4xx
    answers (but 408/425/429) are permanent."""

    kind = ChannelKind.WEBHOOK
    config_fields = ("url", "secret")

    def clean_config(self, config: dict) -> dict:
        cleaned = super().clean_config({k: v for k, v in config.items() if k != "secret"})
        cleaned["secret"] = _clean_secret(config)
        return cleaned

    @staticmethod
    def signature(secret: str, timestamp: int, body: bytes) -> str:
        digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
        return f"sha256={digest}"

    def notify(self, channel, config: dict, message: Message) -> None:
        headers = {"X-MQCloud-Event": message.transition}
        if config.get("secret"):
            timestamp = int(time.time())
            body = encode_json(message.payload)
            headers["X-MQCloud-Timestamp"] = str(timestamp)
            headers["X-MQCloud-Signature"] = self.signature(config["secret"], timestamp, body)
        post_json(config["url"], message.payload, headers=headers)

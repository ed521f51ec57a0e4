"""In-app: the portal's notification center (the header's unread count)."""

from __future__ import annotations

from portal.models.warnings import ChannelKind
from portal.services import notifications
from portal.services.warnings.channels.base import Message, Transport


class InAppTransport(Transport):
    kind = ChannelKind.IN_APP

    def notify(self, channel, config: dict, message: Message) -> None:
        notifications.notify(channel.owner, message.title, body=message.text, link=message.path)

"""Bootstrap from the portal: an SDK client needs only the portal's URL, its group and the group's token; the
portal's ``GET /api/v1/client-bootstrap/`` answers with the cluster's name server addresses and the group's client
settings (for a consumer group its subscriptions and consumption throttle). The first answer is read when the client
starts (it cannot start without name servers); a daemon thread then reads it again every ``refresh_seconds`` (one
minute) and hands each changed answer to the client, so a throttle set in the portal applies within a minute. A
portal that does not answer later keeps the last settings in force (logged, retried next minute)."""

from __future__ import annotations

import logging
import threading
import urllib.parse
from collections.abc import Callable

from monitor.sdk.portal_client import PortalClient, Rejected, TooLarge, Transient

log = logging.getLogger("monitor.sdk")

BOOTSTRAP_PATH = "/api/v1/client-bootstrap/"
DEFAULT_REFRESH = 60.0


class BootstrapFailed(Exception):
    """The portal did not give the starting client its settings."""


class Bootstrap:
    def __init__(self, portal: PortalClient, *, client_id: str = "", refresh: float | None = None):
        self._portal = portal
        self._client_id = client_id
        self._refresh = refresh
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.settings: dict = {}
        self.reads = 0  # answers read, the first included

    def fetch(self) -> dict:
        """Read the settings now (at start): :class:`BootstrapFailed` if the portal does not answer them."""
        try:
            self.settings = self._read()
        except (Transient, Rejected, TooLarge) as error:
            raise BootstrapFailed(
                f"could not read the client settings from the portal at {self._portal.base}: {error}"
            ) from None
        return self.settings

    def follow(self, on_change: Callable[[dict, dict], None], client_id: str = "") -> None:
        """Read again every refresh and call ``on_change(old, new)`` when the answer changed."""
        self._client_id = client_id or self._client_id
        self._thread = threading.Thread(target=self._run, args=(on_change,), name="mqcloud-sdk-bootstrap", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(5.0)

    @property
    def interval(self) -> float:
        return self._refresh or float(self.settings.get("refresh_seconds") or DEFAULT_REFRESH)

    def _read(self) -> dict:
        query = urllib.parse.urlencode({"client_id": self._client_id}) if self._client_id else ""
        answer = self._portal.request("GET", BOOTSTRAP_PATH + (f"?{query}" if query else ""))
        self.reads += 1
        return answer

    def _run(self, on_change: Callable[[dict, dict], None]) -> None:
        while not self._stopped.wait(self.interval):
            try:
                settings = self._read()
            except (Transient, Rejected, TooLarge) as error:
                log.warning("could not re-read the client settings from %s (%s); keeping the last", self._portal.base,
                            error)  # fmt: skip
                continue
            if settings == self.settings:
                continue
            old, self.settings = self.settings, settings
            try:
                on_change(old, settings)
            except Exception:  # applying settings must not end following them
                log.exception("applying the portal's new client settings failed")

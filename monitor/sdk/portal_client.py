"""The SDK's HTTP calls to the portal's API with a group's token (``Authorization: Producer <token>`` or
``Consumer <token>``), and what their failures mean for the caller: come back later (:class:`Transient`: network
errors, timeouts, 429, 5xx, a token file not readable yet), send less at once (:class:`TooLarge`: 413), or give up
on this request (:class:`Rejected`: any other 4xx, with the portal's JSON answer). Plain ``urllib``: the SDK carries
no HTTP library of its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

REQUEST_TIMEOUT = 10.0


class Transient(Exception):
    """The portal could not be reached or asked us to come back later."""


class TooLarge(Exception):
    """The portal refused the request's size (413): the same reports, sent in smaller batches, are accepted."""


class Rejected(Exception):
    """The portal refused the request: retrying it would fail the same way. ``details``: its JSON answer."""

    def __init__(self, message: str, details: object = None):
        super().__init__(message)
        self.details = details


class PortalClient:
    """Requests to one portal with one token (or a file holding it, read at every request so it may be mounted or
    rotated later), under the token's scheme (``Producer`` or ``Consumer``)."""

    def __init__(
        self,
        portal_url: str,
        *,
        scheme: str,
        token: str | None = None,
        token_file: Path | None = None,
        request_timeout: float = REQUEST_TIMEOUT,
    ):
        if (token is None) == (token_file is None):
            raise ValueError("give the portal client a token or a token file")
        self.base = portal_url.rstrip("/")
        self._scheme = scheme
        self._token = token
        self._token_file = token_file
        self.request_timeout = request_timeout

    def _read_token(self) -> str:
        if self._token_file is None:
            return self._token
        try:
            token = self._token_file.read_text().strip()
        except OSError as error:
            raise Transient(f"cannot read the token file {self._token_file}: {error.strerror}") from None
        if not token:
            raise Transient(f"the token file {self._token_file} is empty")
        return token

    def request(self, method: str, path: str, body: dict | None = None, *, timeout: float | None = None) -> dict:
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        headers = {"Authorization": f"{self._scheme} {self._read_token()}", "Content-Type": "application/json"}
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.request_timeout) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            text = error.read()[:2000].decode(errors="replace")
            if error.code == 429 or error.code >= 500:
                raise Transient(f"HTTP {error.code}") from None
            if error.code == 413:
                raise TooLarge() from None
            try:
                details = json.loads(text)
            except ValueError:
                details = None
            raise Rejected(f"HTTP {error.code}: {text}", details) from None
        except (OSError, ValueError) as error:  # refused, unreachable, timed out, reset, a garbled answer
            raise Transient(str(error) or type(error).__name__) from None

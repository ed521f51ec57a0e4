"""The real captured RocketMQ frames in ../shared/fixtures/rocketmq-4.9 beside the repository, and the one way
tests read them."""

import base64
import json
from functools import cache
from pathlib import Path

from monitor.remoting.command import RemotingCommand, decode_frame, next_opaque

FIXTURES_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "rocketmq-4.9"


@cache
def _captured_text(name: str) -> str:
    return (FIXTURES_DIR / f"{name}.json").read_text()


def captured(name: str) -> dict:
    """One capture file as a fresh dict (callers may change it)."""
    return json.loads(_captured_text(name))


def captured_frame(name: str, side: str = "response") -> bytes:
    """The whole captured frame of one side ("request" or "response"), bytes exactly as sent."""
    return base64.b64decode(captured(name)[side]["frame_b64"])


def captured_request(name: str) -> RemotingCommand:
    """The captured request, with a fresh opaque so it can be sent again."""
    cmd = decode_frame(captured_frame(name, "request"))
    cmd.opaque = next_opaque()
    return cmd


def captured_response(name: str) -> RemotingCommand:
    return decode_frame(captured_frame(name))

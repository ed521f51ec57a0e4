"""Message properties as 4.9.4's broker stores them (HashMap order, CLUSTER added, WAIT dropped) and the tag hash
codes the consume queues keep and a pull's TAG expression is matched against."""

from functools import lru_cache

from monitor.remoting.javahash import java_hashmap_order, java_string_hash
from monitor.remoting.message import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, decode_properties

_JAVA_WHITESPACE = "".join(chr(c) for c in range(33))  # what String.trim() strips
_CLUSTER = "CLUSTER"
_WAIT = "WAIT"


def _join_properties(properties: dict[str, str], peak_size: int) -> str:
    order = java_hashmap_order(properties, peak_size=peak_size)
    return PROPERTY_SEPARATOR.join(f"{name}{NAME_VALUE_SEPARATOR}{properties[name]}" for name in order)


def java_properties_string(properties: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String of a HashMap filled in `properties`' order.

    The broker writes every message it builds itself (a sent-back retry, a delayed message, a property it adds)
    through this, so stored properties come out in hash order, not in the order the client sent them.
    """
    return _join_properties(properties, len(properties))


def stored_properties(sent: str, cluster_name: str, *, batch: bool = False) -> str:
    """The properties string 4.9.4's SendMessageProcessor stores for a SEND_MESSAGE(_V2) header's properties.

    It parses them into a HashMap (string2messageProperties), adds CLUSTER, and, for a single message, drops WAIT
    ("no need to store WAIT=true") before writing the map back, so the fixtures show `KEYS, UNIQ_KEY, CLUSTER, TAGS`
    for a client that sent `KEYS, UNIQ_KEY, WAIT, TAGS`. For a batch (batch=true) these are the batch header's
    properties, WAIT included, which the store appends to every message's own properties.
    """
    properties = decode_properties(sent)
    peak_size = len(properties) + (_CLUSTER not in properties)
    properties[_CLUSTER] = cluster_name
    if not batch:
        properties.pop(_WAIT, None)
    return _join_properties(properties, peak_size)


@lru_cache(maxsize=256)
def tag_codes(expression: str | None) -> frozenset[int] | None:
    """The code set FilterAPI.buildSubscriptionData makes of a TAG expression; None means "match everything"."""
    if expression is None or expression in ("", "*"):
        return None
    tags = (tag.strip(_JAVA_WHITESPACE) for tag in expression.split("||"))
    return frozenset(java_string_hash(tag) for tag in tags if tag)


def tags_code(properties: dict[str, str]) -> int:
    """The consume-queue tags code: TAGS' Java hash code, 0 without tags (CommitLog.checkMessageAndReturnSize)."""
    tags = properties.get("TAGS")
    return java_string_hash(tags) if tags else 0

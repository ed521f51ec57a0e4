"""Trace record decoding: records per second monitor.trace.records decodes from trace message bodies, as the
trace reader does for every trace message a key query returns.

The body mix is the real Java producer's captured trace message (502 Pub records, tests/fixtures) and one of the
same size written here as a consumer's dispatcher writes them (SubBefore and SubAfter pairs, 4.9.4 layout).
"""

from __future__ import annotations

import time
import zlib

from monitor.trace.records import CONTENT_SPLITOR, FIELD_SPLITOR, decode_body
from tests.fixtures import captured_request

SECONDS = 2.0


def _consume_body(pairs: int) -> bytes:
    records = []
    for n in range(pairs):
        msg_id, request_id = f"7F0000016CA35FFD2B276C5640FE{n:04X}", f"7F0000016CA35FFD2B276C5650AA{n:04X}"
        before = ["SubBefore", 1795308793000 + n, "DefaultRegion", "cg_test", request_id, msg_id, 0, f"KEY_java_{n}"]
        after = ["SubAfter", request_id, msg_id, 3, "true", f"KEY_java_{n}", 0, 1795308793003 + n, "cg_test"]
        records += [CONTENT_SPLITOR.join(map(str, before)), CONTENT_SPLITOR.join(map(str, after))]
    return (FIELD_SPLITOR.join(records) + FIELD_SPLITOR).encode()


def run() -> dict[str, float]:
    bodies = [zlib.decompress(captured_request("SEND_MESSAGE_V2_trace_record").body), _consume_body(251)]
    decoded = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < SECONDS:
        for body in bodies:
            decoded += len(decode_body(body))
    return {"trace_decode_per_s": decoded / elapsed}

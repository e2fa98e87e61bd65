"""Gradient-summary serving bookkeeping: the sealed summaries a node holds for peers to fetch.

A summary never sits in the DHT: a node announces the id of its newest one (a few hundred
bytes under swarmnode/<swarm>/summaries/<window>) and peers with the same base fetch it by id
over a direct libp2p request on SUMMARY_PROTOCOL, one summary per response (its size cap is
chosen to fit p2pd's message cap: codec.MAX_BODY_BYTES). No I/O here; the node's loops move
the bytes.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from swarmnode.protocol.codec import MessageKind, max_envelope_bytes
from swarmnode.protocol.generated import gradient_summary_pb2

SUMMARY_PROTOCOL = "swarmnode/v1/summaries"
MAX_SUMMARY_FETCH_REQUEST_BYTES = 32  # a uint64 and a bool field: at most 13 bytes
# A response is one sealed envelope plus its field's tag and length (at most 6 bytes).
MAX_SUMMARY_FETCH_RESPONSE_BYTES = max_envelope_bytes(MessageKind.GRADIENT_SUMMARY) + 16


class SummaryOutbox:
    """This node's last `capacity` sealed summaries by summary_id (thread-safe), served to fetching peers.

    Kept as sealed bytes: a fetch costs a dictionary lookup, never a re-serialisation or a
    signature. A summary may be held in two codings: the announced one (size_bytes; offsets
    gap-coded), served to peers whose request says they read it, and the older one, served to
    the rest (nodes of an earlier release).
    """

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("an outbox holds at least one summary")
        self._capacity = capacity
        self._summaries: OrderedDict[int, tuple[bytes, bytes]] = OrderedDict()  # id -> (announced, older)
        self._lock = threading.Lock()
        self.summaries_served = 0
        self.bytes_served = 0

    def add(self, summary_id: int, envelope: bytes, older: bytes | None = None) -> None:
        """Hold a sealed summary (the oldest goes past `capacity`): `envelope` as announced and,
        when given, `older`, the same summary for peers that do not read gap-coded offsets (b"":
        none for them, as when the uint16 coding is over the size cap; they are answered "not
        held")."""
        for sealed in (envelope, older or b""):
            if len(sealed) > max_envelope_bytes(MessageKind.GRADIENT_SUMMARY):
                raise ValueError(f"a sealed summary of {len(sealed)} bytes cannot be served in one response")
        with self._lock:
            self._summaries.pop(summary_id, None)
            self._summaries[summary_id] = (envelope, envelope if older is None else older)
            while len(self._summaries) > self._capacity:
                self._summaries.popitem(last=False)

    def get(self, summary_id: int) -> bytes | None:
        """The announced envelope of `summary_id`, if held."""
        with self._lock:
            held = self._summaries.get(summary_id)
            return held[0] if held is not None else None

    def newest(self) -> tuple[int, int] | None:
        """(summary_id, size in bytes) of the summary added last, or None: what to announce."""
        with self._lock:
            if not self._summaries:
                return None
            summary_id = next(reversed(self._summaries))
            return summary_id, len(self._summaries[summary_id][0])

    def ids(self) -> list[int]:
        with self._lock:
            return list(self._summaries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._summaries)

    def answer(self, request: bytes) -> bytes:
        """The response bytes to a fetch request.

        A malformed or oversized request gets an empty response, an unknown (or dropped) id an
        empty envelope: on the wire both are b"", which the fetcher reads as "not held".
        """
        response = gradient_summary_pb2.SummaryFetchResponse()
        if isinstance(request, (bytes, bytearray)) and len(request) <= MAX_SUMMARY_FETCH_REQUEST_BYTES:
            try:
                parsed = gradient_summary_pb2.SummaryFetchRequest.FromString(bytes(request))
            except Exception:  # noqa: BLE001 - garbage from a peer: answer nothing
                parsed = None
            if parsed is not None:
                with self._lock:
                    held = self._summaries.get(parsed.summary_id)
                    envelope = None if held is None else held[0] if parsed.gap_coded else held[1]
                    if envelope:
                        self.summaries_served += 1
                        self.bytes_served += len(envelope)
                if envelope:
                    response.envelope = envelope
        return response.SerializeToString()

    def counters(self) -> dict[str, int]:
        """For status: summaries held, served, and bytes served."""
        with self._lock:
            return {"held": len(self._summaries), "served": self.summaries_served, "bytes_served": self.bytes_served}


def summary_fetch_request(summary_id: int, gap_coded: bool = True) -> bytes:
    """The request bytes asking a peer for its summary `summary_id` (saying whether this node
    reads COMPRESSION_SCHEME_CHUNKED_TOPK_GAPS, as this release does)."""
    return gradient_summary_pb2.SummaryFetchRequest(summary_id=summary_id, gap_coded=gap_coded).SerializeToString()


def parse_summary_fetch_response(data: object) -> bytes | None:
    """The sealed envelope in a fetch response: b"" when the peer no longer holds the summary,
    None when the response is not one (not bytes, too large, undecodable). The envelope itself
    is still unchecked: open it with protocol.summary_messages.open_summary."""
    if not isinstance(data, (bytes, bytearray)) or len(data) > MAX_SUMMARY_FETCH_RESPONSE_BYTES:
        return None
    try:
        response = gradient_summary_pb2.SummaryFetchResponse.FromString(bytes(data))
    except Exception:  # noqa: BLE001 - any decoder failure
        return None
    return response.envelope


__all__ = ["MAX_SUMMARY_FETCH_RESPONSE_BYTES", "SUMMARY_PROTOCOL", "SummaryOutbox", "parse_summary_fetch_response",
           "summary_fetch_request"]

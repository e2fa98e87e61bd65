"""GuardedPubsub: py-libp2p's Pubsub, where one peer's bad bytes end that peer's stream, not the node.

py-libp2p reads each peer's pubsub stream in a task of the Pubsub service, parses every RPC and
hands it to the router. A frame that does not parse as an RPC (protobuf's DecodeError), or any
other error while handling a peer's RPC, left that task with an exception the service does not
expect, and the service, then the host, then the node stopped: seen with 16 nodes on 2 cores, two
of them died of one "Error parsing message with type 'pubsub.pb.RPC'", and any peer could send
such a frame on purpose. Here the error ends that peer's stream the way py-libp2p ends a stream it
cannot read (reset, the peer's subscriptions forgotten; it may open a new one), and is counted.

Each peer's stream arrives read through BufferedReads already (LeanHost, lean_host.py: every
stream a peer opens to this host).
"""
from __future__ import annotations

import logging

from libp2p.exceptions import ParseError
from libp2p.pubsub.pubsub import Pubsub

log = logging.getLogger(__name__)


class GuardedPubsub(Pubsub):
    """Pubsub whose per-peer read loop turns any error from a peer's RPC into the end of that
    peer's stream (`bad_rpc_streams` counts them)."""

    bad_rpc_streams: int = 0

    async def continuously_read_stream(self, stream) -> None:  # noqa: ANN001 - py-libp2p's INetStream
        try:
            await super().continuously_read_stream(stream)
        except Exception as e:  # noqa: BLE001 - a peer's bytes must not stop the node
            self.bad_rpc_streams += 1
            log.debug("pubsub stream of %s ended on a bad RPC (%s: %s)", stream.muxed_conn.peer_id,
                      type(e).__name__, e)
            raise ParseError(f"{type(e).__name__}: {e}") from e  # stream_handler resets it, drops the peer

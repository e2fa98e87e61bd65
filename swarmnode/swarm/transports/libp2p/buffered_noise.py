"""BufferedNoiseTransport: py-libp2p's Noise, reading each raw connection through BufferedReads.

Noise reads every frame as two socket reads (its 2-byte length, then its body), and every yamux
frame is one Noise frame: on a busy connection that is two receive calls per frame, each a
round through trio's scheduler. Through BufferedReads one receive takes whatever has arrived, up
to 64 KiB, and the frames are cut from it. The bytes and the handshake are Noise's own.
"""
from __future__ import annotations

from libp2p.abc import IRawConnection, ISecureConn
from libp2p.peer.id import ID
from libp2p.security.noise.transport import Transport as NoiseTransport

from swarmnode.swarm.transports.libp2p.buffered_reads import BufferedReads


class BufferedNoiseTransport(NoiseTransport):
    """Noise whose connections are read in chunks (BufferedReads) instead of frame by frame."""

    async def secure_inbound(self, conn: IRawConnection) -> ISecureConn:
        return await super().secure_inbound(BufferedReads(conn))

    async def secure_outbound(self, conn: IRawConnection, peer_id: ID) -> ISecureConn:
        return await super().secure_outbound(BufferedReads(conn), peer_id)

"""Swarm transport (hivemind DHT), peer table and record intake. Knows nothing about models."""
from swarmnode.swarm.peers import MessageStats, PeerEntry, PeerTable, RecordIntake
from swarmnode.swarm.transport import JoinError, StoredValue, Transport, TransportStartError

__all__ = ["JoinError", "MessageStats", "PeerEntry", "PeerTable", "RecordIntake", "StoredValue", "Transport", "TransportStartError"]

"""The swarm: transports, relaying, the peer table and the per-peer bookkeeping of gossip.
Knows nothing about models.

- transports/ (its own map): the `Transport` interface (transports/base.py: DHT store/get and
  requests to peers; StoredValue, JoinError, TransportStartError, RequestFailed) and its two
  implementations, transports/hivemind/ (hivemind's DHT and p2pd) and transports/libp2p/
  (py-libp2p: Kademlia, GossipSub push, streams on a trio thread); node/network.py picks one.
- relaying/ (its own map): reaching nodes behind NAT: `RoutedTransport` (any transport wrapped
  with reserve / forward / deliver, dial-back checks and a direct ping), its state without I/O
  (relay_book.py) and the reachability verdict (reachability.py). The wire format of these small
  protocols is protocol/relay_messages.py.
- gossip/ (its own map): the gossip's bookkeeping without I/O: rollout outboxes, sender ledgers,
  held long-polls and when to fetch (rollout_bookkeeping.py); the summary outbox (summary_outbox.py).
- peers.py: PeerTable (who is in the swarm; how its records say to reach each peer), RecordIntake
  (checks every DHT value and counts verdicts), PeerEntry, MessageStats
- penalties.py: PeerPenalties, what this node holds against each peer, for the transport's thread
- key_layout.py: where each kind of value goes in the DHT: `KeyLayout` (by protocol version),
  `KeySpread` (`OneKeyPerWindow`, `ShardedKeys`), `sort_reads`
- windows.py: window_index and the DHT key of each window (peer_records_key, rollouts_key, ...)
  and of each shard of a window (peer_records_shard_key, summaries_shard_key, ...)
- shards.py: the shard layout without I/O: shard_of / belongs (which shard a peer's records live
  in), next_bits (how many shards, with hysteresis), levels_to_write, the swarm-size estimate,
  shards_to_read (which shards a node reads each window) and the fetch round's peer sampling
  (pick_fetch_peers, fetch_round_size); sized by scripts/bench/scale_sim.py

Generic helpers (LRUMap, rate limits, backoff) live in swarmnode/utils/.
"""
from swarmnode.swarm.peers import MessageStats, PeerEntry, PeerTable, RecordIntake
from swarmnode.swarm.transports.base import JoinError, StoredValue, Transport, TransportStartError

__all__ = ["JoinError", "MessageStats", "PeerEntry", "PeerTable", "RecordIntake", "StoredValue", "Transport", "TransportStartError"]

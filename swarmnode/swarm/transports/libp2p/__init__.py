"""The py-libp2p transport: Kademlia, GossipSub push and streams on a trio loop in a thread, of the
node's process or of a host process of its own (network.libp2p_host).

- transport.py: `LibP2PTransport`, its public face (the Transport the node uses) with the host on
  a thread of this process
- process_transport.py: `LibP2PProcessTransport`, the same Transport with the host in a child
  process (host_process.py), out of reach of the trainer's GIL
- host_process.py: the child's main: a LibP2PTransport, its own record policy built from the
  node's settings, the node's calls and handlers over the channel, and HostNews back
- host_channel.py: the channel between the two (framed, pickled messages over a Unix socket
  pair) and HostNews
- trio_thread.py: TrioThread, a trio loop in a thread of its own, with calls across it both
  ways (asyncio -> trio and trio -> asyncio) and cancellation that follows them
- entry_book.py: HeardEntries (entries heard by push or read; when a read asks the DHT, and
  which shards it found empty) and due_writes (when a stored entry goes to the DHT): the caching
  rules, no I/O
- node.py: Libp2pNode, the trio side (host with Noise and yamux, Kademlia DHT, GossipSub topics,
  request streams)
- entry_validator.py: EntryValidator, the DHT's (and the push check's) check of every value
  against the node's RecordPolicy
- guarded_pubsub.py: GuardedPubsub, py-libp2p's Pubsub where a peer's RPC that does not parse
  or fails ends that peer's stream (counted), never the node
- buffered_reads.py: BufferedReads, a stream or a raw connection read in chunks
  (py-libp2p reads an RPC's length a byte at a time, and a Noise frame's length before its body)
- buffered_noise.py: BufferedNoiseTransport, py-libp2p's Noise reading each connection through
  BufferedReads
- lean_host.py: LeanHost, py-libp2p's BasicHost with its advertised addresses (asked for on
  every message that carries this node's signed peer record) computed once a second and its
  streams read through BufferedReads
- bounded_gossipsub.py: BoundedGossipSub, py-libp2p's GossipSub router with its memory of
  messages (for equivocation) bounded
- shard_topics.py: which GossipSub topic an entry is pushed on (its shard's, or the swarm-wide
  one for keys of one per window), which shard topics a node joins and leaves when, and which
  providers it meets to find a topic's peers: the rules, no I/O
- topic_subscriptions.py: TopicSubscriptions, the node's subscriptions on the trio side, as
  shard_topics.py says, with the push check as every topic's validator
- hole_punch.py: hole punching through circuit relays (DCUtR-style) on the trio side

node.py imports libp2p: never import it in a process that imported hivemind.
"""

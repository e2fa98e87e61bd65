"""Transports: one interface, one folder per implementation; a swarm runs on one of them.

- base.py: `Transport`, the interface the node talks to (DHT store/get, requests to peers, push),
  StoredValue, JoinError, TransportStartError, RequestFailed
- hivemind/ (its own map): `HivemindTransport`, the Transport on hivemind's DHT and p2pd
- libp2p/ (its own map): `LibP2PTransport` and `LibP2PProcessTransport`, the Transport on py-libp2p
  with its host on a thread of the node or in a child process

hivemind and libp2p cannot be imported in one process (duplicate protobuf symbols): each
implementation imports its library lazily, and nothing here imports either.
"""

"""Relaying: how a node behind NAT is reached, and how a public node helps (all of it here;
the wire format is protocol/relay_messages.py).

- routed_transport.py: `RoutedTransport`, any transport wrapped with relay reservations,
  forwarding and delivery, dial-back checks and a direct ping; `PeerRoutes` (what it is given of
  peers' records), `RelayCounters`
- relay_keeper.py: `RelayKeeper`, the reservations a node behind NAT keeps on public peers
  (which peers, reserving and renewing, passing over full relays, which relays its record names)
- relay_book.py: its state without I/O: `Reservations`, `RecentCount`, `relay_order` (each
  home's own order of relays: rendezvous hashing), `Skips` (relays left alone a while), `route`
  (direct, or through which relays), `FailureLog`
- reachability.py: `decide` (public / private / unknown from peers' dial-back answers) and
  `usable_multiaddrs` (which addresses to give out)
"""

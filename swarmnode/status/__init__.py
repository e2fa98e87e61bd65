"""The daemon's local status endpoint, its document, and a client for it.

- snapshot.py: build_status, the status document (schema "swarmnode.status/1", docs/status.md),
  assembled from its sections (NodeSection, ClockSection, SwarmSection, MachineSection,
  WorkSections), and its parts (peer_to_dict, summaries_status, JoinState, ...)
- server.py: StatusServer, the aiohttp endpoint (/status, /peers, /metrics)
- prometheus.py: make_registry, the Prometheus view of the same document (StatusCollector)
- prometheus_swarm.py, prometheus_work.py: its series of the node, peers and network / of training,
  rollouts, storage and limits
- prometheus_families.py: family builders those use (a table of values, a one-hot state, a histogram)
- progress_line.py: progress_line, the periodic one line of the document for the node's log
- client.py: fetch (read a daemon's endpoint), status_url_for_home, NoDaemon
"""

"""An emulated internet for tests and experiments: network namespaces, NAT routers, real daemons.

- `Internet`, `Host`, `Home` (topology.py): public hosts and homes behind masquerading routers
  in 198.18.0.0/15, partitions (`cut` / `heal`), processes started inside a host.
- namespaces.py: the `ip` / `iptables` / `tc` commands it is built from, `why_unavailable` (the
  one reason it cannot be built here: not root, no namespaces, no iptables) and
  `remove_leftovers` (namespaces of a killed run).
- `InternetNode` (nodes.py): a real `swarmnode run` daemon on a host, and its status.
- probe.py: a node watched from inside its namespace, one JSON line per poll of its status
  (`python -m swarmnode.testing.internet.probe`).
- measure.py: what a run measured, read off the probe lines (pure, no I/O).

Needs root. Nothing in the node imports this package.
"""
from swarmnode.testing.internet.namespaces import why_unavailable
from swarmnode.testing.internet.nodes import InternetNode, NodeFailed
from swarmnode.testing.internet.topology import Home, Host, Internet

__all__ = ["Home", "Host", "Internet", "InternetNode", "NodeFailed", "why_unavailable"]

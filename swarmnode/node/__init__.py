"""The node daemon and what it needs around it."""
from swarmnode.node.daemon import Node, make_transport

__all__ = ["Node", "make_transport"]

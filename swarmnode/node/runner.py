"""`swarmnode run`: logging, identity, and the event loop around a Node."""
from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys

from swarmnode.config import NodeConfig
from swarmnode.home import HomeLocked, NodeHome
from swarmnode.identity import KeyFileError, load_identity
from swarmnode.swarm.transport import TransportStartError


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    # hivemind logs every DHT hiccup at WARNING; the node reports what matters itself.
    for noisy in ("hivemind", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def run_daemon(config: NodeConfig, home: NodeHome, log_level: str = "INFO") -> int:
    """Run a node until SIGINT/SIGTERM. Returns the process exit code."""
    setup_logging(log_level)
    log = logging.getLogger("swarmnode")
    try:
        identity = load_identity(home.node_key, home.p2p_identity)
    except KeyFileError as e:
        log.error("%s", e)
        return 1
    from swarmnode.node.daemon import Node, make_transport

    try:
        node = Node(config, identity, home, lambda policy: make_transport(config, home, policy))
        asyncio.run(node.run())
    except HomeLocked as e:
        log.error("%s", e)
        return 1
    except TransportStartError as e:
        log.error("%s", e)
        return 1
    except OSError as e:  # what the checks before start could not foresee (a port taken since, a disk gone)
        where = f" ({e.filename})" if e.filename else ""
        log.error("cannot go on: %s%s", e.strerror or e, where)
        log.debug("the error in full", exc_info=True)
        return 1
    except sqlite3.Error as e:  # a store in the home that cannot be opened or written
        log.error("cannot use the stores in node home %s: %s", home.root, e)
        log.debug("the error in full", exc_info=True)
        return 1
    if node.fatal is not None:
        log.error("exiting: %s", node.fatal)  # the last line a user sees: why the node stopped
        return 1
    return 0

"""`swarmnode run`: logging, identity, and the event loop around a Node."""
from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3

from swarmnode.config import NodeConfig
from swarmnode.home import DaemonLock, HomeLocked, NodeHome
from swarmnode.identity import KeyFileError, NodeIdentity, load_identity
from swarmnode.node.logs import (
    FILE_ONLY, log_crash, log_uncaught_exceptions, route_hivemind_logs, route_model_library_logs, setup_logging)
from swarmnode.protocol.versions import THIS_RELEASE, ProtocolVersions
from swarmnode.swarm.transports.base import TransportStartError

log = logging.getLogger("swarmnode")


def run_daemon(config: NodeConfig, home: NodeHome, log_level: str = "INFO", config_source: str = "defaults",
               protocol_versions: ProtocolVersions = THIS_RELEASE, role: str = "node") -> int:
    """Run a node (speaking `protocol_versions`; `role` "bootstrap" for `swarmnode bootstrap`) until
    SIGINT/SIGTERM. Returns the process exit code.
    Everything it logs goes to the console and to `home.node_log`; a crash's traceback to the log file only."""
    if (busy := _locked_by_another(home)) is not None:  # its log is not this process's to write (or rotate)
        setup_logging(log_level)
        log.error("%s", busy)
        return 1
    try:
        setup_logging(log_level, home.node_log, config.logging.max_bytes, config.logging.backup_count)
    except OSError as e:
        setup_logging(log_level)
        log.error("cannot write the log file %s: %s; make %s a writable folder", home.node_log, e.strerror or e,
                  home.logs_dir)
        return 1
    log_uncaught_exceptions(home.node_log)
    try:
        identity = load_identity(home.node_key, home.p2p_identity)
    except KeyFileError as e:  # a key it cannot use, before anything started: as a bad config
        log.error("%s", e)
        return 2
    return _run_node(config, home, identity, config_source, protocol_versions, role)


def _run_node(config: NodeConfig, home: NodeHome, identity: NodeIdentity, config_source: str,
              protocol_versions: ProtocolVersions, role: str = "node") -> int:
    """Build the node and run its event loop; the exit code, with one line for each way it can fail."""
    hivemind = config.network.transport == "hivemind"  # libp2p's process never imports hivemind
    if hivemind and not config.model.name_or_path:  # no model, no torch (a bootstrap node stays small)
        from swarmnode.swarm.transports.hivemind.imports import defer_hivemind_imports

        defer_hivemind_imports()
    from swarmnode.node.daemon import Node
    from swarmnode.node.network import make_transport

    if hivemind:
        route_hivemind_logs()
    if config.model.name_or_path:
        route_model_library_logs()
    try:
        node = Node(config, identity, home, functools.partial(make_transport, config, home), config_source=config_source,
                    protocol_versions=protocol_versions, role=role)
        asyncio.run(node.run())
    except (HomeLocked, TransportStartError) as e:
        log.error("%s", e)
        return 1
    except OSError as e:  # what the checks before start could not foresee (a port taken since, a disk gone)
        where = f" ({e.filename})" if e.filename else ""
        log.error("cannot go on: %s%s", e.strerror or e, where)
        log.error("the error in full", exc_info=True, extra=FILE_ONLY)
        return 1
    except sqlite3.Error as e:  # a store in the home that cannot be opened or written
        log.error("cannot use the stores in node home %s: %s", home.root, e)
        log.error("the error in full", exc_info=True, extra=FILE_ONLY)
        return 1
    except Exception as e:  # noqa: BLE001 - a bug: one line here, the traceback in the log file
        log_crash(e, "the daemon", home.node_log)
        return 1
    if node.fatal is not None:
        log.error("exiting: %s", node.fatal)  # the last line a user sees: why the node stopped
        return 1
    return 0


def _locked_by_another(home: NodeHome) -> HomeLocked | None:
    """Whether another daemon holds the home (a probe: Node.run takes the lock for the run)."""
    lock = DaemonLock(home)
    try:
        lock.acquire()
    except HomeLocked as e:
        return e
    except OSError:  # an unwritable run folder: Node.run meets it again and says so
        return None
    lock.release()
    return None

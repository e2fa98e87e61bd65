"""Contract case on starting: a taken port is one line naming it (TransportStartError), never a
transport that runs without listening."""
from __future__ import annotations

import socket
from pathlib import Path

import pytest

from swarmnode.swarm.transports.base import TransportStartError
from tests.contract.transports import alive, make_node


async def start_on_a_taken_port_fails_in_one_line(kind: str, workdir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        node = make_node(workdir / "a", port=taken.getsockname()[1])
        transport = node.open(kind)
        with pytest.raises(TransportStartError) as info:
            await transport.start()
        message = str(info.value)
        assert "address already in use" in message and str(node.port) in message and "\n" not in message, message
        assert not any(alive(pid) for pid in transport.child_processes()), "a helper process outlived the failed start"

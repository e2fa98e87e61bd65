"""A process that holds one transport until it is killed: the node the restart case SIGKILLs.

    python -m tests.contract.holder KIND NODE_DIR PORT GENERATION JOIN_MADDR READY_FILE

It starts a transport with the node's identity on PORT, joins JOIN_MADDR, answers ECHO with
its generation, stores its peer record, then writes READY_FILE (JSON: peer_id, key, multiaddrs,
stored, child_pids, record) and sleeps until a signal ends it.
"""
from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path

from tests.contract.transports import RECORD_TTL_S, make_node, records_key

ECHO = "swarmnode/contract/generation"


async def hold(kind: str, node_dir: Path, port: int, generation: int, join_maddr: str, ready_file: Path) -> None:
    node = make_node(node_dir, port)
    transport = node.open(kind)
    await transport.start()

    async def answer(payload: bytes, requester: str) -> bytes:
        return f"generation {generation} answers {requester}: ".encode() + payload

    await transport.serve(ECHO, answer)
    await transport.join(join_maddr, 30.0)
    now = transport.dht_time()
    record = node.peer_record(now)
    key = records_key(now)
    stored = await transport.store(key, node.peer_id, record, now + RECORD_TTL_S)
    ready = {"peer_id": node.peer_id, "key": key, "multiaddrs": await transport.multiaddrs(), "stored": stored,
             "child_pids": transport.child_processes(), "record": base64.b64encode(record).decode()}
    partial = ready_file.with_suffix(".partial")
    partial.write_text(json.dumps(ready))
    os.replace(partial, ready_file)
    await asyncio.Event().wait()  # until SIGKILL


if __name__ == "__main__":
    kind_arg, dir_arg, port_arg, generation_arg, join_arg, ready_arg = sys.argv[1:7]
    asyncio.run(hold(kind_arg, Path(dir_arg), int(port_arg), int(generation_arg), join_arg, Path(ready_arg)))

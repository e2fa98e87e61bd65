"""The hostile peer process: real identities, real transports, the real wire protocol, crafted payloads.

    python -m swarmnode.testing.hostile.peer --initial-peer MADDR --swarm swarmnode-local --window-s 10 \\
        --attack int_overflow,replay --seconds 5 --out result.json [--transport libp2p]

MADDR is the victim's full multiaddr (its peer id is the /p2p/ part). --transport is the victim
swarm's network.transport: hivemind (the default: p2pd and hivemind's DHT) or libp2p (py-libp2p
in this process: Kademlia, GossipSub); one process runs one kind (swarmnode/testing/hostile/
persona_transport.py). The process starts a main persona (a fresh NodeIdentity: node key +
libp2p key, its own transport on 127.0.0.1, a DHT node that joins through MADDR and keeps a
valid signed PeerRecord in the swarm's DHT), then gives every attack a persona of its own (a
fresh identity and transport), so the victim's standing of one attack
(cursor, strikes, ignore) does not hide the next and each rejection names its attack. Some
attacks also mint throw-away identities with no transport behind them (records, announcements).

A persona serves crafted batches on ROLLOUT_PROTOCOL the way a node's outbox does (the victim
fetches them: RolloutGossip._fetch_from) and announces them in the DHT under the swarm's keys.
It serves gradient summaries on SUMMARY_PROTOCOL the same way (SummaryGossip._fetch_from), and
announces them under the summaries key; its PeerRecord names the victim's base fingerprint when
summary attacks run (swarmnode/testing/hostile/summary_attacks.py), so the victim sees a same-base peer.
The bundled policy is loaded so that same-model batches carry the victim's model fingerprint,
real token ids and true per-token log-probs; prompts are real task items.

The JSON written to --out: {"peer_id", "victim", "attacks": {name: {"peer_ids", "sent",
"messages", "seconds", "details"}}, "errors": {...}}.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from swarmnode.testing.hostile.attacks import ATTACKS, expand
from swarmnode.testing.hostile.persona_transport import KINDS
from swarmnode.testing.hostile.personas import HostilePeer, say

# What "messages sent" adds up: values stored into DHT nodes (and pushed on libp2p's GossipSub
# topic), requests made, fetch responses served and batch envelopes inside them.
MESSAGE_KINDS = ("dht_stores", "pushes", "requests", "fetch_responses", "batch_envelopes")


async def run(args: argparse.Namespace) -> dict[str, Any]:
    names = expand(args.attack)
    say(f"loading the bundled policy; transport {args.transport}; attacks: {', '.join(names)}")
    peer = HostilePeer(args)
    result: dict[str, Any] = {"victim": peer.victim_id, "attacks": {}, "errors": {}}
    if args.base_fingerprint or any(ATTACKS[n].__module__.endswith("summary_attacks") for n in names):
        # A same-base peer to the victim: it publishes summaries, and fetches this peer's.
        peer.base_fingerprint = args.base_fingerprint or peer.crafter.base_fingerprint
        result["base_fingerprint"] = peer.base_fingerprint
    try:
        await peer.start()
        result["peer_id"] = peer.main.peer_id
        say(f"main persona {peer.main.peer_id} joined the victim {peer.victim_id}")
        deadline = time.monotonic() + args.total_seconds if args.total_seconds else None
        rounds = 0
        while True:
            rounds += 1
            for name in names:
                if deadline is not None and time.monotonic() >= deadline:
                    break
                key = name if rounds == 1 else f"{name}#{rounds}"
                say(f"attack {key}: start")
                started = time.monotonic()
                wall_start = time.time()
                try:
                    out = await ATTACKS[name](peer, args)
                except Exception as e:  # noqa: BLE001 - report it, go on with the next attack
                    result["errors"][key] = f"{type(e).__name__}: {e}"
                    say(f"attack {key}: error {type(e).__name__}: {e}")
                    traceback.print_exc()
                    continue
                out["seconds"] = round(time.monotonic() - started, 2)
                out["started_at"] = wall_start
                out["ended_at"] = time.time()
                out["messages"] = sum(out["sent"].get(k, 0) for k in MESSAGE_KINDS)
                result["attacks"][key] = out
                say(f"attack {key}: done in {out['seconds']}s, {out['messages']} messages "
                    f"({', '.join(f'{k} {v}' for k, v in sorted(out['sent'].items()))})")
                if args.out:
                    Path(args.out).write_text(json.dumps(result, indent=1, default=str))
            if deadline is None or time.monotonic() >= deadline:
                break
    finally:
        await peer.stop()
    return result


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--initial-peer", required=True, help="the victim's full multiaddr (/ip4/.../tcp/.../p2p/<id>)")
    p.add_argument("--swarm", default="swarmnode-local", help="swarm name (the victim's swarm.name)")
    p.add_argument("--transport", choices=KINDS, default="hivemind",
                   help="the victim swarm's network.transport (what every persona runs on)")
    p.add_argument("--window-s", type=float, default=10.0, help="the victim's swarm.window_s")
    p.add_argument("--attack", default="all", help="comma-separated attack names, 'all', 'mixed' or 'summaries' (see attacks.py)")
    p.add_argument("--seconds", type=float, default=6.0, help="most time one attack takes (floods take all of it)")
    p.add_argument("--total-seconds", type=float, default=0.0,
                   help="repeat the attack list until this many seconds have passed (0: run it once)")
    p.add_argument("--identities", type=int, default=20_000, help="identity_flood: fresh identities to store")
    p.add_argument("--identity-seconds", type=float, default=300.0, help="identity_flood: most time it takes")
    p.add_argument("--concurrency", type=int, default=32, help="request_flood: requests in flight")
    p.add_argument("--base-fingerprint", default="",
                   help="the victim's base fingerprint for personas' PeerRecords (default: the bundled policy's, "
                        "when summary attacks run; none otherwise)")
    p.add_argument("--out", help="result JSON (rewritten after each attack)")
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    result = asyncio.run(run(args))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    say(f"done: {len(result['attacks'])} attacks, {len(result['errors'])} errors")
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())

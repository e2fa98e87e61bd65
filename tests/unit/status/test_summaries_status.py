"""The status document's `summaries` object: its schema, docs, rendering and Prometheus series."""
import re
from pathlib import Path

from prometheus_client import generate_latest
from rich.console import Console

from swarmnode.cli.render import SWARM_COLUMNS, status_view, swarm_table
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.status.prometheus import make_registry
from swarmnode.status.snapshot import (
    SUMMARIES_KEYS,
    JoinState,
    build_status,
    empty_summaries_status,
)
from swarmnode.swarm.peers import MessageStats, PeerEntry

DOC = (Path(__file__).parents[3] / "docs" / "status.md").read_text(encoding="utf-8")

SUMMARIES = {
    "enabled": True, "active": True, "base_fingerprint": "a1c04df6ea1c2c67", "sent": 12, "merged": 21, "fetched": 25,
    "rejected": {"norm_too_large": 2, "non_finite": 1}, "skipped_other_base": 4, "stale_dropped": 1,
    "bytes_per_summary": 43_520.0, "dense_bytes": 4 * 1_052_672, "compression_ratio": 96.75, "outer_steps": 12,
    "last_merge_age_s": 7.5, "merge_seconds": 3.25, "merge_cpu_seconds": 1.5, "partners_last": 2,
    "robust_merge": True, "skipped": {"low_trust": 5, "repeated_summary": 1}, "down_weighted": 9, "clipped": 14,
    "harmful": 3, "agreement_scale": 0.0312,
    "trust": {"12D3KooWGoodPeerAAAAAA": {"trust": 1.0, "score": 0.61, "judged": 12, "merged": 12, "skipped": 0,
                                         "harmful": 0, "agreement": 0.034},
              "12D3KooWBadPeerBBBBBB": {"trust": 0.0, "score": -0.61, "judged": 6, "merged": 0, "skipped": 6,
                                        "harmful": 4, "agreement": -0.031}},
}


def status(peers=(), **extra):
    return build_status(
        peer_id="12D3KooWTest", swarm="s", software_version="0.1.0", protocol_version=1, state=peer_record_pb2.NODE_STATE_RUNNING,
        started_at=1000.0, now=1100.0, window=1, window_s=30.0, multiaddrs=["/ip4/127.0.0.1/tcp/1/p2p/12D3KooWTest"],
        client_mode=False, routing_table_size=0, join=JoinState((), True, 0, None), peers=list(peers), stats=MessageStats(),
        device=peer_record_pb2.DeviceInfo(kind="cpu"), capability=peer_record_pb2.Capability(), model_fingerprint="", **extra,
    )


def test_a_node_without_a_model_reports_every_summaries_key_empty():
    doc = status()["summaries"]
    assert doc == empty_summaries_status() and tuple(doc) == SUMMARIES_KEYS
    assert (doc["enabled"], doc["active"], doc["sent"], doc["rejected"], doc["bytes_per_summary"]) == (False, False, 0, {}, None)
    assert status(summaries=SUMMARIES)["summaries"] == SUMMARIES
    assert set(SUMMARIES) == set(SUMMARIES_KEYS)
    partial = status(summaries={"enabled": True, "sent": 3})["summaries"]  # missing keys are filled, not dropped
    assert tuple(partial) == SUMMARIES_KEYS and (partial["sent"], partial["merged"]) == (3, 0)


def test_peers_carry_their_base_fingerprint():
    record = peer_record_pb2.PeerRecord(peer_id="12D3KooWPeer", timestamp=1090.0, expires_at=1110.0,
                                        base_fingerprint="0123456789abcdef")
    old = peer_record_pb2.PeerRecord(peer_id="12D3KooWOld", timestamp=1090.0, expires_at=1110.0)
    peers = status(peers=[PeerEntry(record, 1000.0, 1090.0), PeerEntry(old, 1000.0, 1090.0)])["peers"]
    assert [p["base_fingerprint"] for p in peers] == ["0123456789abcdef", ""]


def test_docs_cover_every_status_key():
    top = [k for k in status() if f"| `{k}` |" not in DOC]
    assert top == []
    section = DOC[DOC.index("`summaries` (every key"):]
    assert [k for k in SUMMARIES_KEYS if f"| `{k}` |" not in section] == []
    peer_rows = DOC[DOC.index("Each entry of `peers`"):DOC.index("Rejection reasons")]
    assert "| `base_fingerprint` |" in peer_rows


def test_status_view_shows_summaries_in_80_columns():
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(summaries=SUMMARIES, training={"model": "bundled:tiny-policy"})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "gradient summaries" in flat and "on, merging with same-base peers (base a1c04df6ea1c2c67)" in flat
    assert "12 sent, 25 fetched, 21 merged (2 last step)" in flat
    assert "rejected 3 (non finite 1, norm too large 2)" in flat
    assert "4 other base, 1 too stale, 5 low trust, 1 repeated" in flat
    assert "trust 1 of 2 peers at 0.5+; lowest BBBBBB 0.00 (4 harmful); 9 down-weighted, 14 clipped" in flat
    assert "42.5 KiB per summary vs 4.0 MiB dense (97x)" in flat
    assert "outer steps 12, last merge 8s ago, 1.5s CPU of summary work" in flat

    quiet = {**empty_summaries_status(), "enabled": True, "base_fingerprint": "a1c04df6ea1c2c67", "dense_bytes": 4096}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(summaries=quiet, training={"model": "bundled:tiny-policy"})))
    flat = " ".join(console.export_text().split())
    assert "on, no same-base peer yet" in flat and "none sent yet (dense delta 4.0 KiB)" in flat and "no merge yet" in flat
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status()))  # no model: no summaries part
    assert "gradient summaries" not in console.export_text()


def test_prometheus_series():
    text = generate_latest(make_registry(lambda: status(summaries=SUMMARIES))).decode()
    for line in ("swarmnode_summaries_sent_total 12.0", "swarmnode_summaries_merged_total 21.0",
                 "swarmnode_summaries_fetched_total 25.0", "swarmnode_summaries_outer_steps_total 12.0",
                 'swarmnode_summaries_rejected_total{reason="norm_too_large"} 2.0',
                 'swarmnode_summaries_rejected_total{reason="non_finite"} 1.0',
                 "swarmnode_summaries_bytes_per_summary 43520.0", "swarmnode_summaries_dense_bytes 4.210688e+06",
                 "swarmnode_summaries_last_merge_age_seconds 7.5", "swarmnode_summaries_active 1.0",
                 "swarmnode_summaries_merge_seconds_total 3.25", "swarmnode_summaries_merge_cpu_seconds_total 1.5",
                 'swarmnode_summaries_skipped_total{reason="low_trust"} 5.0', "swarmnode_summaries_harmful_total 3.0",
                 "swarmnode_summaries_down_weighted_total 9.0", "swarmnode_summaries_clipped_total 14.0",
                 'swarmnode_summaries_judged_peers{trust="none"} 1.0', 'swarmnode_summaries_judged_peers{trust="full"} 1.0', "swarmnode_summaries_agreement_scale 0.0312"):
        assert line in text.splitlines(), line
    empty = generate_latest(make_registry(lambda: status())).decode()
    assert "swarmnode_summaries_sent_total 0.0" in empty
    assert "swarmnode_summaries_bytes_per_summary " not in empty and "swarmnode_summaries_last_merge_age_seconds " not in empty
    # The prometheus names documented in docs/status.md are the ones served.
    assert re.search(r"swarmnode_summaries_\{sent,fetched,merged", DOC)


def _row(name, merged=None, **training):
    row = {"name": name, "peer_id": "12D3KooWAbCdEfGhIjKlMnOpQrStUvWxYz123456", "state": "running", "peers": [{}] * 15,
           "training": {"running": True, "phase": "training", "policy_version": 12345, "local_reward_mean": 0.8125,
                        "heldout_accuracy": 0.6875, **training},
           "rollouts": {"groups_published": 123_456, "groups_accepted": 2_345_678, "groups_rejected": 1234,
                        "gossip_time_share": 0.1234}}
    if merged is not None:
        row["summaries"] = {**empty_summaries_status(), "merged": merged}
    return row


def test_swarm_table_has_merges_within_80_columns():
    assert SWARM_COLUMNS[-1] == "merges" and len(SWARM_COLUMNS) == 12
    rows = [_row("node15", merged=98_765), _row("node2"), {"name": "node3", "error": "starting"},
            {**_row("node4", merged=0), "training": {"phase": "loading model"}}]
    console = Console(width=80, record=True, color_system=None)
    console.print(swarm_table(rows, "homes and logs in /tmp/swarm; runs until Ctrl-C; Ctrl-C stops every node"))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    header = next(line for line in lines if line.startswith("node "))
    assert header.split() == ["node", "peer", "state", "peers", "ver", "reward", "acc", "sent", "recv", "rej", "gossip", "merges"]
    cells = {line.split()[0]: line.split() for line in lines if line.startswith("node") and line != header}
    assert cells["node15"] == ["node15", "…123456", "running", "15", "12345", "0.812", "0.688", "123k", "2.3M", "1234",
                               "12.34%", "99k"]
    assert cells["node2"][-1] == "-"  # no summaries in its status (an older node)
    assert cells["node4"][2:5] == ["loading", "15", "-"] and cells["node4"][-1] == "0"
    assert cells["node3"] == ["node3", "starting"]

"""Peers' measured speeds: checked as hostile input, shown in status and `swarmnode peers`."""
import math
from dataclasses import replace

from rich.console import Console

from swarmnode.cli.render import PEER_COLUMNS, peers_table
from swarmnode.protocol import Rejected, RejectReason, build_peer_record, check_peer_record
from swarmnode.protocol.generated import peer_record_pb2
from swarmnode.protocol.limits import CAPABILITY_CAPS
from swarmnode.status.snapshot import peer_to_dict
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.transport import StoredValue
from tests.helpers import record_fields

SPEEDS = {"generate_tokens_per_s": 1234.56, "train_samples_per_s": 7.891, "train_tokens_per_s": 50.0,
          "seconds_per_step": 2.34567}


def fields(**capability):
    return replace(record_fields("s"), capability=peer_record_pb2.Capability(**{"matmul_gflops": 10.0, **capability}))


def reason(identity, **capability):
    data = build_peer_record(identity, fields(**capability), now=100.0, ttl_s=20.0)
    try:
        check_peer_record(data, subkey=identity.peer_id, swarm="s", now=105.0)
    except Rejected as r:
        return r.reason
    return None


def test_honest_speeds_pass_and_every_speed_is_bounded(make_identity):
    me = make_identity()
    assert reason(me, **SPEEDS) is None
    assert reason(me, **{name: cap for name, cap in CAPABILITY_CAPS.items()}) is None  # at the cap: accepted
    for name, cap in CAPABILITY_CAPS.items():
        for bad in (math.nan, math.inf, -math.inf, -1.0):
            assert reason(me, **{name: bad}) == RejectReason.INVALID_FIELD, (name, bad)
        for bad in (cap * 1.01, 3.4e38):
            assert reason(me, **{name: bad}) == RejectReason.OUT_OF_RANGE, (name, bad)


def test_a_record_with_an_impossible_speed_is_dropped_and_counted(make_identity):
    me, honest, liar = make_identity(), make_identity(), make_identity()
    table, stats = PeerTable(me.peer_id), MessageStats()
    intake = RecordIntake(table, stats, "s", window_s=10.0)
    values = [StoredValue(honest.peer_id, build_peer_record(honest, fields(**SPEEDS), 100.0, 10.0), 110.0),
              StoredValue(liar.peer_id, build_peer_record(liar, fields(train_samples_per_s=1e12), 100.0, 10.0), 110.0)]
    intake.ingest(values, now=101.0)
    assert honest.peer_id in table and liar.peer_id not in table
    assert stats.counts()["rejected"] == {"out_of_range": 1}
    # Ranges are checked before the key binding proves who signed: as for every other field,
    # the rejection is counted but not held against the peer id the record names.
    assert liar.peer_id not in stats.rejected_by_sender


def test_status_peer_entries_carry_the_peers_speeds(make_identity):
    peer = make_identity()
    table = PeerTable("me")
    table.offer(check_peer_record(build_peer_record(peer, fields(**SPEEDS), 100.0, 20.0), subkey=peer.peer_id,
                                  swarm="s", now=101.0), 101.0)
    entry = peer_to_dict(table.entries()[0], now=102.0)
    expected = {"generate_tokens_per_s": 1234.6, "train_samples_per_s": 7.89, "train_tokens_per_s": 50.0,
                "seconds_per_step": 2.346}
    assert {k: entry[k] for k in expected} == expected
    assert entry["capability"] == {"matmul_gflops": 10.0, **expected}


def peer(i, **figures):
    return {"peer_id": f"12D3KooW{i:040d}", "age_s": 75.0, "state": "running",
            "device": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3 with a long name"},
            "capability": {"matmul_gflops": 51234.5}, "software_version": "0.1.0.dev12+gabcdef0", **figures}


def test_peers_table_shows_every_peers_figures_within_80_columns():
    peers = [peer(1, generate_tokens_per_s=123456.7, train_samples_per_s=812.25, seconds_per_step=0.42),
             peer(2, generate_tokens_per_s=41.234, train_samples_per_s=0.4567, seconds_per_step=123.4),
             {**peer(3, generate_tokens_per_s=0.0, train_samples_per_s=0.0, seconds_per_step=0.0),
              "device": {"kind": "cpu", "cpu_cores": 2}, "state": "stopping"}]
    console = Console(width=80, record=True, color_system=None)
    console.print(peers_table(peers))
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines) and len(PEER_COLUMNS) == 9
    rows = {line.split()[0]: line.split() for line in lines if line.startswith("12D3KooW")}
    assert rows["12D3KooW…000001"][-5:] == ["51234", "123k", "812", "0.42", "0.1.0.d…"]
    assert rows["12D3KooW…000002"][-4:-1] == ["41.2", "0.46", "123"]
    assert rows["12D3KooW…000003"][1:] == ["1m", "stopping", "cpu", "2c", "51234", "-", "-", "-", "0.1.0.d…"]

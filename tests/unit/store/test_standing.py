"""store/standing.py: peers' standings persisted and restored (into a SenderLedger), bounded in
rows with ignored and distrusted peers kept first, and a store of an older release migrated."""
import pytest

from swarmnode.store.standing import StandingRow, StandingStore
from swarmnode.swarm.gossip.rollout_bookkeeping import SenderLedger

NOW = 1000.0


def test_standings_persist_and_restore(tmp_path):
    store = StandingStore(tmp_path / "rollouts.sqlite", max_rows=3)
    store.save([StandingRow("bad", 0, 25, NOW + 500, None), StandingRow("good", 12, 1, 0.0, 77)])
    store.save([StandingRow("good", 13, 1, 0.0, 80)])  # an update, not a second row
    store.close()
    reopened = StandingStore(tmp_path / "rollouts.sqlite", max_rows=3)
    rows = {r.peer: r for r in reopened.load(10)}
    assert rows == {"bad": StandingRow("bad", 0, 25, NOW + 500, None), "good": StandingRow("good", 13, 1, 0.0, 80)}
    ledger = SenderLedger(strike_limit=20, strike_window_s=60, ignore_s=100, backlog=4)
    for r in reopened.load(10):
        ledger.restore(r.peer, r.accepted, r.rejected, r.ignored_until, r.cursor)
    assert ledger.ignored("bad", NOW + 499) and not ledger.ignored("good", NOW)
    assert ledger.standing("good").cursor == 80 and ledger.standing("good").accepted == 13


def test_standing_store_prunes_to_its_row_bound(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=3)
    store.PRUNE_EVERY = 1
    for i in range(10):
        store.save([StandingRow(f"p{i}", 0, 0, 0.0, None)])
    assert [r.peer for r in store.load(100)] == ["p7", "p8", "p9"]




def test_standings_of_ignored_peers_outlast_a_flood_of_newer_ones(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=100)
    store.save([StandingRow("offender", 0, 30, NOW + 500, None)])
    store.save([StandingRow(f"stranger{i}", 1, 0, 0.0, None) for i in range(20)])
    assert "offender" in [r.peer for r in store.load(5, now=NOW)]
    assert "offender" not in [r.peer for r in store.load(5, now=NOW + 600)]  # no longer ignored: recency only


def test_summary_trust_is_kept_with_the_standing_and_distrusted_peers_outlast_a_flood(tmp_path):
    store = StandingStore(tmp_path / "r.sqlite", max_rows=100)
    store.save([StandingRow("flipper", 3, 0, 0.0, 41)])
    store.save_trust([("flipper", -0.6, 7), ("newcomer", 0.15, 1)])
    store.save([StandingRow("flipper", 4, 0, 0.0, 42)])  # a rollout save leaves the trust as it is
    store.save([StandingRow(f"stranger{i}", 1, 0, 0.0, None) for i in range(20)])
    rows = {r.peer: r for r in store.load(3, now=NOW)}
    assert rows["flipper"] == StandingRow("flipper", 4, 0, 0.0, 42, -0.6, 7)  # distrusted: kept first
    assert "newcomer" not in rows
    assert {r.peer: r for r in store.load(100, now=NOW)}["newcomer"].trust_score == pytest.approx(0.15)


def test_a_standing_store_of_an_older_release_gains_the_trust_columns(tmp_path):
    import sqlite3

    path = tmp_path / "rollouts.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE peer_standing (peer TEXT PRIMARY KEY, accepted INTEGER NOT NULL, rejected INTEGER "
                 "NOT NULL, ignored_until REAL NOT NULL, cursor INTEGER, updated REAL NOT NULL)")
    conn.execute("INSERT INTO peer_standing VALUES ('old', 5, 1, 0, 9, 1.0)")
    conn.commit()
    conn.close()
    store = StandingStore(path, max_rows=10)
    assert store.load(10) == [StandingRow("old", 5, 1, 0.0, 9, None, 0)]
    store.save_trust([("old", 0.4, 3)])
    assert store.load(10) == [StandingRow("old", 5, 1, 0.0, 9, 0.4, 3)]

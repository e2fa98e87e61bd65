"""scripts/bench/scale_population.py's pure parts: which keys a synthetic identity writes at which
swarm size, the ramp and the stores-per-slice schedule, what a population process kept up with,
and the report's rows and slopes."""
import argparse
import functools

import pytest

from swarmnode.config import load_config
from swarmnode.config.loader import bundled_config_path
from swarmnode.protocol.versions import THIS_RELEASE
from swarmnode.swarm.key_layout import KeyLayout
from swarmnode.swarm.peers import MessageStats, PeerTable, RecordIntake
from swarmnode.swarm.shards import shard_of
from swarmnode.swarm.windows import peer_records_key, peer_records_shard_key
from tests.helpers import load_script


@pytest.fixture(scope="module")
def pop():
    return load_script("scripts/bench/scale_population.py")


def test_the_ramp_doubles_the_swarm_from_twice_the_daemons_to_n_plus_p(pop):
    assert pop.ramp_totals(4, 64) == [8, 16, 32, 64, 68]
    assert pop.ramp_totals(8, 2048) == [16, 32, 64, 128, 256, 512, 1024, 2048, 2056]
    assert pop.ramp_totals(8, 8) == [16]
    assert pop.ramp_totals(8, 0) == [8]
    # identities publishing along the ramp (10 s steps): total - N, then all P from the last step on
    assert [pop.active_at(4, 64, t, 10.0) for t in (0, 9.9, 10, 25, 39, 40, 500)] == [4, 4, 12, 28, 60, 64, 64]
    assert pop.active_at(8, 0, 100.0, 10.0) == 0
    assert pop.active_at(4, 64, 0.0, 0.0) == 64  # no ramp


def test_slices_spread_every_identity_once_over_the_interval(pop):
    assert pop.tick_slices(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    for count, ticks in ((2048, 20), (64, 20), (3, 20), (0, 5)):
        slices = pop.tick_slices(count, ticks)
        assert len(slices) == ticks
        assert [i for lo, hi in slices for i in range(lo, hi)] == list(range(count))
        sizes = [hi - lo for lo, hi in slices]
        assert max(sizes) - min(sizes) <= 1  # not a burst


def test_steady_bits_and_the_peers_a_settled_daemon_keeps(pop):
    # one shard up to 2 x 8 = 16 nodes; then a level each time the mean shard passes 16
    assert [pop.steady_bits(t) for t in (8, 16, 17, 68, 264, 1032, 2056)] == [0, 0, 1, 3, 5, 7, 8]
    # up to four shards are all read; beyond, four shards' share, itself excepted:
    # ceil(68 x 4/8) - 1 = 33, ceil(264 x 4/32) - 1 = 32, ceil(2056 x 4/256) - 1 = 32
    assert [pop.expected_peers(t) for t in (1, 8, 16, 68, 264, 2056)] == [0, 7, 15, 33, 32, 32]


def settle(spread, observe, total: int, first_window: int, reads: int = 40) -> int:
    """`reads` observations of `total`, a window apart (past every transition grace): the next window."""
    for i in range(reads):
        observe(spread, total, first_window + i)
    return first_window + reads


def test_an_identity_writes_what_a_node_of_its_id_would_at_every_swarm_size(pop, make_identity):
    peer = make_identity().peer_id
    node = KeyLayout.of(peer, THIS_RELEASE).spread(functools.partial(peer_records_key, "s"),
                                                   functools.partial(peer_records_shard_key, "s"))
    levels, window = pop.level_spread(), 100
    for total in (8, 68, 264, 2056):  # the ramp's way up, each settled
        settle(levels, pop.observe_total, total, window)
        window = settle(node, lambda spread, t, w: spread.observe({(spread.bits, s): t / 2**spread.bits for s in range(4)}, w), total, window)
        bits = pop.steady_bits(total)
        assert levels.bits == node.bits == bits
        assert levels.write_keys(window) == [bits]
        assert pop.identity_keys("s", window, peer, [bits]) == node.write_keys(window) == [
            peer_records_shard_key("s", window, bits, shard_of(peer, bits))]


def test_levels_move_one_step_per_read_and_keep_the_level_left_for_its_readers(pop):
    levels = pop.level_spread()
    pop.observe_total(levels, 48, 100)  # from one shard: 48 > 2 x 8 per shard
    assert levels.bits == 1
    assert levels.write_keys(100) == [0, 1, 2]  # the level left, its own, the next (48/2 = 24 > 16 / 1.25)
    pop.observe_total(levels, 48, 100)
    assert levels.bits == 2 and levels.write_keys(100) == [1, 2]  # 48/4 = 12 <= 12.8
    assert levels.write_keys(106) == [2]  # past the transition grace


def test_the_population_stores_valid_records_each_under_its_own_shard(pop):
    cfg = load_config(bundled_config_path("local.yaml"))
    args = argparse.Namespace(population=5, nodes=763, ramp_step=0.0, max_in_flight=8, store_mode="each")
    population = pop.Population(None, cfg, args)
    now = 1_000_000.0
    for _ in range(40):  # 40 intervals of 2 reads each, a window apart
        population.observe(0.0, now)
        now += cfg.swarm.window_s
    # 768 / 32 = 24 > 16, 768 / 64 = 12: 6 bits, one level (12 <= 16 / 1.25)
    assert population.active == 5 and population.spread.bits == pop.steady_bits(768) == 6
    items = population.items(0, 5, now)
    assert population.levels == [6] and len(items) == 5
    intake = RecordIntake(PeerTable("observer"), MessageStats(), cfg.swarm.name, cfg.swarm.window_s)
    for key, subkey, value, expiration in items:
        assert expiration == now + cfg.records.ttl_s
        assert key.endswith(f"/6/{shard_of(subkey, 6)}")
        assert intake.admit(key, subkey, value, expiration, now)
    assert len({subkey for _, subkey, _, _ in items}) == 5


def test_population_figures_say_whether_it_kept_up(pop):
    before = {"intervals": 10, "planned": 640, "stored": 600, "failed": 0, "ticks": 200, "late_ticks": 0,
              "lag_s_sum": 1.0, "rebased": 0}
    kept = {"intervals": 25, "planned": 1600, "stored": 1560, "failed": 2, "ticks": 500, "late_ticks": 6,
            "lag_s_sum": 4.0, "rebased": 0}
    f = pop.population_figures(before, kept, 30.0)
    assert f == {"stores_per_min": 1920.0, "planned_per_interval": 64.0, "stored_per_interval": 64.0,
                 "failed_per_interval": 0.1, "stored_share": 1.0, "late_tick_share": 0.02, "mean_lag_s": 0.01,
                 "rebased": 0, "behind": False}
    short = {**kept, "stored": 1400}  # stored 800 of 960 planned
    assert pop.population_figures(before, short, 30.0)["behind"] is True
    late = {**kept, "late_ticks": 100}  # a third of the slices started a slice late
    assert pop.population_figures(before, late, 30.0)["behind"] is True
    assert pop.population_figures(before, {**kept, "rebased": 1}, 30.0)["behind"] is True


def node(cpu: float, peers: int, requests: float = 10.0, entries: float = 100.0) -> dict:
    return {"cpu_percent": {"total": cpu}, "records_per_min": 60.0, "p2pd_mb_per_min": 1.0,
            "dht_requests_per_min": requests, "entries_per_min": entries, "peers": peers}


def run(pop, n: int, p: int, nodes: list, share: float = 0.5, behind: bool = False) -> dict:
    return {"nodes": n, "population": p, "identities": n + p, "bits": pop.steady_bits(n + p),
            "machine_cpu_share": share, "per_node": {**pop.bench.spread_of(nodes), "peers": pop.peers_spread(nodes)},
            "population_process": {**pop.NO_POPULATION, "cpu_percent": {"total": 12.5}, "stored_share": 0.99,
                                   "behind": behind}}


def test_rows_and_slopes_against_the_identities(pop):
    small = run(pop, 8, 0, [node(2.0, 7), node(4.0, 7), node(3.0, 7)])
    large = run(pop, 8, 1016, [node(6.0, 60, 20.0, 400.0), node(9.0, 64, 20.0, 400.0), node(6.0, 70, 20.0, 400.0)])
    assert small["per_node"]["peers"] == {"median": 7.0, "max": 7.0}
    # 8 -> 1024 identities (x128): CPU 3 -> 6 (x2), peers 7 -> 64, requests x2, entries x4
    assert pop.slopes([small, large]) == {"8": {"cpu_percent": 0.143, "records_per_min": 0.0, "p2pd_mb_per_min": 0.0,
                                                "dht_requests_per_min": 0.143, "entries_per_min": 0.286,
                                                "peers": 0.456}}
    assert pop.table_rows([small, large]) == [
        ["8", "0", "8", "3.00", "60.0", "1.00", "10.0", "100", "7.00", "1.3x", "12.5", "99%"],
        ["8", "1016", "1024", "6.00", "60.0", "1.00", "20.0", "400", "64.0", "1.5x", "12.5", "99%"]]
    # a saturated machine (*) or a population that fell behind (!) is marked and left out of the slopes
    hot = run(pop, 8, 2048, [node(50.0, 64)], share=0.95)
    lagging = run(pop, 8, 4096, [node(50.0, 64)], behind=True)
    assert [r[0] for r in pop.table_rows([hot, lagging])] == ["8*", "8!"]
    assert pop.slopes([small, large, hot, lagging]) == pop.slopes([small, large])
    assert pop.slope_row("8", pop.slopes([small])["8"]) == ["slope", "N=8", "", *["-"] * 6, "", "", ""]


def test_the_table_fits_80_columns(pop):
    from rich.console import Console

    runs = [run(pop, 32, p, [node(123.0, 64, 1234.0, 12345.0)], share=0.95, behind=True) for p in (0, 2048)]
    console = Console(width=80, record=True)
    console.print(pop.render(runs, "local.yaml, stores each"))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text  # no column cut short
    assert "ent/m" in text and "peers" in text

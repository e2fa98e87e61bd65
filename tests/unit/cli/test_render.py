"""cli/render.py: what `swarmnode status` shows (plan, summaries, storage, limits hit) and the swarm table,
within 80 columns."""
from rich.console import Console

from swarmnode.cli.render import SWARM_COLUMNS, status_view, swarm_table, PEER_COLUMNS, peers_table
from swarmnode.status.snapshot import empty_summaries_status
from tests.unit.status.helpers import SUMMARIES, status


def test_status_view_shows_the_plan_and_idle_shares_in_80_columns():
    from rich.console import Console

    from swarmnode.cli.render import status_view
    from tests.unit.status.helpers import status

    plan = {"local_rollouts": 3, "external_rollouts": 3, "external_wait_s": 0.017, "steps_per_window": 23.61,
            "reason": "slow: fewer so >= 24 steps fit a window; s = a + b x groups: generate 0 + 0.088, "
                      "train 0 + 0.068; peers supply 180 groups/s"}
    training = {"model": "bundled:tiny-policy", "plan": plan, "generator_idle_share": 0.285, "trainer_idle_share": 0.0153,
                "staleness_local": {"0": 95, "1": 1029}, "staleness_external": {"0": 42, "1": 446, "2": 300},
                "external_waits": 12, "external_waits_skipped": 40}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(training=training)))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "I/J 3/3, wait 0.017 s, 23.61 steps/window" in flat and "peers supply 180 groups/s" in flat
    assert "trainer idle share 1.5%" in flat and "staleness external 0:42 1:446 2:300" in flat
    assert "generator idle share 28.5%" in flat
    assert "external waits 12" in flat and "external waits skipped 40" in flat
    assert "gpu memory" not in flat  # a CPU node has none


def test_status_view_shows_gpu_memory_in_80_columns():
    gpu = {"device": "cuda:0", "in_use_bytes": 12 * 2**30, "peak_bytes": 30 * 2**30, "total_bytes": 80 * 2**30}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(training={"model": "random:0.5b", "gpu_memory": gpu, "generate_tokens_per_s": 17500.0,
                                               "train_tokens_per_s": 68500.0})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "gpu memory 12.00 GiB of 80.00 GiB in use (peak 30.00 GiB) on cuda:0" in flat, flat
    assert "generate tokens per s 17,500" in flat and "train tokens per s 68,500" in flat, flat  # both sides


def test_status_view_shows_summaries_in_80_columns():
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(summaries=SUMMARIES, training={"model": "bundled:tiny-policy"})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "gradient summaries" in flat and "on, merging with same-base peers (base a1c04df6ea1c2c67)" in flat
    assert "12 sent, 25 fetched, 21 merged (2 last step)" in flat
    assert "rejected 3 (non finite 1, norm too large 2)" in flat
    assert "4 other base, 1 too stale, 5 low trust, 2 vetoed, 1 repeated" in flat
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


def test_status_view_shows_storage_in_80_columns():
    storage = {
        "rollouts_bytes": 3 * 2**20 + 2**19, "metrics_bytes": 2048, "checkpoint_failures": 2, "last_checkpoint": "v00000040",
        "last_checkpoint_error": "OSError: [Errno 28] No space left on device: '/home/someone/.swarmnode/checkpoints/.tmp-v00000050-123'",
        "last_maintenance": {"at": 1088.0, "seconds": 0.1, "rollouts": {"rows_deleted_age": 3, "rows_deleted_size": 4},
                             "metrics": {"rows_downsampled": 600, "rows_written": 1, "rows_deleted_size": 5}},
    }
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(storage=storage, training={"model": "bundled:tiny-policy"})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "3.5 MiB" in text and "2.0 KiB" in text and "v00000040" in text
    assert "2 in a row: OSError: [Errno 28] No space left on device" in text
    assert "12s ago: 12 rows pruned, 600 metrics downsampled" in text
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status()))
    assert "rollouts.sqlite" not in console.export_text()


def test_status_view_shows_limits_hit_in_80_columns():
    limits = {"peers": 64, "tracked_senders": 64, "serve_refused": 17643, "accept_deferred": 0, "fetch_waits": 3083,
              "values_over_key_cap": 39903, "peers_evicted": 1264, "senders_evicted": 3275}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(limits=limits)))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "64 peers, 64 senders held; fetch waits 3083, peers evicted 1264, senders evicted 3275," in flat
    assert "serve refused 17643, values over key cap 39903" in flat and "accept deferred" not in flat
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status()))
    assert "0 peers, 0 senders held; none" in console.export_text()


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


def test_full_view_shows_bytes_per_batch_as_a_size():
    from rich.console import Console

    from tests.unit.status.helpers import status as sample_status

    doc = sample_status()
    doc["rollouts"] = {**(doc.get("rollouts") or {}), "bytes_per_batch": 2600.0}
    console = Console(width=80, record=True)
    console.print(status_view(doc))
    text = console.export_text()
    assert "bytes per batch" in text and "2.5 KiB" in text and "2600.000" not in text


def test_numbers_for_people():
    from swarmnode.cli.format import number

    assert [number(x) for x in (17500.0, 9999.4, 9999.5, 0.01234, -12345.6, 3, None)] == \
        ["17,500", "9999", "10,000", "0.01234", "-12,346", "3", "-"]
    assert [number(x) for x in (float("nan"), float("inf"))] == ["nan", "inf"]


def test_status_view_has_the_headlines_network_peers_and_problems_lines():
    from rich.console import Console

    from swarmnode.cli.render import status_view
    from tests.unit.status.helpers import status

    doc = status(training={"model": "bundled:tiny-policy", "phase": "failed: unknown task 'sum4'",
                           "error": "unknown task 'sum4'"},
                 rollouts={"gossip_time_share": 0.065})
    doc["network"] = {"reachability": "public", "observed_ip": "198.18.0.5"}
    doc["routing_table_size"] = 7
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(doc))
    flat = " ".join(console.export_text().split())
    assert "network public at 198.18.0.5" in flat and "peers none yet (routing table 7)" in flat
    assert "problems training failed: unknown task 'sum4'" in flat
    assert "gossip time share 6.5%" in flat  # a share of time, as the headline writes it


def test_status_view_shows_peers_supply_and_staleness_in_80_columns():
    from rich.console import Console

    from swarmnode.cli.render import status_view
    from tests.unit.status.helpers import status

    rows = [{"peer_id": f"12D3KooWPeer{i:02d}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "claimed_groups_per_s": 1e9,
             "observed_groups_per_s": 0.42, "planned_groups_per_s": 0.42, "trained": 120 - i, "mean_staleness": 1.25}
            for i in range(10)]
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(training={"model": "bundled:tiny-policy", "peer_supply": rows})))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "peers' supply, as the plan saw it; 2 more: --json" in flat
    assert "1000.0M 0.42 0.42 120 1.25" in flat  # a claim of 1e9 groups/s, and what the plan counts on

"""status/prometheus.py: /metrics serves every series docs/status.md lists ("Prometheus"), each
with its type and a HELP text; a bootstrap node (no model) serves its state, peers and relay load
and no training series but the phase; and the values follow the status document."""
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from swarmnode.status.prometheus_swarm import TRANSPORT_COUNTERS
from tests.unit.status.helpers import SUMMARIES, bootstrap_status, scrape_text, status, training_status

DOC = (Path(__file__).parents[3] / "docs" / "status.md").read_text(encoding="utf-8")

# Every series a training node on the hivemind transport serves, by type: a series that goes
# away or changes type breaks dashboards and alerts (docs/grafana, docs/prometheus).
COUNTERS = """
    swarmnode_messages_accepted_total swarmnode_messages_rejected_total
    swarmnode_network_dialback_checks_total swarmnode_relay_forwarded_requests_total
    swarmnode_relay_forwarded_bytes_total swarmnode_relay_forwards_failed_total
    swarmnode_relay_forwards_refused_total swarmnode_network_relayed_requests_total
    swarmnode_network_delivered_requests_total swarmnode_network_deliveries_refused_total
    swarmnode_network_failed_requests_total swarmnode_network_direct_upgrades_total
    swarmnode_network_dialbacks_answered_total swarmnode_dht_gets_total swarmnode_dht_stores_total
    swarmnode_dht_entries_read_total swarmnode_dht_entries_judged_total swarmnode_network_pushed_entries_total
    swarmnode_network_pushed_entries_refused_total swarmnode_network_pubsub_streams_ended_on_bad_rpcs_total
    swarmnode_network_streams_refused_total
    swarmnode_network_requests_too_large_total swarmnode_network_hole_punches_tried_total
    swarmnode_network_hole_punches_succeeded_total swarmnode_relay_refused_full_total
    swarmnode_training_steps_total swarmnode_training_steps_without_spread_total
    swarmnode_training_dropped_stale_total swarmnode_training_groups_generated_total
    swarmnode_training_external_groups_trained_total swarmnode_training_external_waits_total
    swarmnode_training_external_waits_skipped_total swarmnode_rollouts_batches_published_total
    swarmnode_rollouts_groups_published_total swarmnode_rollouts_published_bytes_total
    swarmnode_rollouts_announcements_total swarmnode_rollouts_batches_fetched_total
    swarmnode_rollouts_fetched_bytes_total swarmnode_rollouts_groups_accepted_total
    swarmnode_rollouts_groups_rejected_total swarmnode_rollouts_groups_rejected_by_reason_total
    swarmnode_rollouts_groups_skipped_other_task_total
    swarmnode_rollouts_fetch_requests_total swarmnode_rollouts_empty_fetches_total
    swarmnode_rollouts_fetch_failures_total swarmnode_rollouts_fetches_deferred_total
    swarmnode_rollouts_requests_served_total swarmnode_rollouts_requests_held_total
    swarmnode_rollouts_peers_ignored_total swarmnode_rollouts_store_errors_total swarmnode_swarm_cpu_seconds_total
    swarmnode_summaries_sent_total swarmnode_summaries_fetched_total swarmnode_summaries_merged_total
    swarmnode_summaries_skipped_other_base_total swarmnode_summaries_stale_dropped_total
    swarmnode_summaries_outer_steps_total swarmnode_summaries_merge_seconds_total
    swarmnode_summaries_merge_cpu_seconds_total swarmnode_summaries_down_weighted_total
    swarmnode_summaries_clipped_total swarmnode_summaries_harmful_total swarmnode_summaries_rejected_total
    swarmnode_summaries_skipped_total swarmnode_limits_peers_evicted_total swarmnode_limits_senders_evicted_total
    swarmnode_limits_rejection_senders_evicted_total swarmnode_limits_values_over_key_cap_total
    swarmnode_limits_serve_refused_total swarmnode_limits_accept_deferred_total swarmnode_limits_fetch_waits_total
    swarmnode_limits_held_refused_total
"""
GAUGES = """
    swarmnode_node_state swarmnode_node_info swarmnode_start_time_seconds swarmnode_uptime_seconds swarmnode_window
    swarmnode_routing_table_size swarmnode_join_joined swarmnode_join_attempts swarmnode_join_initial_peers
    swarmnode_peers swarmnode_peers_by_state swarmnode_peers_by_reachability swarmnode_incompatible_peers
    swarmnode_other_window_peers
    swarmnode_network_reachability swarmnode_network_relays swarmnode_network_relaying
    swarmnode_network_direct_peers swarmnode_relay_reservations swarmnode_relay_capacity
    swarmnode_relay_forwards_in_flight swarmnode_relay_max_forwards swarmnode_relay_forwards_last_minute
    swarmnode_training_phase swarmnode_training_running swarmnode_training_steps_across_restarts
    swarmnode_training_steps_without_spread_in_a_row swarmnode_training_policy_version
    swarmnode_training_reward_mean swarmnode_training_local_reward_mean swarmnode_training_heldout_accuracy
    swarmnode_training_generate_tokens_per_second swarmnode_training_train_samples_per_second
    swarmnode_training_train_tokens_per_second swarmnode_training_seconds_per_step swarmnode_training_slowdown
    swarmnode_training_external_pool_groups swarmnode_training_generator_idle_ratio
    swarmnode_training_trainer_idle_ratio swarmnode_gpu_memory_in_use_bytes swarmnode_gpu_memory_peak_bytes
    swarmnode_gpu_memory_total_bytes swarmnode_rollouts_bytes_per_batch swarmnode_rollouts_latency_p50_seconds
    swarmnode_rollouts_latency_p99_seconds swarmnode_rollouts_gossip_cpu_ratio swarmnode_rollouts_gossip_busy_ratio
    swarmnode_rollouts_senders swarmnode_summaries_active swarmnode_summaries_bytes_per_summary
    swarmnode_summaries_dense_bytes swarmnode_summaries_compression_ratio
    swarmnode_summaries_last_merge_age_seconds swarmnode_summaries_partners_last
    swarmnode_summaries_outer_steps_across_restarts
    swarmnode_summaries_agreement_scale swarmnode_summaries_judged_peers swarmnode_storage_rollouts_bytes
    swarmnode_storage_metrics_bytes swarmnode_storage_checkpoint_failures
    swarmnode_storage_last_maintenance_seconds swarmnode_limits_tracked_senders
"""
HISTOGRAMS = "swarmnode_training_staleness_versions swarmnode_training_step_seconds swarmnode_rollouts_latency_seconds"
LIBP2P_ONLY = {f"{name}_total" for name, _, _ in TRANSPORT_COUNTERS.values() if "_dht_" not in name}


def expected() -> dict[str, str]:
    return {**dict.fromkeys(COUNTERS.split(), "counter"), **dict.fromkeys(GAUGES.split(), "gauge"),
            **dict.fromkeys(HISTOGRAMS.split(), "histogram")}


def served(doc: dict) -> dict[str, str]:
    """Series name (counters with `_total`) -> type, as a Prometheus server parses the scrape."""
    return {f.name + ("_total" if f.type == "counter" else ""): f.type
            for f in text_string_to_metric_families(scrape_text(doc))}


def documented() -> dict[str, str]:
    """name -> type of the table under docs/status.md's "Prometheus" heading."""
    section = DOC[DOC.index("## Prometheus"):]
    return dict(re.findall(r"^\| `(swarmnode_\w+)` \| (counter|gauge|histogram) \|", section, re.M))


def training_node() -> dict:
    doc = training_status()
    doc["messages"] = {"accepted": {"peer_record": 3}, "rejected": {"expired": 2}, "rejected_by_sender": {}}
    return doc


def test_a_training_node_serves_every_series_with_its_type():
    assert served(training_node()) == {k: v for k, v in expected().items() if k not in LIBP2P_ONLY}


def test_the_libp2p_transport_counters_are_served_once_counted():
    doc = training_node()
    doc["network"]["counters"].update(dict.fromkeys(TRANSPORT_COUNTERS, 1))
    assert served(doc) == expected()


def test_docs_list_every_series_with_its_type():
    assert documented() == expected()


def test_every_series_has_help_text():
    assert [f.name for f in text_string_to_metric_families(scrape_text(training_node())) if not f.documentation] == []


def test_no_gauge_shares_a_counters_name():
    """A gauge `x` beside a counter `x` (served as `x_total`) is one name twice: prometheus-client
    refuses it in a registry, and OpenMetrics declares `# TYPE x` twice."""
    names = [f.name for f in text_string_to_metric_families(scrape_text(training_node()))]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []


def test_steps_are_a_counter_of_this_run_beside_a_gauge_across_restarts():
    text = scrape_text(training_node())
    for line in ("swarmnode_training_steps_total 640.0", "# TYPE swarmnode_training_steps_total counter",
                 "swarmnode_training_steps_across_restarts 1240.0",
                 "# TYPE swarmnode_training_steps_across_restarts gauge"):
        assert line in text.splitlines(), line
    assert "swarmnode_training_steps " not in text  # the gauge it was before


def test_steps_without_spread_are_a_counter_and_those_in_a_row_a_gauge():
    text = scrape_text(training_node()).splitlines()
    for line in ("swarmnode_training_steps_without_spread_total 9.0",
                 "swarmnode_training_steps_without_spread_in_a_row 2.0",
                 "# TYPE swarmnode_training_steps_without_spread_in_a_row gauge"):
        assert line in text, line


def test_a_bootstrap_node_serves_state_peers_and_relay_load_without_training_series():
    series = served(bootstrap_status())
    for name in ("swarmnode_node_state", "swarmnode_peers", "swarmnode_peers_by_state", "swarmnode_network_reachability",
                 "swarmnode_relay_reservations", "swarmnode_relay_forwarded_bytes_total", "swarmnode_training_running",
                 "swarmnode_training_phase"):
        assert name in series, name
    training = {n for n in series if n.startswith(("swarmnode_training_", "swarmnode_rollouts_", "swarmnode_gpu_"))}
    assert training == {"swarmnode_training_running", "swarmnode_training_phase"}
    lines = scrape_text(bootstrap_status()).splitlines()
    for line in ('swarmnode_training_phase{phase="no_model"} 1.0', "swarmnode_training_running 0.0",
                 'swarmnode_node_state{state="running"} 1.0', "swarmnode_relay_forwarded_requests_total 12.0",
                 'swarmnode_network_reachability{reachability="public"} 1.0', "swarmnode_network_relaying 1.0"):
        assert line in lines, line
    assert set(series.items()) <= set(expected().items())


def test_summaries_series():
    text = scrape_text(status(summaries=SUMMARIES)).splitlines()
    for line in ("swarmnode_summaries_sent_total 12.0", "swarmnode_summaries_merged_total 21.0",
                 "swarmnode_summaries_fetched_total 25.0", "swarmnode_summaries_outer_steps_total 5.0",
                 "swarmnode_summaries_outer_steps_across_restarts 12.0",
                 'swarmnode_summaries_rejected_total{reason="norm_too_large"} 2.0',
                 'swarmnode_summaries_rejected_total{reason="non_finite"} 1.0',
                 "swarmnode_summaries_bytes_per_summary 43520.0", "swarmnode_summaries_dense_bytes 4.210688e+06",
                 "swarmnode_summaries_last_merge_age_seconds 7.5", "swarmnode_summaries_active 1.0",
                 "swarmnode_summaries_merge_seconds_total 3.25", "swarmnode_summaries_merge_cpu_seconds_total 1.5",
                 'swarmnode_summaries_skipped_total{reason="low_trust"} 5.0', "swarmnode_summaries_harmful_total 3.0",
                 "swarmnode_summaries_down_weighted_total 9.0", "swarmnode_summaries_clipped_total 14.0",
                 'swarmnode_summaries_judged_peers{trust="none"} 1.0', 'swarmnode_summaries_judged_peers{trust="full"} 1.0',
                 "swarmnode_summaries_agreement_scale 0.0312"):
        assert line in text, line
    empty = scrape_text(status())
    assert "swarmnode_summaries_sent_total 0.0" in empty
    # Null until measured: left out, not 0.
    assert "swarmnode_summaries_bytes_per_summary " not in empty and "swarmnode_summaries_last_merge_age_seconds " not in empty


def test_a_document_without_network_serves_no_network_series():
    assert not [line for line in scrape_text(status()).splitlines()
                if line.startswith(("swarmnode_relay_", "swarmnode_network_", "swarmnode_dht_"))]

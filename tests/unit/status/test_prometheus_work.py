"""status/prometheus_work.py: training phase and counters, the staleness, step-time and rollout
latency histograms, rollout rejections by reason, rollout senders by standing, storage and limits,
as the document has them."""
from tests.unit.status.helpers import TRAINING, training_status, scrape_lines


def test_a_failed_phase_is_failed_whatever_the_reason():
    text = scrape_lines(training_status(training={**TRAINING, "running": False, "phase": "failed: CUDA out of memory"}))
    assert 'swarmnode_training_phase{phase="failed"} 1.0' in text
    assert 'swarmnode_training_phase{phase="training"} 0.0' in text
    assert "swarmnode_training_running 0.0" in text


def test_training_counters_and_gauges():
    text = scrape_lines(training_status())
    for line in ("swarmnode_training_steps_total 640.0", "swarmnode_training_steps_across_restarts 1240.0",
                 "swarmnode_training_dropped_stale_total 3.0",
                 "swarmnode_training_groups_generated_total 4960.0", "swarmnode_training_policy_version 1234.0",
                 "swarmnode_training_generate_tokens_per_second 1534.25", "swarmnode_training_seconds_per_step 1.18",
                 "swarmnode_gpu_memory_total_bytes 1.7179869184e+10"):
        assert line in text, line


def test_staleness_histogram_is_cumulative_by_origin():
    text = scrape_lines(training_status())
    for line in ('swarmnode_training_staleness_versions_bucket{le="0",origin="external"} 32.0',
                 'swarmnode_training_staleness_versions_bucket{le="1",origin="external"} 478.0',
                 'swarmnode_training_staleness_versions_bucket{le="2",origin="external"} 778.0',
                 'swarmnode_training_staleness_versions_bucket{le="+Inf",origin="external"} 778.0',
                 'swarmnode_training_staleness_versions_count{origin="local"} 1124.0',
                 'swarmnode_training_staleness_versions_sum{origin="external"} 1046.0'):
        assert line in text, line


def test_step_time_histogram_is_served_as_the_document_counts_it():
    text = scrape_lines(training_status())
    for line in ("# TYPE swarmnode_training_step_seconds histogram",
                 'swarmnode_training_step_seconds_bucket{le="0.5"} 0.0',
                 'swarmnode_training_step_seconds_bucket{le="2"} 1230.0',
                 'swarmnode_training_step_seconds_bucket{le="+Inf"} 1240.0',
                 "swarmnode_training_step_seconds_count 1240.0", "swarmnode_training_step_seconds_sum 1463.25"):
        assert line in text, line
    loading = training_status(training={**TRAINING, "step_seconds_histogram": None})  # not measured: left out
    assert not [line for line in scrape_lines(loading) if line.startswith("swarmnode_training_step_seconds")]


def test_rollout_rejections_by_reason_are_a_counter_of_their_own_beside_the_unlabelled_total():
    text = scrape_lines(training_status())
    for line in ("# TYPE swarmnode_rollouts_groups_rejected_by_reason_total counter",
                 'swarmnode_rollouts_groups_rejected_by_reason_total{reason="prompt_mismatch"} 4.0',
                 'swarmnode_rollouts_groups_rejected_by_reason_total{reason="too_long"} 3.0',
                 "swarmnode_rollouts_groups_rejected_total 7.0"):
        assert line in text, line
    # one label set per name: the total is never also served labelled, nor the reasons unlabelled
    assert not [line for line in text if line.startswith("swarmnode_rollouts_groups_rejected_total{")]
    assert "swarmnode_rollouts_groups_rejected_by_reason_total 0.0" not in text


def test_rollout_latency_histogram_and_outcomes():
    text = scrape_lines(training_status())
    for line in ('swarmnode_rollouts_latency_seconds_bucket{le="0.5"} 900.0',
                 'swarmnode_rollouts_latency_seconds_bucket{le="+Inf"} 1500.0',
                 "swarmnode_rollouts_latency_seconds_sum 700.5", "swarmnode_rollouts_latency_p99_seconds 2.3",
                 "swarmnode_rollouts_groups_published_total 4960.0", "swarmnode_rollouts_groups_accepted_total 8400.0",
                 "swarmnode_rollouts_groups_rejected_total 7.0", "swarmnode_rollouts_published_bytes_total 9e+06",
                 'swarmnode_rollouts_senders{standing="ignored"} 1.0',
                 'swarmnode_rollouts_senders{standing="active"} 1.0'):
        assert line in text, line


def test_storage_and_limits():
    text = scrape_lines(training_status())
    for line in ("swarmnode_storage_checkpoint_failures 1.0", "swarmnode_storage_last_maintenance_seconds 0.25",
                 "swarmnode_limits_tracked_senders 2.0", "swarmnode_limits_fetch_waits_total 4.0"):
        assert line in text, line

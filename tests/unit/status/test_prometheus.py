"""status/prometheus.py: the Prometheus series of the status document's `summaries` object and
of `network.relay_load`."""
import re
from pathlib import Path

from prometheus_client import generate_latest

from swarmnode.status.prometheus import make_registry
from tests.unit.status.helpers import SUMMARIES, status


DOC = (Path(__file__).parents[3] / "docs" / "status.md").read_text(encoding="utf-8")


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


def test_prometheus_relay_load():
    load = {"reservations": 3, "capacity": 32, "refused_full": 4, "forwards_in_flight": 1, "max_forwards": 128,
            "forwards_last_minute": 40}
    text = generate_latest(make_registry(lambda: status(network={"relay_load": load}))).decode().splitlines()
    for line in ("swarmnode_relay_reservations 3.0", "swarmnode_relay_capacity 32.0",
                 "swarmnode_relay_refused_full_total 4.0", "swarmnode_relay_forwards_in_flight 1.0",
                 "swarmnode_relay_max_forwards 128.0", "swarmnode_relay_forwards_last_minute 40.0"):
        assert line in text, line
    assert not [line for line in generate_latest(make_registry(lambda: status())).decode().splitlines()
                if line.startswith("swarmnode_relay_")]
    assert re.search(r"swarmnode_relay_\{reservations,capacity", DOC)

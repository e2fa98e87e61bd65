"""status/progress_line.py: the log's periodic one-line progress line of a status document."""
from swarmnode.status.snapshot import TRAINING_NOT_RUNNING
from swarmnode.status.progress_line import progress_line
from tests.unit.cli.helpers import realistic_status
from tests.unit.status.helpers import status


def test_a_training_node_in_one_line():
    line = progress_line(realistic_status())
    assert line == ("summary: state running; step 1240 (policy v1234), reward 0.688, held-out accuracy 0.562; "
                    "peers 3 (3 same base); groups out 4960, in 8400 (7 rejected); summaries 12 sent, 21 merged")
    assert "\n" not in line


def test_peers_of_another_base_and_a_stopped_training_are_named():
    doc = realistic_status()
    doc["peers"][0]["base_fingerprint"] = "0123456789abcdef"
    doc["peers"][1]["base_fingerprint"] = ""  # a node without a model: no base, not another one
    doc["training"] = {**doc["training"], "phase": "done", "heldout_accuracy": None}
    line = progress_line(doc)
    assert "peers 3 (1 same base, 1 other base)" in line
    assert "step 1240 (policy v1234) (done), reward 0.688, held-out accuracy -" in line


def test_a_node_without_a_model_or_still_loading_one():
    assert progress_line(status()) == "summary: state running; no model; peers 0"
    loading = status(training={**TRAINING_NOT_RUNNING, "model": "bundled:tiny-policy", "phase": "loading model"})
    assert progress_line(loading).startswith("summary: state running; training loading model; peers 0")

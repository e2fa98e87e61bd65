"""A home that trained one model refuses to start on another (one line, no traceback) until
`swarmnode reset-training` moves the old training aside; then it trains the new model with the
same peer id."""
import os
import signal
import subprocess
import sys

from swarmnode.home import NodeHome, init_home
from swarmnode.node.local_swarm import LocalNode, wait_ready
from swarmnode.store.checkpoint_model import read_checkpoint_model
from swarmnode.store.checkpoints import latest_checkpoint
from tests.integration.conftest import status_json, wait_until

TRAINING = ("\ntraining:\n  tasks: [sum2]\n  local_rollouts: 2\n  samples_per_prompt: 2\n  external_rollouts: 0\n"
            "  max_new_tokens: 4\n  eval_size: 2\n  eval_every: 1000\n  checkpoint_every: 1\n  max_steps: 1\n"
            "  threads: 1\n")


def start(home: NodeHome) -> LocalNode:
    """`swarmnode run --home HOME`, once its status endpoint answers."""
    node = LocalNode(0, home)
    node.stdout_path.parent.mkdir(parents=True, exist_ok=True)
    with open(node.stdout_path, "wb") as console:
        node.process = subprocess.Popen([sys.executable, "-m", "swarmnode", "run", "--home", str(home.root)],
                                        stdout=console, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        wait_ready(node)
    except BaseException:
        node.process.kill()
        raise
    return node


def stop(node: LocalNode) -> None:
    node.process.send_signal(signal.SIGTERM)
    assert node.process.wait(timeout=60) == 0


def test_home_refuses_another_model_until_its_training_is_reset(tmp_path, local_config):
    home = NodeHome(tmp_path / "home")
    init_home(home.root, local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
              + TRAINING)
    node = start(home)
    try:
        saved = wait_until(lambda: latest_checkpoint(home.root / "checkpoints"), timeout=180, what="a checkpoint")
        peer_id = status_json(home)["peer_id"]
    finally:
        stop(node)
    assert read_checkpoint_model(saved).name_or_path == "bundled:tiny-policy"

    home.config.write_text(home.config.read_text().replace("bundled:tiny-policy", "bundled:tiny-sum3"))
    refused = subprocess.run([sys.executable, "-m", "swarmnode", "run", "--home", str(home.root)],
                             capture_output=True, text=True, timeout=180)
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "Traceback" not in output, output
    [line] = [line for line in output.splitlines() if "exiting:" in line or line.startswith("error:")]
    for text in (f"node home {home.root} holds the training of bundled:tiny-policy (base fingerprint",
                 "model.name_or_path is bundled:tiny-sum3", "use another --home",
                 f"swarmnode reset-training --home {home.root}"):
        assert text in line, line
    assert "resumed from" not in output

    reset = subprocess.run([sys.executable, "-m", "swarmnode", "reset-training", "--home", str(home.root), "--yes"],
                           capture_output=True, text=True, timeout=60)
    assert reset.returncode == 0 and "moved checkpoints" in reset.stdout, reset.stdout + reset.stderr
    node = start(home)
    try:
        training = wait_until(lambda: (t := status_json(home)["training"])["policy_version"] is not None and t,
                              timeout=180, what="training of the new model")
        assert training["model"] == "bundled:tiny-sum3" and status_json(home)["peer_id"] == peer_id
    finally:
        stop(node)

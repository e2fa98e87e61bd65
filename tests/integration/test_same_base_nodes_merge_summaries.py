"""Gradient summaries between real daemons: published, fetched over libp2p, checked, merged.

Three real `swarmnode run` processes on 127.0.0.1, no rollout sharing:
- node0 and node1: the bundled tiny policy (one base): each publishes a compressed summary
  every 4 steps and merges the other's;
- node2: a tiny policy of the same architecture and vocabulary but other weights (another
  base): alone with its base, it publishes and merges nothing and trains as a lone node.
  (A summary of another base that does arrive is rejected:
  tests/integration/test_hostile_summaries_are_rejected_and_never_merged.py.)
Then (on hivemind) node1 is killed with SIGKILL and restarted: it resumes its outer loop from the
checkpoint, with its trust in node0.
"""
import json
import math

import pytest
from safetensors.torch import load_file

from swarmnode.node.local_swarm import LocalSwarm
from swarmnode.policy.loading import resolve_model_path
from swarmnode.swarm.peers import short_id
from tests.integration.conftest import BOTH_TRANSPORTS, status_json, transport_env, wait_until


@pytest.fixture
def summaries_config(tmp_path, local_config):
    path = tmp_path / "summaries.yaml"
    path.write_text(
        local_config.read_text().replace("name_or_path: null", "name_or_path: bundled:tiny-policy")
        + "\ntraining:\n  local_rollouts: 4\n  external_rollouts: 0\n  samples_per_prompt: 4\n"
          "  eval_every: 1000\n  eval_size: 8\n  checkpoint_every: 8\n  threads: 1\n"
          "\nsummaries:\n  every_steps: 4\n  fetch_interval_s: 0.5\n  announce_interval_s: 1\n"
    )
    return path


def other_base(tmp_path):
    """The bundled policy's files with one weight changed: same architecture and vocabulary
    (same model fingerprint), another base."""
    import shutil

    import torch
    from safetensors.torch import save_file

    target = tmp_path / "other-base"
    shutil.copytree(resolve_model_path("bundled:tiny-policy"), target)
    weights = load_file(str(target / "model.safetensors"))
    name = sorted(weights)[0]
    weights[name] = weights[name] + 0.01 * torch.randn_like(weights[name])
    save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    return target


@BOTH_TRANSPORTS
def test_same_base_nodes_merge_summaries_and_resume_the_outer_loop(tmp_path, summaries_config, transport):
    env = {2: {"SWARMNODE__MODEL__NAME_OR_PATH": str(other_base(tmp_path))}}
    swarm = LocalSwarm(tmp_path / "swarm", 3, summaries_config, node_env=lambda i: {**env.get(i, {}), **transport_env(transport)})
    with swarm:
        swarm.start()
        homes = [n.home for n in swarm.nodes]
        assert status_json(homes[0])["network"]["transport"] == transport

        def merged_both_ways():
            s = [status_json(h) for h in homes[:2]]
            return all(x["summaries"]["merged"] >= 2 for x in s) and s

        s0, s1 = wait_until(merged_both_ways, timeout=240, interval=1.0, what="node0 and node1 to merge each other's summaries")
        s2 = status_json(homes[2])
        assert s0["summaries"]["base_fingerprint"] == s1["summaries"]["base_fingerprint"] != s2["summaries"]["base_fingerprint"]
        assert s0["model_fingerprint"] == s2["model_fingerprint"]  # same architecture and vocabulary
        for s in (s0, s1):
            summ = s["summaries"]
            assert summ["sent"] >= 1 and summ["fetched"] >= 2 and summ["active"]
            assert summ["rejected"] == {}
            assert summ["dense_bytes"] / summ["bytes_per_summary"] >= 50
            assert summ["outer_steps"] >= 2 and summ["last_merge_age_s"] is not None
            assert 0 < summ["merge_cpu_seconds"] <= summ["merge_seconds"] + 0.05  # CPU time of the work, not waits
        # node2 is alone with its base: it sends nothing and merges nothing, and trains on.
        assert s2["summaries"]["sent"] == 0 and s2["summaries"]["merged"] == 0 and not s2["summaries"]["active"]
        assert s2["training"]["steps"] > 0
        base = s0["summaries"]["base_fingerprint"]
        assert sorted(p["base_fingerprint"] == base for p in s0["peers"]) == [False, True]
        # ...and node0's log names node2 as a peer of another base, once.
        other = [line for line in swarm.nodes[0].log_path.read_text().splitlines() if "started from other base weights" in line]
        assert len(other) == 1 and f"peer {short_id(s2['peer_id'])} started from other base weights " \
            f"(base {s2['summaries']['base_fingerprint']}, this node's {base}): " in other[0], other
        assert other[0].endswith("gradient summaries are not exchanged with it")

        if transport == "libp2p":
            return  # the resume below is the outer loop's, whatever the transport: on libp2p, a
            # restart on the same identity is tests/contract's (restart after SIGKILL); CI time
        # The outer state goes into checkpoints; a SIGKILLed node resumes it. (node1: a joiner
        # finds the swarm again through its initial peer, node0.)
        home = homes[1]
        wait_until(lambda: _saved_outer_steps(home.root) >= 2, timeout=120, what="a checkpoint with the outer state")
        swarm.kill(1)
        saved = _saved_outer_steps(home.root)
        latest = home.root / "checkpoints" / (home.root / "checkpoints" / "latest").read_text().strip()
        outer = load_file(str(latest / "outer.safetensors"))
        assert {k.split(".", 1)[0] for k in outer} == {"anchor", "momentum", "residual", "direction"}
        assert all(bool(v.isfinite().all()) for v in outer.values())
        swarm.restart(1)
        resumed = wait_until(lambda: (x := status_json(home))["summaries"]["outer_steps"] > saved and x,
                             timeout=120, what="node1 to resume its outer loop")
        assert resumed["summaries"]["outer_steps"] > saved
        # Its trust in node0 comes back with it (a restart pardons no one), and its outer steps
        # judge node0's summaries again: merged, or skipped while that trust is low (on the tiny
        # policy an honest peer's agreement is close to a coin toss, so its trust wanders).
        peer0 = s0["peer_id"]
        assert resumed["summaries"]["trust"][peer0]["judged"] >= 1

        def judged_again():
            t = status_json(home)["summaries"]["trust"].get(peer0)
            return t is not None and t["merged"] + t["skipped"] >= 1 and t
        wait_until(judged_again, timeout=120, what="node1 to judge node0's summaries again after the restart")


def _saved_outer_steps(root) -> int:
    try:
        latest = (root / "checkpoints" / "latest").read_text().strip()
        meta = json.loads((root / "checkpoints" / latest / "state.json").read_text())
    except (OSError, ValueError):
        return 0
    steps = meta.get("extra", {}).get("outer", {}).get("outer_steps", 0)
    return steps if isinstance(steps, int) and not math.isnan(steps) else 0

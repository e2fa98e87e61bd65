"""The progress line: one line of a status document for the node's log (node/logs.progress_loop):
training, peers, rollout sharing and gradient summaries, in place of a line per evaluation. Its text
still begins "summary:" (tests, docs and operators read it)."""
from __future__ import annotations

from typing import Any


def _figure(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def training_part(t: dict[str, Any]) -> str:
    if not t.get("model"):
        return "no model"
    if t.get("policy_version") is None:
        return f"training {t.get('phase') or '-'}"
    phase = "" if t.get("phase") == "training" else f" ({t.get('phase')})"
    return (f"step {t.get('steps')} (policy v{t['policy_version']}){phase}, reward {_figure(t.get('reward_mean'))}, "
            f"held-out accuracy {_figure(t.get('heldout_accuracy'))}")


def peers_part(doc: dict[str, Any]) -> str:
    peers = doc.get("peers") or []
    base = (doc.get("summaries") or {}).get("base_fingerprint")
    if not base or not peers:
        return f"peers {len(peers)}"
    same = sum(1 for p in peers if p.get("base_fingerprint") == base)
    other = sum(1 for p in peers if p.get("base_fingerprint") and p.get("base_fingerprint") != base)
    return f"peers {len(peers)} ({same} same base" + (f", {other} other base)" if other else ")")


def progress_line(doc: dict[str, Any]) -> str:
    """`summary: state running; step 120 (policy v120), reward 0.531, held-out accuracy 0.406;
    peers 2 (1 same base); groups out 960, in 800 (3 rejected); summaries 6 sent, 4 merged`."""
    parts = [f"state {doc.get('state', '?')}", training_part(doc.get("training") or {}), peers_part(doc)]
    rollouts = doc.get("rollouts")
    if rollouts:
        parts.append(f"groups out {rollouts.get('groups_published', 0)}, in {rollouts.get('groups_accepted', 0)} "
                     f"({rollouts.get('groups_rejected', 0)} rejected)")
    summaries = doc.get("summaries") or {}
    if summaries.get("enabled"):
        parts.append(f"summaries {summaries.get('sent', 0)} sent, {summaries.get('merged', 0)} merged")
    return "summary: " + "; ".join(parts)

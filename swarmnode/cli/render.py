"""Rich renderings of status documents (no I/O: they only build renderables)."""
from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

NOT_RUNNING = Text("not running yet", style="dim")


def _short(peer_id: str) -> str:
    return peer_id if len(peer_id) <= 16 else f"{peer_id[:8]}…{peer_id[-6:]}"


def _age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def peers_table(peers: list[dict[str, Any]]) -> Table:
    table = Table(title=f"peers ({len(peers)})", title_justify="left")
    for col in ("peer id", "seen for", "last record", "state", "device", "GFLOP/s", "version"):
        table.add_column(col)
    for p in peers:
        device = p.get("device", {})
        table.add_row(
            p["peer_id"],
            _age(p.get("age_s", 0.0)),
            f"{_age(p.get('record_age_s', 0.0))} ago",
            p.get("state", "?"),
            f"{device.get('kind', '?')} ({device.get('cpu_cores', '?')} cores)" if device.get("kind") == "cpu" else device.get("name", "?"),
            f"{p.get('capability', {}).get('matmul_gflops', 0.0):.1f}",
            p.get("software_version", "?"),
        )
    return table


def status_view(s: dict[str, Any]) -> Group:
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    join = s.get("join", {})
    joined = "yes" if join.get("joined") else f"not yet ({join.get('attempts', 0)} attempts; {join.get('last_error') or '...'})"
    rows = [
        ("peer id", s["peer_id"]),
        ("swarm", f"{s['swarm']}  (window {s['window']}, {s['window_s']:g}s)"),
        ("state", s["state"]),
        ("uptime", _age(s["uptime_s"])),
        ("joined", joined if join.get("initial_peers") else "bootstrap node (no initial peers)"),
        ("multiaddrs", "\n".join(s["multiaddrs"])),
        ("messages accepted", _counts(s["messages"]["accepted"])),
        ("messages rejected", _counts(s["messages"]["rejected"])),
    ]
    for k, v in rows:
        info.add_row(k, v)
    training = s.get("training", {})
    train = Table.grid(padding=(0, 2))
    train.add_column(style="bold")
    train.add_column()
    train.add_row("model", str(training.get("model") or "-"))
    train.add_row("phase", str(training.get("phase") or "-"))
    for key in ("policy_version", "steps", "reward_mean", "local_reward_mean", "heldout_accuracy", "generate_tokens_per_s",
                "train_samples_per_s", "staleness_histogram", "dropped_stale", "external_trained", "external_pool"):
        value = training.get(key)
        train.add_row(key.replace("_", " "), NOT_RUNNING if value is None else str(value))
    parts = [info, Text(""), Text("training", style="bold underline"), train]
    rollouts = s.get("rollouts")
    if rollouts:
        gossip = Table.grid(padding=(0, 2))
        gossip.add_column(style="bold")
        gossip.add_column()
        for key in ("batches_published", "groups_published", "bytes_per_batch", "batches_fetched", "groups_accepted",
                    "groups_rejected", "fetch_failures", "peers_ignored", "latency_p50_s", "latency_p99_s", "gossip_time_share"):
            value = rollouts.get(key)
            gossip.add_row(key.replace("_", " "), "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value)))
        parts += [Text(""), Text("rollout gossip", style="bold underline"), gossip]
    return Group(*parts, Text(""), peers_table(s["peers"]))


def _fmt(value: Any, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def swarm_table(rows: list[dict[str, Any]], caption: str | None = None) -> Table:
    table = Table(title="local swarm", title_justify="left", caption=caption, caption_justify="left")
    columns = ("node", "peer id", "state", "peers", "version", "reward", "accuracy", "sent", "received", "rejected", "gossip")
    for col in columns:
        table.add_column(col, justify="left" if col in ("node", "peer id", "state") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["name"], "", Text(r["error"], style="red"), *[""] * (len(columns) - 3))
            continue
        training = r.get("training", {})
        rollouts = r.get("rollouts") or {}
        running = training.get("running") or training.get("phase") == "done"
        rejected = rollouts.get("groups_rejected")
        table.add_row(
            r["name"],
            _short(r["peer_id"]),
            training.get("phase") if training.get("phase") in ("done", "loading model") else r["state"],
            str(len(r["peers"])),
            _fmt(training.get("policy_version")) if running else "-",
            _fmt(training.get("local_reward_mean"), ".3f") if running else "-",
            _fmt(training.get("heldout_accuracy"), ".3f"),
            _fmt(rollouts.get("groups_published")),
            _fmt(rollouts.get("groups_accepted")),
            Text(str(rejected), style="red") if rejected else _fmt(rejected),
            _fmt(None if rollouts.get("gossip_time_share") is None else 100 * rollouts["gossip_time_share"], ".2f") + ("%" if rollouts.get("gossip_time_share") is not None else ""),
        )
    return table

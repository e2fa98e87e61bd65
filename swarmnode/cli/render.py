"""Rich renderings of status documents (no I/O: they only build renderables)."""
from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from swarmnode.cli.bootstrap_view import bootstrap_grid, is_bootstrap, swarm_parameters_text
from swarmnode.cli.format import age, counts, data_size, human, number
from swarmnode.cli.lines import address_line
from swarmnode.cli.status_text import network_text, peers_text, problems
from swarmnode.swarm.peers import short_id

NOT_RUNNING = Text("not running yet", style="dim")


def _rate(value: float | None) -> str:
    """A measured figure in at most 6 characters: - (not measured yet), 0.42, 12.3, 1234, 12k, 1.2M."""
    if not value:
        return "-"
    if value < 10:
        return f"{value:.2f}"
    if value < 100:
        return f"{value:.1f}"
    if value < 99_999.5:
        return f"{value:.0f}"
    return f"{value / 1000:.0f}k" if value < 999_500 else f"{value / 1e6:.1f}M"


PEER_COLUMNS = ("peer", "known", "state", "device", "GFLOP/s", "gen\ntok/s", "train\nsmp/s", "s/step", "version")


def peers_table(peers: list[dict[str, Any]]) -> Table:
    """One line per peer within 80 columns: short id, how long this node has known it, state, device,
    and its measured speeds (matmul at start; generation tokens/s, train samples/s and seconds
    per step from its real work, as its record claims them). Full ids: `--json`."""
    table = Table(title=f"peers ({len(peers)}; full ids and figures: --json)", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0))
    for col in PEER_COLUMNS:
        numeric = col not in ("peer", "state", "device", "version")
        table.add_column(col, justify="right" if numeric else "left", no_wrap=True,
                         max_width=12 if col == "device" else 8 if col == "version" else None, overflow="ellipsis")
    for p in peers:
        device = p.get("device", {})
        capability = p.get("capability", {})
        table.add_row(
            short_id(p["peer_id"]),
            age(p.get("age_s", 0.0)),
            p.get("state", "?"),
            f"cpu {device.get('cpu_cores', '?')}c" if device.get("kind") == "cpu" else device.get("name", "?"),
            _rate(capability.get("matmul_gflops")),
            _rate(p.get("generate_tokens_per_s")),
            _rate(p.get("train_samples_per_s")),
            _rate(p.get("seconds_per_step")),
            p.get("software_version", "?"),
        )
    return table


def figure(key: str, value: Any) -> str:
    """A status figure in --full: shares of time as percentages (as the headline and the swarm
    table write them); rewards and accuracies stay fractions of 1."""
    if key.endswith("_share") and isinstance(value, (int, float)):
        return f"{100 * value:.1f}%"
    return human(value)


SUPPLY_COLUMNS = ("peer", "claims\ngroups/s", "seen\ngroups/s", "planned\ngroups/s", "trained\nhere", "mean\nstaleness")
SUPPLY_ROWS_SHOWN = 8


def peer_supply_table(rows: list[dict[str, Any]]) -> Table:
    """Peers' supply as the plan saw it (training.peer_supply): what each claims, what arrived,
    what the plan counts on, its groups trained here and their mean staleness (versions behind)."""
    more = f"; {len(rows) - SUPPLY_ROWS_SHOWN} more: --json" if len(rows) > SUPPLY_ROWS_SHOWN else ""
    table = Table(title=f"peers' supply, as the plan saw it{more}", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, 1))
    for col in SUPPLY_COLUMNS:
        table.add_column(col, justify="left" if col == "peer" else "right", no_wrap=True)
    for r in rows[:SUPPLY_ROWS_SHOWN]:
        table.add_row(short_id(r["peer_id"]), _rate(r.get("claimed_groups_per_s")), _rate(r.get("observed_groups_per_s")),
                      _rate(r.get("planned_groups_per_s")), str(r.get("trained", 0)), number(r.get("mean_staleness")))
    return table


def key_value_grid() -> Table:
    """Two columns without borders: a bold key, then its value."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    return grid


def identity_grid(s: dict[str, Any]) -> Table:
    """Who and where the node is: id, swarm, state, uptime, join, messages and limits."""
    info = key_value_grid()
    join = s.get("join", {})
    joined = "yes" if join.get("joined") else f"not yet ({join.get('attempts', 0)} attempts; {join.get('last_error') or '...'})"
    rows = [
        ("peer id", s["peer_id"]),
        ("swarm", f"{swarm_parameters_text(s)} (window {s.get('window', '?')} now)"),
        ("role", "bootstrap node (swarmnode bootstrap: no model)" if is_bootstrap(s) else "node"),
        ("state", s["state"]),
        ("uptime", age(s["uptime_s"])),
        ("network", network_text(s)),
        ("joined", joined if join.get("initial_peers") else "bootstrap node (no initial peers)"),
        ("peers", peers_text(s)),
        ("messages accepted", counts(s["messages"]["accepted"])),
        ("messages rejected", counts(s["messages"]["rejected"])),
        ("limits hit", limits_line(s.get("limits") or {})),
    ]
    for k, v in rows:
        info.add_row(k, v)
    found = problems(s)
    for i, problem in enumerate(found):
        info.add_row("problems" if i == 0 else "", Text(problem, style="red"))
    if not found:
        info.add_row("problems", Text("none", style="green"))
    return info


TRAINING_KEYS = ("policy_version", "steps", "reward_mean", "local_reward_mean", "heldout_accuracy", "generate_tokens_per_s",
                 "train_tokens_per_s", "train_samples_per_s", "seconds_per_step", "slowdown", "staleness_local",
                 "staleness_external", "dropped_stale", "external_trained", "external_pool", "external_waits",
                 "external_waits_skipped", "generator_idle_share", "trainer_idle_share")


def training_grid(training: dict[str, Any]) -> Table:
    """The training section: model, phase, each figure (not running yet while absent), GPU memory, the plan."""
    train = key_value_grid()
    train.add_row("model", str(training.get("model") or "-"))
    train.add_row("phase", str(training.get("phase") or "-"))
    if not training.get("model"):  # a node without a model has no figures to show
        return train
    for key in TRAINING_KEYS:
        value = training.get(key)
        train.add_row(key.replace("_", " "), NOT_RUNNING if value is None else figure(key, value))
    gpu = training.get("gpu_memory")
    if gpu:
        train.add_row("gpu memory", f"{data_size(gpu['in_use_bytes'])} of {data_size(gpu['total_bytes'])} in use "
                                    f"(peak {data_size(gpu['peak_bytes'])}) on {gpu['device']}")
    plan = training.get("plan")
    if plan:
        train.add_row("plan", plan_line(plan))
    return train


GOSSIP_KEYS = ("batches_published", "groups_published", "bytes_per_batch", "batches_fetched", "groups_accepted",
               "groups_rejected", "fetch_failures", "peers_ignored", "latency_p50_s", "latency_p99_s", "gossip_time_share")


def gossip_grid(rollouts: dict[str, Any]) -> Table:
    """The rollout gossip section: each counter and figure, - while absent."""
    gossip = key_value_grid()
    for key in GOSSIP_KEYS:
        value = rollouts.get(key)
        if value is None:
            text = "-"
        elif key == "bytes_per_batch":
            text = data_size(value)
        else:
            text = figure(key, value)
        gossip.add_row(key.replace("_", " "), text)
    return gossip


def status_view(s: dict[str, Any], fold_addresses: bool = False) -> Group:
    """Everything `swarmnode status --full` shows: identity, join, messages, limits, training,
    rollout gossip, summaries, storage and the peer table; addresses whole, one a line (`fold`:
    broken at the width, for a live view)."""
    training = s.get("training", {})
    addresses = [Text("multiaddrs (to join through this node)", style="bold")]
    addresses += [address_line(m, fold_addresses) for m in s["multiaddrs"]] or [Text("none yet", style="dim")]
    parts = [identity_grid(s), *addresses, Text("")]
    if is_bootstrap(s):  # it trains nothing: what it serves instead
        parts += [Text("bootstrap node", style="bold underline"), bootstrap_grid(s)]
    else:
        parts += [Text("training", style="bold underline"), training_grid(training)]
        if training.get("peer_supply"):
            parts += [Text(""), peer_supply_table(training["peer_supply"])]
    if s.get("rollouts"):
        parts += [Text(""), Text("rollout gossip", style="bold underline"), gossip_grid(s["rollouts"])]
    if s.get("summaries") and training.get("model"):  # a node without a model has nothing to summarise
        parts += [Text(""), Text("gradient summaries", style="bold underline"), summaries_grid(s["summaries"])]
    if s.get("storage") and training.get("model"):  # a node without a model keeps no stores
        parts += [Text(""), Text("storage", style="bold underline"), storage_grid(s["storage"], s.get("dht_time"))]
    return Group(*parts, Text(""), peers_table(s["peers"]))


LIMIT_HITS = ("serve_refused", "accept_deferred", "fetch_waits", "values_over_key_cap", "peers_evicted", "senders_evicted")


def plan_line(plan: dict[str, Any]) -> Text:
    """The scheduler's plan: I/J per step, the wait, steps per window, then why (wraps)."""
    steps = plan.get("steps_per_window")
    head = (f"I/J {plan.get('local_rollouts')}/{plan.get('external_rollouts')}, wait {plan.get('external_wait_s')} s"
            + (f", {steps} steps/window" if steps is not None else ""))
    return Text(f"{head}\n{plan.get('reason') or ''}")


def limits_line(limits: dict[str, int]) -> str:
    """Per-peer state held, and each limit that was hit (docs/security.md), on one line."""
    held = f"{limits.get('peers', 0)} peers, {limits.get('tracked_senders', 0)} senders held"
    hits = {k.replace("_", " "): limits[k] for k in LIMIT_HITS if limits.get(k)}
    return f"{held}; {counts(hits)}" if hits else f"{held}; none"


def storage_grid(storage: dict[str, Any], now: float | None) -> Table:
    """Store sizes, the last checkpoint (failures in red) and the last retention pass."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("rollouts.sqlite", data_size(storage.get("rollouts_bytes") or 0))
    grid.add_row("metrics.sqlite", data_size(storage.get("metrics_bytes") or 0))
    failures = storage.get("checkpoint_failures") or 0
    grid.add_row("last checkpoint", storage.get("last_checkpoint") or "-")
    if failures:
        grid.add_row("checkpoint failures", Text(f"{failures} in a row: {storage.get('last_checkpoint_error')}", style="red"))
    last = storage.get("last_maintenance")
    if last:
        rollouts, metrics = last.get("rollouts") or {}, last.get("metrics") or {}
        pruned = sum(rollouts.get(k, 0) for k in ("rows_deleted_age", "rows_deleted_size")) + metrics.get("rows_deleted_size", 0)
        ago = f"{age(max(0.0, now - last['at']))} ago: " if now is not None and "at" in last else ""
        grid.add_row("retention", f"{ago}{pruned} rows pruned, {metrics.get('rows_downsampled', 0)} metrics downsampled")
    else:
        grid.add_row("retention", "not run yet")
    return grid


def summaries_grid(summaries: dict[str, Any]) -> Table:
    """Gradient summaries: on / merging, sent and merged, rejections, size against the dense
    delta, outer steps and the last merge's age."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    base = summaries.get("base_fingerprint") or "-"
    if not summaries.get("enabled"):
        state = Text("off (summaries.enabled: false)", style="dim")
    elif summaries.get("active"):
        state = f"on, merging with same-base peers (base {base})"
    else:
        state = f"on, no same-base peer yet (base {base})"
    grid.add_row("state", state)
    grid.add_row("exchanged", f"{summaries.get('sent', 0)} sent, {summaries.get('fetched', 0)} fetched, "
                              f"{summaries.get('merged', 0)} merged ({summaries.get('partners_last', 0)} last step)")
    rejected = summaries.get("rejected") or {}
    total = sum(rejected.values())
    line = f"{total} ({counts({k.replace('_', ' '): v for k, v in rejected.items()})})" if total else "0"
    grid.add_row("rejected", Text(line, style="red") if total else line)
    skipped = summaries.get("skipped") or {}
    grid.add_row("not merged", f"{summaries.get('skipped_other_base', 0)} other base, "
                               f"{summaries.get('stale_dropped', 0)} too stale, "
                               f"{skipped.get('low_trust', 0)} low trust, {skipped.get('against_direction', 0)} vetoed, "
                               f"{skipped.get('repeated_summary', 0)} repeated")
    if summaries.get("trust"):
        grid.add_row("trust", trust_line(summaries))
    per, dense, ratio = summaries.get("bytes_per_summary"), summaries.get("dense_bytes") or 0, summaries.get("compression_ratio")
    if per is None:
        size = f"none sent yet (dense delta {data_size(dense)})"
    else:
        shown = "" if ratio is None else f" ({ratio:.0f}x)" if ratio >= 10 else f" ({ratio:.1f}x)"
        size = f"{data_size(per)} per summary vs {data_size(dense)} dense{shown}"
    grid.add_row("size", size)
    merge_age = summaries.get("last_merge_age_s")
    merge = "no merge yet" if merge_age is None else f"last merge {age(max(0.0, merge_age))} ago"
    grid.add_row("outer steps", f"{summaries.get('outer_steps', 0)}, {merge}, "
                                f"{summaries.get('merge_cpu_seconds', 0.0):.1f}s CPU of summary work")
    return grid


def trust_line(summaries: dict[str, Any]) -> Text:
    """Peers' summary trust in one line: how many trusted, the least trusted, what was done."""
    trust = summaries.get("trust") or {}
    full = sum(1 for t in trust.values() if t["trust"] >= 0.5)
    low_id, low = min(trust.items(), key=lambda kv: kv[1]["score"])
    line = (f"{full} of {len(trust)} peers at 0.5+; lowest {low_id[-6:]} {low['trust']:.2f} "
            f"({low['harmful']} harmful); {summaries.get('down_weighted', 0)} down-weighted, "
            f"{summaries.get('clipped', 0)} clipped")
    return Text(line, style="red") if low["harmful"] else Text(line)


def _count(n: int | None) -> str:
    """A count in at most 5 characters: 9999, 12k, 999k, 1.2M."""
    if n is None:
        return "-"
    if n < 10_000:
        return str(n)
    if n < 999_500:
        return f"{n / 1000:.0f}k"
    return f"{n / 1e6:.1f}M"


SWARM_COLUMNS = ("node", "peer", "state", "peers", "ver", "reward", "acc", "sent", "recv", "rej", "gossip", "merges")


def swarm_table(rows: list[dict[str, Any]], caption: str | None = None) -> Table:
    """One line per node of a local swarm, 80 columns wide: policy version, own-groups reward,
    held-out accuracy, rollout groups sent / received / rejected, gossip CPU share, and peers'
    gradient summaries merged."""
    table = Table(title="local swarm (sent/recv/rej: rollout groups; merges: peers' gradient summaries)",
                  title_justify="left", caption=caption, caption_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0))
    for col in SWARM_COLUMNS:
        table.add_column(col, justify="left" if col in ("node", "peer", "state") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["name"], "", Text(r["error"], style="red"), *[""] * (len(SWARM_COLUMNS) - 3))
            continue
        training = r.get("training") or {}
        rollouts = r.get("rollouts") or {}
        summaries = r.get("summaries") or {}
        running = training.get("running") or training.get("phase") == "done"
        phase = training.get("phase")
        rejected = rollouts.get("groups_rejected")
        share = rollouts.get("gossip_time_share")
        table.add_row(
            r["name"],
            f"…{r['peer_id'][-6:]}" if len(r["peer_id"]) > 7 else r["peer_id"],
            "loading" if phase == "loading model" else "done" if phase == "done" else r["state"],
            str(len(r["peers"])),
            number(training.get("policy_version")) if running else "-",
            number(training.get("local_reward_mean"), ".3f") if running else "-",
            number(training.get("heldout_accuracy"), ".3f"),
            _count(rollouts.get("groups_published")),
            _count(rollouts.get("groups_accepted")),
            Text(_count(rejected), style="red") if rejected else _count(rejected),
            "-" if share is None else f"{100 * share:.2f}%",
            _count(summaries.get("merged")),
        )
    return table

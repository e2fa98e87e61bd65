"""What the experiment scripts share to run a local swarm and keep its results: fresh homes,
--set overrides of a config, the wait for every node to finish training, a node's memory, its
held-out curve read from metrics.sqlite, and the results written and resumed."""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Callable

import yaml
from rich.console import Console
from rich.live import Live

from swarmnode.cli.render import swarm_table
from swarmnode.node.local_swarm import LocalSwarm


def fresh_home(root: Path) -> Path:
    """`root`, emptied and made: a left-over checkpoint would resume at its end and metrics pile up."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    return root


def parse_overrides(items: list[str]) -> dict[str, object]:
    """["summaries.outer_lr=1.5"] -> {"summaries.outer_lr": 1.5} (values read as YAML)."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise SystemExit(f"--set {item!r}: expected section.field=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def apply_overrides(cfg: dict, items: list[str]) -> dict:
    """`cfg` with each --set section.field=value applied (in place; returned)."""
    for dotted, value in parse_overrides(items).items():
        *path, leaf = dotted.split(".")
        node = cfg
        for key in path:
            node = node.setdefault(key, {})
        node[leaf] = value
    return cfg


def wait_until_trained(swarm: LocalSwarm, steps: int, caption: str, console: Console, first: int | None = None,
                       on_poll: Callable[[list[dict]], None] = lambda rows: None) -> list[dict]:
    """Poll with the live table until every node (or the `first` nodes) took `steps` steps and
    finished; every node's status then. `on_poll` is given every poll's rows (a timeline)."""
    def done(row: dict) -> bool:
        t = row.get("training") or {}
        return "error" not in row and t.get("phase") == "done" and (t.get("steps") or 0) >= steps

    rows = swarm.poll()
    on_poll(rows)
    with Live(swarm_table(rows, caption), console=console, refresh_per_second=1) as live:
        while not all(done(r) for r in rows[:first]):
            bad = [r["name"] for r in rows if r.get("exited")
                   or str((r.get("training") or {}).get("phase", "")).startswith("failed")]
            if bad:
                raise SystemExit(f"{', '.join(bad)} failed; see the logs under {swarm.root}")
            time.sleep(2.0)
            rows = swarm.poll()
            on_poll(rows)
            live.update(swarm_table(rows, caption))
    if not console.is_terminal:
        console.print()  # Live's last frame ends without a newline off a terminal
    return rows


def node_memory_mib(runtime: dict) -> float | None:
    """RSS of the node process plus its p2pd, MiB (Linux)."""
    total = 0
    for pid in [runtime.get("pid")] + [c.get("pid") for c in runtime.get("children", [])]:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            return None
    return total / 1024


def read_curve(metrics_path: Path) -> tuple[list[list[float]], tuple[float, float]]:
    """[(local step, held-out mean accuracy)] (the last evaluation at each step) and the times of
    the first and last evaluation (the node's training span). Local steps, not
    policy versions: a step whose groups all have zero advantage trains nothing and leaves the
    version where it was, so the two drift apart by a few percent."""
    with sqlite3.connect(str(metrics_path)) as conn:
        rows = conn.execute("SELECT name, value, time FROM metrics WHERE name IN ('step', 'heldout_accuracy/mean') "
                            "ORDER BY rowid").fetchall()
    step, by_step, times = 0, {}, []
    for name, value, when in rows:
        if name == "step":
            step = int(value)
        else:
            by_step[step] = float(value)
            times.append(when)
    return [[s, round(a, 4)] for s, a in sorted(by_step.items())], (times[0], times[-1]) if times else (0.0, 0.0)


def write_results(summary: dict, json_path: Path, png_path: Path, plot, table, console: Console) -> None:
    """An experiment's summary to <name>.json and its plot to <name>.png, then its table."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    plot(summary, png_path)
    console.print(table(summary))
    console.print(f"wrote {json_path} and {png_path}")


def kept_runs(path: Path, settings: dict, resume: bool) -> list[dict]:
    """With --resume, the runs a previous invocation finished (made with the same `settings`)."""
    if not (resume and path.exists()):
        return []
    kept = json.loads(path.read_text(encoding="utf-8"))
    if kept["settings"] != settings:
        raise SystemExit(f"--resume: {path} was run with {kept['settings']}, not {settings}")
    return kept["runs"]


def append_run(path: Path, args: argparse.Namespace, **figures) -> None:
    """One run as a JSON line appended to `path`: its arguments (paths as text) and its figures."""
    record = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}, **figures}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")

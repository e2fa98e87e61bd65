#!/usr/bin/env python3
"""One GPU session's scripts/gpu/device_checks.sh output folder, gathered into
docs/results/gpu.json under "async_and_decode" -> <session>: the machine, each part's command
and figures, and the GPU node's goals checked against them.

    python scripts/gpu/collect_results.py $OUT --session 2026-12-01-h100 [--into docs/results/gpu.json]

A part that did not run or printed no figures is recorded as such (its log's last lines), so
a session that ran out of time still says how far it got.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "async_and_decode"
PARTS = ("async", "decode", "tests", "swarm")
# The goals of the GPU-node work (0.5B shape, bf16, 64 x 8 x 128, ratios within one run).
GOALS = {
    "async_over_sync": 1.2,
    "generator_beside_over_alone": 0.9,
    "static_decode_tokens_per_s": 50_000.0,
    "static_over_loop": 3.0,
}


def last_json_object(text: str) -> dict | None:
    """The last line of `text` that is a JSON object (bench async --json prints it last)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None


def pytest_summary(text: str) -> str | None:
    """pytest's closing line, e.g. "12 passed, 1 skipped in 95.2s"."""
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error)[^=\n]*?)\s*=*$", text, flags=re.MULTILINE)
    return found[-1] if found else None


def goals(figures: dict) -> dict[str, dict]:
    """Each goal: {"goal", "got", "met"} (met None where the figure is missing)."""
    bench = figures.get("async") or {}
    rates = (figures.get("decode") or {}).get("tokens_per_s") or {}
    got = {
        "async_over_sync": bench.get("ratio"),
        "generator_beside_over_alone": bench.get("generator_beside_over_alone"),
        "static_decode_tokens_per_s": rates.get("static"),
        "static_over_loop": round(rates["static"] / rates["loop"], 2) if rates.get("static") and rates.get("loop") else None,
    }
    return {name: {"goal": goal, "got": got[name], "met": None if got[name] is None else got[name] >= goal}
            for name, goal in GOALS.items()}


def read_session(out: Path) -> dict:
    """The session's entry from the files under `out` (no writing)."""
    def text(name: str) -> str:
        path = out / name
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    figures = {
        "async": last_json_object(text("async.log")),
        "decode": json.loads(text("generation.json")) if text("generation.json") else None,
        "tests": pytest_summary(text("tests.log")),
        "swarm": json.loads(text("swarm-rates.json")) if text("swarm-rates.json") else None,
    }
    parts = {}
    for name in PARTS:
        command = text(f"{name}.cmd").strip()
        if not command:
            parts[name] = {"ran": False}
            continue
        parts[name] = {"command": command, "figures": figures[name]}
        if figures[name] is None:
            parts[name]["log_tail"] = text(f"{name}.log").splitlines()[-15:]
    return {"machine": text("gpu.txt").strip().splitlines(), "parts": parts, "goals": goals(figures)}


def merge(results: dict, session: str, entry: dict) -> dict:
    """`results` with entry under SECTION -> session (other sections and sessions kept)."""
    merged = dict(results)
    merged[SECTION] = {**results.get(SECTION, {}), session: entry}
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="device_checks.sh's output folder ($OUT)")
    parser.add_argument("--session", required=True, help="the entry's name, e.g. 2026-12-01-h100")
    parser.add_argument("--into", type=Path, default=ROOT / "docs" / "results" / "gpu.json")
    args = parser.parse_args(argv)
    if not args.out.is_dir():
        print(f"error: {args.out}: no such folder", file=sys.stderr)
        return 2
    entry = read_session(args.out)
    results = json.loads(args.into.read_text(encoding="utf-8")) if args.into.exists() else {}
    args.into.write_text(json.dumps(merge(results, args.session, entry), indent=1) + "\n", encoding="utf-8")
    for name, goal in entry["goals"].items():
        verdict = {True: "met", False: "missed", None: "not measured"}[goal["met"]]
        print(f"{name:30s} goal {goal['goal']:>9,}  got {goal['got'] if goal['got'] is not None else '-':>9}  {verdict}")
    print(f"written to {args.into} under {SECTION} -> {args.session}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""One GPU session's scripts/gpu/device_checks.sh output, gathered into docs/results/gpu.json
under "async_and_decode" -> <session>: the machine, each part's command and figures, and the
GPU node's goals checked against them.

    python scripts/gpu/collect_results.py call1/device-checks.tar.gz [call2/device-checks.tar.gz ...] \
        --session 2026-12-01-h100 [--into docs/results/gpu.json]

Each input is a device-checks.tar.gz or an unpacked folder ($WORK); a part found in a later
input replaces the same part of an earlier one (a session's second call). A part that did not
run or printed no figures is recorded as such (its log's last lines), so a session that ran
out of time still says how far it got.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
import tempfile
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
    """pytest's closing line, e.g. "12 passed, 1 skipped in 95.2s" or "no tests ran in 0.1s"."""
    found = re.findall(r"^=*\s*((?:\d+ [a-z]+|no tests ran)\b[^=\n]* in [\d.]+s\b[^=\n]*?)\s*=*$", text, flags=re.MULTILINE)
    return found[-1] if found else None


def goals(figures: dict) -> dict[str, dict]:
    """Each goal: {"goal", "got", "met"} (met None where the figure is missing)."""
    bench = figures.get("async") or {}
    decode = figures.get("decode") or {}
    rates = dict(decode.get("tokens_per_s") or {})
    if (decode.get("decode_used") or {}).get("static", "static") != "static":
        rates.pop("static", None)  # it failed and fell back to the loop: no static figure
    got = {
        "async_over_sync": bench.get("ratio"),
        "generator_beside_over_alone": bench.get("generator_beside_over_alone"),
        "static_decode_tokens_per_s": rates.get("static"),
        "static_over_loop": round(rates["static"] / rates["loop"], 2) if rates.get("static") and rates.get("loop") else None,
    }
    return {name: {"goal": goal, "got": got[name], "met": None if got[name] is None else got[name] >= goal}
            for name, goal in GOALS.items()}


FIGURES = {  # part -> (its figures' file, how to read them)
    "async": ("async.log", last_json_object),
    "decode": ("generation.json", json.loads),
    "tests": ("tests.log", pytest_summary),
    "swarm": ("swarm-rates.json", json.loads),
}


def read_session(folders: list[Path]) -> dict:
    """The session's entry from device_checks.sh's folders, later ones first for each part
    they ran (no writing)."""
    def text(folder: Path, name: str) -> str:
        path = folder / name
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    parts, figures, machine = {name: {"ran": False} for name in PARTS}, dict.fromkeys(PARTS), []
    for folder in folders:
        machine = text(folder, "gpu.txt").strip().splitlines() or machine
        for name in PARTS:
            command = text(folder, f"{name}.cmd").strip()
            if not command:
                continue
            source, read = FIGURES[name]
            found = text(folder, source)
            figures[name] = read(found) if found else None
            parts[name] = {"command": command, "figures": figures[name]}
            if figures[name] is None:
                parts[name]["log_tail"] = text(folder, f"{name}.log").splitlines()[-15:]
    return {"machine": machine, "parts": parts, "goals": goals(figures)}


def unpacked(inputs: list[Path], into: Path) -> list[Path]:
    """Each input as a folder: a .tar.gz is unpacked under `into` (only plain files kept)."""
    folders = []
    for i, path in enumerate(inputs):
        if path.is_dir():
            folders.append(path)
            continue
        folder = into / str(i)
        with tarfile.open(path) as archive:
            archive.extractall(folder, members=[m for m in archive.getmembers() if m.isfile()], filter="data")
        folders.append(folder)
    return folders


def merge(results: dict, session: str, entry: dict) -> dict:
    """`results` with entry under SECTION -> session (other sections and sessions kept)."""
    merged = dict(results)
    merged[SECTION] = {**results.get(SECTION, {}), session: entry}
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", type=Path, nargs="+", help="device-checks.tar.gz files or $WORK folders, in call order")
    parser.add_argument("--session", required=True, help="the entry's name, e.g. 2026-12-01-h100")
    parser.add_argument("--into", type=Path, default=ROOT / "docs" / "results" / "gpu.json")
    args = parser.parse_args(argv)
    for path in args.inputs:
        if not path.exists():
            print(f"error: {path}: no such file or folder", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as scratch:
        try:
            entry = read_session(unpacked(args.inputs, Path(scratch)))
        except (tarfile.TarError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    results = json.loads(args.into.read_text(encoding="utf-8")) if args.into.exists() else {}
    args.into.write_text(json.dumps(merge(results, args.session, entry), indent=1) + "\n", encoding="utf-8")
    for name, goal in entry["goals"].items():
        verdict = {True: "met", False: "missed", None: "not measured"}[goal["met"]]
        print(f"{name:30s} goal {goal['goal']:>9,}  got {goal['got'] if goal['got'] is not None else '-':>9}  {verdict}")
    print(f"written to {args.into} under {SECTION} -> {args.session}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Values of a status document written for people: ages, sizes, counts, histograms (never a
Python repr of a dict or list)."""
from __future__ import annotations

import math
from typing import Any


def age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def data_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def counts(table: dict[str, int]) -> str:
    """`{"b": 2, "a": 1}` as `a 1, b 2` (`none` when empty)."""
    return ", ".join(f"{k} {v}" for k, v in sorted(table.items())) or "none"


def histogram(table: dict[str, int] | None) -> str:
    """A histogram keyed by small integers (as strings) as `0:32 1:5 2:1`, in key order (`-`: none)."""
    if not table:
        return "-"
    ordered = sorted(table.items(), key=lambda kv: (int(kv[0]), kv[0]) if str(kv[0]).lstrip("-").isdigit() else (1 << 30, kv[0]))
    return " ".join(f"{k}:{v}" for k, v in ordered)


def number(value: Any, spec: str = "") -> str:
    """A figure for people: `-` when missing, floats to 4 significant digits unless `spec` says
    (from 10,000 on, whole with thousands separators: 17,500 tokens/s, not 1.75e+04)."""
    if value is None:
        return "-"
    if spec:
        return format(value, spec)
    if isinstance(value, float):
        return f"{value:,.0f}" if math.isfinite(value) and abs(value) >= 9999.5 else f"{value:.4g}"
    return str(value)


def human(value: Any) -> str:
    """Any status value as text: dicts of numbers as `k:v k:v` (histograms) or `k v, ...`,
    lists joined with commas, nested dicts one level deep as `k (a 1, b 2)`."""
    if isinstance(value, dict):
        if not value:
            return "none"
        if all(isinstance(v, (int, float)) for v in value.values()):
            if all(str(k).isdigit() for k in value):
                return histogram(value)
            return ", ".join(f"{k} {number(v)}" for k, v in sorted(value.items()))
        return "; ".join(f"{k} ({human(v)})" for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return ", ".join(human(v) for v in value) or "none"
    return number(value)

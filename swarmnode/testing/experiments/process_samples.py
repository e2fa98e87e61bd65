"""A process's memory and CPU use over a while (psutil), for the bench scripts."""
from __future__ import annotations

import statistics
import time
from typing import Any

import psutil

MIB = 1024 * 1024


def cpu_seconds(times: Any) -> float:
    return times.user + times.system


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and all its children (a daemon and its p2pd); 0 once it is gone."""
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            total += cpu_seconds(p.cpu_times())
        except psutil.NoSuchProcess:
            pass  # a child that ended between the listing and the reading
    return total


def phase_figures(rss: dict[str, list[int]], cpu_s: dict[str, float], wall_s: float) -> dict[str, Any]:
    """Mean and max RSS (MiB) and mean CPU use (% of one core) of each process and of them all."""
    figures: dict[str, Any] = {"rss_mib": {}, "cpu_percent": {}}
    totals = [sum(parts) for parts in zip(*rss.values())]
    for name, samples in [*rss.items(), ("total", totals)]:
        figures["rss_mib"][name] = {"mean": round(statistics.fmean(samples) / MIB, 1), "max": round(max(samples) / MIB, 1)}
    for name, seconds in [*cpu_s.items(), ("total", sum(cpu_s.values()))]:
        figures["cpu_percent"][name] = round(100.0 * seconds / wall_s, 2)
    return figures


def sample(processes: dict[str, psutil.Process], seconds: float) -> dict[str, Any]:
    """RSS every second and the CPU seconds used over `seconds`, per process."""
    start_cpu = {name: cpu_seconds(p.cpu_times()) for name, p in processes.items()}
    rss: dict[str, list[int]] = {name: [] for name in processes}
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        for name, p in processes.items():
            rss[name].append(p.memory_info().rss)
        time.sleep(1.0)
    wall = time.monotonic() - started
    used = {name: cpu_seconds(p.cpu_times()) - start_cpu[name] for name, p in processes.items()}
    return phase_figures(rss, used, wall)

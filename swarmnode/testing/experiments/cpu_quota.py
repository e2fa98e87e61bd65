"""A fixed CPU budget per process, so that nodes of a heterogeneous swarm on one machine cannot
take each other's CPU: a cgroup per node with a CFS quota (cgroup v2 `cpu.max`, or v1
`cpu.cfs_quota_us` / `cpu.cfs_period_us`), which needs root. The node's process joins its group
before it execs (`CpuQuotas.preexec`), so everything it starts later (p2pd, worker processes)
is inside the same budget.

    quotas = CpuQuotas.open("het")          # raises QuotaUnavailable(one line) where it cannot
    run = quotas.preexec(quotas.group("node0", cores=0.5))
    subprocess.Popen(cmd, preexec_fn=run)
    quotas.close()                          # kills what is left in the groups, removes them
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the CFS period: a quota of q cores is q x 100 ms of CPU per 100 ms


class QuotaUnavailable(Exception):
    """CPU quotas cannot be set on this machine; the message is one line saying why."""


def quota_us(cores: float, period_us: int = PERIOD_US) -> int:
    """CPU microseconds per period for a budget of `cores` (cores x period, at least 1 ms)."""
    if cores <= 0:
        raise ValueError(f"a CPU quota must be > 0 cores, not {cores}")
    return max(1000, round(cores * period_us))


@dataclass(frozen=True)
class QuotaGroup:
    name: str
    cores: float
    path: Path
    procs_file: Path  # where a pid is written to move that process into the group

    def pids(self) -> list[int]:
        try:
            return [int(x) for x in self.procs_file.read_text().split()]
        except OSError:
            return []

    def throttle(self) -> dict[str, int]:
        """cpu.stat's nr_periods and nr_throttled (both cgroup versions): how often the quota bit."""
        try:
            lines = (self.path / "cpu.stat").read_text().splitlines()
        except OSError:
            return {}
        stat = dict(line.split(" ", 1) for line in lines if " " in line)
        return {k: int(stat[k]) for k in ("nr_periods", "nr_throttled") if k in stat}


def remove_orphans(parent: Path) -> list[Path]:
    """Remove the empty groups of experiments whose process is gone (killed before it could
    clean up: swarmnode-<tag>-<pid> with no such pid); the folders removed."""
    removed = []
    for base in parent.glob("swarmnode-*-*"):
        pid = base.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or psutil.pid_exists(int(pid)):
            continue
        try:
            for child in base.iterdir():
                if child.is_dir():
                    child.rmdir()
            base.rmdir()
            removed.append(base)
        except OSError:
            pass  # a process still in it, or not a cgroup folder: left alone
    return removed


class CpuQuotas:
    """The cgroups of one experiment, under <cpu hierarchy>/swarmnode-<tag>-<pid>/."""

    def __init__(self, version: int, base: Path):
        self.version = version
        self.base = base
        self.groups: list[QuotaGroup] = []

    @classmethod
    def open(cls, tag: str, root: Path = CGROUP_ROOT) -> "CpuQuotas":
        """This machine's CPU controller, with a folder of our own made under it; QuotaUnavailable
        (one line: what is missing) where there is none we may write."""
        v2 = root / "cgroup.controllers"
        if v2.exists():
            if "cpu" not in v2.read_text().split():
                raise QuotaUnavailable(f"cgroup v2 at {root} has no cpu controller (cgroup.controllers: "
                                       f"{v2.read_text().strip() or 'empty'})")
            version, parent = 2, root
        elif (root / "cpu" / "cpu.cfs_quota_us").exists():
            version, parent = 1, root / "cpu"
        else:
            raise QuotaUnavailable(f"no cgroup CPU controller at {root} (neither v2 cpu.max nor v1 cpu/cpu.cfs_quota_us)")
        remove_orphans(parent)
        base = parent / f"swarmnode-{tag}-{os.getpid()}"
        try:
            base.mkdir(exist_ok=True)
        except OSError as e:
            raise QuotaUnavailable(f"cannot make a cgroup at {base} ({e.strerror or e}; quotas need root)") from None
        if version == 2:
            try:
                (parent / "cgroup.subtree_control").write_text("+cpu")
                (base / "cgroup.subtree_control").write_text("+cpu")
            except OSError as e:
                base.rmdir()
                raise QuotaUnavailable(f"cannot enable the cpu controller under {parent} ({e.strerror or e}; in a "
                                       "container the root cgroup must hold no processes)") from None
        return cls(version, base)

    @classmethod
    def trial(cls, tag: str, root: Path = CGROUP_ROOT) -> int:
        """Whether quotas work here, end to end: a group is made, a process joins it before it
        execs and runs; the cgroup version, or QuotaUnavailable (one line)."""
        with cls.open(tag, root) as quotas:
            try:
                group = quotas.group("trial", 0.1)
                subprocess.run([sys.executable, "-c", "pass"], preexec_fn=cls.preexec(group), check=True, timeout=60)
            except QuotaUnavailable:
                raise
            except (OSError, subprocess.SubprocessError) as e:
                raise QuotaUnavailable(f"a process could not run under a CPU quota ({e})") from None
            return quotas.version

    def group(self, name: str, cores: float, period_us: int = PERIOD_US) -> QuotaGroup:
        """A group of its own holding `cores` of CPU (e.g. 0.25: a quarter of one core), given
        as `cores` x `period_us` of CPU time every `period_us`."""
        path = self.base / name
        group = QuotaGroup(name, cores, path, path / "cgroup.procs")
        quota = quota_us(cores, period_us)
        try:
            path.mkdir(exist_ok=True)
            if group.pids():
                raise QuotaUnavailable(f"the cgroup {path} still holds processes {group.pids()}: a new node would "
                                       "share their quota")
            if self.version == 2:
                (path / "cpu.max").write_text(f"{quota} {period_us}")
            else:
                (path / "cpu.cfs_period_us").write_text(str(period_us))
                (path / "cpu.cfs_quota_us").write_text(str(quota))
        except OSError as e:
            raise QuotaUnavailable(f"cannot set a CPU quota of {cores:g} cores at {path} ({e.strerror or e})") from None
        self.groups.append(group)
        return group

    @staticmethod
    def preexec(group: QuotaGroup, then: Callable[[], None] | None = None) -> Callable[[], None]:
        """A preexec_fn that moves the new process into `group` before it execs (then runs `then`)."""
        procs = str(group.procs_file)

        def join() -> None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
            if then is not None:
                then()

        return join

    def close(self, timeout_s: float = 10.0) -> None:
        """SIGKILL whatever is still in the groups, then remove them and our folder."""
        for group in self.groups:
            for pid in group.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout_s
        for group in self.groups:
            while any(psutil.pid_exists(pid) for pid in group.pids()) and time.monotonic() < deadline:
                time.sleep(0.05)
            try:
                group.path.rmdir()
            except OSError:
                pass
        try:
            self.base.rmdir()
        except OSError:
            pass
        self.groups = []

    def __enter__(self) -> "CpuQuotas":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""testing/experiments/cpu_quota.py: the quota in CFS units, which cgroup version is used, the
files written for a group, and one line (QuotaUnavailable) where quotas cannot be set. A plain
folder stands in for /sys/fs/cgroup (the real one needs root; quota_check.py measures it)."""
import os

import pytest

from swarmnode.testing.experiments.cpu_quota import PERIOD_US, CpuQuotas, QuotaUnavailable, quota_us


def test_quota_is_cores_times_the_period():
    assert quota_us(1.0) == PERIOD_US
    assert quota_us(0.25) == 25_000
    assert quota_us(2.5) == 250_000  # more than one core: several CPUs' time per period
    assert quota_us(0.001) == 1000  # the kernel's floor is 1 ms
    with pytest.raises(ValueError):
        quota_us(0)


def test_v1_hierarchy_gets_period_and_quota(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    quotas = CpuQuotas.open("t", root=tmp_path)
    assert quotas.version == 1 and quotas.base == tmp_path / "cpu" / f"swarmnode-t-{os.getpid()}"
    group = quotas.group("node0", 0.2)
    assert (group.path / "cpu.cfs_quota_us").read_text() == "20000"
    assert (group.path / "cpu.cfs_period_us").read_text() == str(PERIOD_US)
    assert group.procs_file == group.path / "cgroup.procs"


def test_v2_hierarchy_gets_cpu_max_and_enables_the_controller(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    quotas = CpuQuotas.open("t", root=tmp_path)
    assert quotas.version == 2
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu"
    group = quotas.group("node1", 0.5)
    assert (group.path / "cpu.max").read_text() == f"50000 {PERIOD_US}"


def test_no_controller_is_one_line(tmp_path):
    with pytest.raises(QuotaUnavailable) as e:
        CpuQuotas.open("t", root=tmp_path)
    assert "no cgroup CPU controller" in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    with pytest.raises(QuotaUnavailable) as e:
        CpuQuotas.open("t", root=tmp_path)
    assert "no cpu controller" in str(e.value) and "memory pids" in str(e.value)


def test_a_group_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    (tmp_path / "cpu" / f"swarmnode-t-{os.getpid()}").write_text("in the way")  # as a read-only cgroupfs refuses mkdir
    with pytest.raises(QuotaUnavailable) as e:
        CpuQuotas.open("t", root=tmp_path)
    assert "cannot make a cgroup" in str(e.value) and "quotas need root" in str(e.value)


def test_close_removes_the_groups(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    quotas = CpuQuotas.open("t", root=tmp_path)
    group = quotas.group("node0", 0.2)
    # A real cgroup's files vanish with it; a plain folder must be emptied first.
    (group.path / "cpu.max").unlink()
    (quotas.base / "cgroup.subtree_control").unlink()
    quotas.close()
    assert not group.path.exists() and not quotas.base.exists()


def test_groups_of_a_dead_experiment_are_removed_at_the_next_open(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    dead = tmp_path / "cpu" / "swarmnode-het-999999999"  # no such pid
    (dead / "node0").mkdir(parents=True)
    mine = tmp_path / "cpu" / f"swarmnode-het-{os.getppid()}"  # a live process's: kept
    (mine / "node0").mkdir(parents=True)
    quotas = CpuQuotas.open("t", root=tmp_path)
    assert not dead.exists() and (mine / "node0").exists() and quotas.base.exists()


def test_a_trial_runs_a_process_that_joins_its_group_before_it_execs(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    assert CpuQuotas.trial("check", root=tmp_path) == 1
    procs = tmp_path / "cpu" / f"swarmnode-check-{os.getpid()}" / "trial" / "cgroup.procs"
    assert procs.read_text().strip().isdigit()  # the child wrote its own pid there


def test_a_group_still_holding_processes_is_refused(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    quotas = CpuQuotas.open("t", root=tmp_path)
    (quotas.base / "node0").mkdir()
    (quotas.base / "node0" / "cgroup.procs").write_text(f"{os.getpid()}\n")  # left over from a run
    with pytest.raises(QuotaUnavailable) as e:
        quotas.group("node0", 0.2)
    assert "still holds processes" in str(e.value)

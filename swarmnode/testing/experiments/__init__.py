"""What the experiment and bench scripts (scripts/experiments/, scripts/bench/) share, imported as
a module instead of from each other's files.

- local_runs.py: a local swarm run for an experiment: fresh homes, --set overrides, the wait
  until every node trained (`wait_until_trained`), a node's memory, its held-out curve read from
  metrics.sqlite, results written and resumed, a run appended as a JSON line
- figures.py: pure figures: the mean of a curve's last evaluations, the spread over seeds, an
  arm's curve on a common grid, a swarm's rollout latency
- population.py: scripts/bench/scale_population.py's synthetic population (`Population`,
  `serve_population`) and the pure plan of its stores (keys per identity, ramp, slices)
- process_samples.py: a process's RSS and CPU use over a while (`sample`, `phase_figures`), the CPU
  seconds of a process and its children (`tree_cpu_seconds`)
- heterogeneity_results.py: scripts/experiments/heterogeneity_experiment.py's results, pure
- cpu_quota.py: a CPU budget per node process (`CpuQuotas`: a cgroup with a CFS quota, joined
  before exec; `QuotaUnavailable` says in one line why not), for honest heterogeneity on one machine
- worktrees.py: a commit checked out into a temporary git worktree (`worktree_at`) and the
  environment that imports its code, for benches run at several commits
- sapo_results.py: scripts/experiments/sapo_experiment.py's results and its table, pure (the
  script draws the plot: matplotlib is an extra)
"""

"""The node's training: the trainer thread and what the event loop uses of it.

- service.py: `TrainingService`, the trainer thread (start, stop, errors) and what the node
  uses of training (peers' batches in, groups and summaries out, plan, meters, snapshot);
  `TrainingListeners`, what the trainer thread tells the node (given to the constructor).
- setup.py: building the policy, trainer, outer loop, runner and intake from the config
  (`load_node_policy`, `resume_trainer`, `build_outer_loop`, `build_runner`, `build_intake`, and
  the config -> dataclass helpers `rollout_config`, `trainer_config`, `outer_config`, ...).
- step_recorder.py: `StepRecorder`, what is done with each step (metrics, status, evaluation,
  checkpoints, outer step); `HeldoutEvaluation`, when the held-out evaluation is due;
  `OuterSteps`, the outer step every summaries.every_steps steps and its `OutgoingSummary`.
- status.py: `TrainingStatus`, the lock-protected state behind status.training.
"""

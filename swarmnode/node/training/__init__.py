"""The node's training: the trainer thread and what the event loop uses of it.

- service.py: `TrainingService`, the trainer thread (start, stop, errors) and what the node
  uses of training (its two boundaries below, the speed and delivery meters, snapshot).
- boundary.py: one named interface each way across the event-loop/trainer-thread boundary:
  `SwarmInputs` (event loop -> trainer: same-base peers, the plan and its quotas, peers'
  batches) and `TrainerOutputs` (trainer -> event loop: groups and summaries out, and the
  `TrainingListeners` given by the daemon); `plan_quotas`.
- outer_access.py: `OuterLoopAccess`, what summary gossip may use of the outer loop (its inbox,
  norm bound, shapes, clock, compression and trust).
- setup.py: building the policy, trainer, outer loop, runner and intake from the config
  (`load_node_policy`, `resume_trainer`, `build_outer_loop`, `build_runner`, `build_intake`, and
  the config -> dataclass helpers `rollout_config`, `trainer_config`, `outer_config`, ...).
- step_recorder.py: `StepRecorder`, what is done with each step (metrics, status, evaluation,
  checkpoints, outer step); `HeldoutEvaluation`, when the held-out evaluation is due;
  `OuterSteps`, the outer step every summaries.every_steps steps and its `OutgoingSummary`.
- status.py: `TrainingStatus`, the lock-protected state behind status.training.
"""

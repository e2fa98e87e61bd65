"""node/scheduling.py: the plan follows this node's measured speed and its peers' deliveries."""
from swarmnode.scheduler import DeliveryMeter


def test_current_plan_follows_the_measurements(tmp_path):
    from swarmnode.config import NodeConfig
    from swarmnode.node.scheduling import current_plan
    from swarmnode.node.training.service import TrainingService

    config = NodeConfig.model_validate({
        "swarm": {"window_s": 10},
        "training": {"local_rollouts": 8, "external_rollouts": 8, "external_wait_s": 2},
        "scheduler": {"enabled": True, "min_steps_per_window": 5, "max_steps_per_window": 20},
    })
    now = [0.0]
    training = TrainingService(config, tmp_path, deliveries=DeliveryMeter(clock=lambda: now[0]))
    try:
        plan = current_plan(config, training, [])
        assert (plan.local_rollouts, plan.external_rollouts, plan.external_wait_s) == (8, 8, 2.0)  # nothing measured
        training.speed.generated(640, 0.8, groups=8)  # 0.1 s per group
        training.speed.trained(64, 512, 0.4, groups=8)  # 0.05 s per group
        assert current_plan(config, training, []).local_rollouts == 8
        for _ in range(16):  # the node slows down: the newest 16 batches are all that the fit sees
            training.speed.generated(640, 6.4, groups=8)  # 0.8 s per group: floor(10 / (5 * 0.8)) = 2
        plan = current_plan(config, training, [])
        assert plan.local_rollouts == 2 and plan.external_rollouts == 0  # no peer has delivered anything
        training.deliveries.delivered("peer", 40)
        now[0] = 10.0  # 40 groups in 10 s: 4/s; a step of 2 + 14 groups: max(1.6, 0.8) s; ceil(4 * 1.6) = 7
        plan = current_plan(config, training, [])
        assert plan.external_rollouts == 7  # a peer that delivers: its groups fill the batch
        training.inputs.apply_plan(plan)
        assert training.snapshot()["plan"]["local_rollouts"] == 2
        off = NodeConfig.model_validate({**config.model_dump(), "scheduler": {"enabled": False}})
        assert current_plan(off, training, []).reason == "scheduler off: fixed quotas"
    finally:
        training.metrics.close()

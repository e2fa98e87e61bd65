"""node/training/boundary.py: the event loop -> trainer thread inputs and the trainer -> event loop outputs."""
from swarmnode.config import NodeConfig
from swarmnode.node.training.boundary import SwarmInputs, TrainerOutputs, TrainingListeners
from swarmnode.scheduler import DeliveryMeter, Plan


def test_a_plan_reaches_the_runner_once_it_exists_and_every_later_one_too():
    inputs = SwarmInputs(NodeConfig(), DeliveryMeter(), lambda: 0, Plan(8, 8, 2.0, None, "not planned yet"))
    inputs.apply_plan(Plan(4, 6, 1.0, 5, "planned"))  # before the runner: kept
    quotas = []
    inputs.plan_to(quotas.append)
    inputs.apply_plan(Plan(2, 7, 0.5, 5, "again"))
    assert [(q.local, q.external) for q in quotas] == [(4, 6), (2, 7)]
    assert inputs.plan().reason == "again"


def test_same_base_peers_and_readiness_cross_through_the_inputs():
    inputs = SwarmInputs(NodeConfig(), DeliveryMeter(), lambda: 0, Plan(8, 8, 2.0, None, "not planned yet"))
    assert inputs.same_base_peers() == 0 and not inputs.ready
    inputs.set_same_base_peers(3)
    assert inputs.same_base_peers() == 3


def test_outputs_share_groups_only_with_sharing_on_and_hand_them_over_oldest_first():
    shared, kept = TrainerOutputs(TrainingListeners(), share=True), TrainerOutputs(TrainingListeners(), share=False)
    for outputs in (shared, kept):
        outputs.share(["a"])
        outputs.share(["b"])
    assert shared.take_groups() == [["a"], ["b"]] and shared.take_groups() == []
    assert kept.take_groups() == [] and shared.take_summary() is None


def test_the_pool_says_when_the_node_wants_peers_groups_and_the_supply_is_counted_then():
    from swarmnode.trainer.buffer import ExperienceBuffer
    from tests.unit.trainer.helpers import group

    now = [0.0]
    meter = DeliveryMeter(clock=lambda: now[0])
    config = NodeConfig.model_validate({"training": {"external_rollouts": 2}, "rollouts": {"fetch_ahead_steps": 1},
                                        "scheduler": {"enabled": True}})
    inputs = SwarmInputs(config, meter, lambda: 5, Plan(8, 2, 0.0, None, "not planned yet"))
    buffer = ExperienceBuffer(max_staleness=1, external_max_staleness=8)
    inputs.open_intake(None, buffer)
    assert inputs.external_wanted()  # an empty pool: fetch
    now[0] = 10.0
    assert meter.rates() == {} and not meter.saturated
    meter.delivered("p", 4)
    buffer.put([group(version=5, source="p")] * 4)
    assert not inputs.external_wanted()  # the pool holds 2 steps' worth: fetches pause ...
    now[0] = 20.0
    assert meter.rates() == {"p": 0.4} and meter.saturated  # ... and peers supply what it asks

"""trainer/evaluate.py: the held-out accuracy per task by hand."""
from swarmnode.tasks import TaskRef


def test_accuracy_by_task_by_hand():
    from swarmnode.tasks import get_task
    from swarmnode.trainer.evaluate import accuracy_by_task, heldout_items

    items = heldout_items(("sum2", "sum3"), size_per_task=2)
    assert [i.ref for i in items] == [TaskRef("sum2", 0, 0), TaskRef("sum2", 0, 1), TaskRef("sum3", 0, 0), TaskRef("sum3", 0, 1)]
    answers = [items[0].answer, "wrong", items[2].answer + "\nextra", items[3].answer]
    acc = accuracy_by_task(items, answers)
    assert acc == {"sum2": 0.5, "sum3": 1.0, "mean": 0.75}
    assert get_task("sum2").score(items[1], "wrong") == 0.0

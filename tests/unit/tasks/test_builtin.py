"""tasks/builtin.py: the sum tasks by hand."""
from swarmnode.tasks.builtin import SumTask


def test_sum_task_by_hand():
    task = SumTask("t", terms=3, max_digits=2)
    item = task.item(1, 2)
    a, b, c = task.operands(1, 2)
    assert item.question == f"{a}+{b}+{c}=" and item.answer == str(a + b + c)
    assert task.score(item, f" {a + b + c} ") == 1.0
    assert task.score(item, str(a + b + c + 1)) == 0.0
    assert task.score(item, None) == 0.0

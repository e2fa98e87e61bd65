"""tasks/base.py: the guarded scorer (a scorer's exception scores zero)."""
from swarmnode.tasks import get_task


def test_scorer_exceptions_score_zero():
    task = get_task("rg:prime_factorization")
    item = task.item(1, 3)
    assert task.score(item, "not a number") == 0.0

import json
import subprocess
import sys

import pytest

from swarmnode.tasks import DEFAULT_TASKS, TaskRef, UnknownTask, extract_answer, get_task, regenerate
from swarmnode.tasks.builtin import SumTask
from swarmnode.tasks.gym import SUPPORTED


NAMES = [*DEFAULT_TASKS, *(f"rg:{d}" for d in SUPPORTED)]
INDICES = (0, 3, 40)


def _items(name):
    task = get_task(name)
    return [(i.question, i.answer) for i in (task.item(7, index) for index in INDICES)]


@pytest.fixture(scope="module")
def items_from_another_process():
    code = (
        "import json; from tests.unit.tasks.test_tasks import NAMES, _items;"
        "print(json.dumps({n: _items(n) for n in NAMES}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {name: [tuple(x) for x in items] for name, items in json.loads(out).items()}


@pytest.mark.parametrize("name", NAMES)
def test_items_regenerate_from_ref_in_another_process(name, items_from_another_process):
    assert _items(name) == items_from_another_process[name]
    task = get_task(name)
    assert regenerate(TaskRef(name, 7, 3)) == task.item(7, 3)
    assert all(task.score(i, i.answer) == 1.0 for i in (task.item(7, index) for index in INDICES))


def test_sum_task_by_hand():
    task = SumTask("t", terms=3, max_digits=2)
    item = task.item(1, 2)
    a, b, c = task.operands(1, 2)
    assert item.question == f"{a}+{b}+{c}=" and item.answer == str(a + b + c)
    assert task.score(item, f" {a + b + c} ") == 1.0
    assert task.score(item, str(a + b + c + 1)) == 0.0
    assert task.score(item, None) == 0.0


def test_scorer_exceptions_score_zero():
    task = get_task("rg:prime_factorization")
    item = task.item(1, 3)
    assert task.score(item, "not a number") == 0.0


def test_game_of_life_halting_hack_is_closed():
    task = get_task("rg:game_of_life_halting")
    items = [task.item(0, i) for i in range(30)]
    falses = [i for i in items if i.answer == "False"]
    assert falses, "expected some items whose truth is False"
    for item in falses:
        assert task.score(item, "anything at all") == 0.0
        assert task.score(item, "False") == 1.0


def test_extract_answer_is_the_one_format():
    assert extract_answer("42") == "42"
    assert extract_answer("\n 42 \nmore") == "42"
    assert extract_answer("think... <answer>1</answer> then <answer> 7 </answer>") == "7"
    assert extract_answer("   \n ") is None
    assert len(extract_answer("9" * 5000)) == 512


def test_unknown_tasks_fail_clearly():
    with pytest.raises(UnknownTask, match="unknown task"):
        get_task("nope")
    with pytest.raises(UnknownTask, match="not supported"):
        get_task("rg:arc_agi")
    with pytest.raises(ValueError):
        get_task("sum2").item(-1, 0)

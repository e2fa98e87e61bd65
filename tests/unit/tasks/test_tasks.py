"""tasks/__init__.py: a task by name (get_task) and an item regenerated from its TaskRef in another process."""
import json
import subprocess
import sys

import pytest

from swarmnode.tasks import DEFAULT_TASKS, TaskRef, UnknownTask, get_task, regenerate
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


def test_unknown_tasks_fail_clearly():
    with pytest.raises(UnknownTask, match="unknown task"):
        get_task("nope")
    with pytest.raises(UnknownTask, match="not supported"):
        get_task("rg:arc_agi")
    with pytest.raises(ValueError):
        get_task("sum2").item(-1, 0)

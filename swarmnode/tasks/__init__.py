"""Task sources and verifiers. Every item is regenerable from (task, seed, index).

Built-in compact tasks ("sum2", "sum3") and reasoning-gym datasets ("rg:chain_sum", ...).

- base.py: Task (items and a guarded scorer), TaskItem, TaskRef
- builtin.py: SumTask and BUILTIN_TASKS (sum2, sum3)
- gym.py: GymTask, a reasoning-gym dataset as a task ("rg:<dataset>")
- answers.py: extract_answer, the one reading of an answer out of a completion
- here: get_task (a task by name), regenerate (an item from its TaskRef), UnknownTask
"""
from swarmnode.tasks.answers import extract_answer
from swarmnode.tasks.base import Task, TaskItem, TaskRef
from swarmnode.tasks.builtin import BUILTIN_TASKS

DEFAULT_TASKS = ("sum2", "sum3")


class UnknownTask(KeyError):
    pass


def get_task(name: str) -> Task:
    """The task called `name`: a built-in one or "rg:<reasoning-gym dataset>"."""
    if name in BUILTIN_TASKS:
        return BUILTIN_TASKS[name]
    if name.startswith("rg:"):
        from swarmnode.tasks.gym import GymTask

        try:
            return GymTask(name[3:])
        except KeyError as e:
            raise UnknownTask(str(e)) from None
    raise UnknownTask(f"unknown task {name!r}; built-in: {', '.join(BUILTIN_TASKS)}, or rg:<dataset>")


def regenerate(ref: TaskRef) -> TaskItem:
    return get_task(ref.task).item(ref.seed, ref.index)


__all__ = ["DEFAULT_TASKS", "Task", "TaskItem", "TaskRef", "UnknownTask", "extract_answer", "get_task", "regenerate"]

"""tasks/gym.py: reasoning-gym datasets as tasks, and the scorer fix for one of them."""
from swarmnode.tasks import get_task


def test_game_of_life_halting_hack_is_closed():
    task = get_task("rg:game_of_life_halting")
    items = [task.item(0, i) for i in range(30)]
    falses = [i for i in items if i.answer == "False"]
    assert falses, "expected some items whose truth is False"
    for item in falses:
        assert task.score(item, "anything at all") == 0.0
        assert task.score(item, "False") == 1.0

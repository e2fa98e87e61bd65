"""cli/render.py: what `swarmnode status` shows, within 80 columns."""


def test_status_view_shows_the_plan_and_idle_shares_in_80_columns():
    from rich.console import Console

    from swarmnode.cli.render import status_view
    from tests.unit.status.test_summaries_status import status

    plan = {"local_rollouts": 3, "external_rollouts": 3, "external_wait_s": 0.017, "steps_per_window": 23.61,
            "reason": "slow: fewer so >= 24 steps fit a window; s = a + b x groups: generate 0 + 0.088, "
                      "train 0 + 0.068; peers supply 180 groups/s"}
    training = {"model": "bundled:tiny-policy", "plan": plan, "generator_idle_share": 0.285, "trainer_idle_share": 0.0153,
                "staleness_local": {"0": 95, "1": 1029}, "staleness_external": {"0": 42, "1": 446, "2": 300}}
    console = Console(width=80, record=True, color_system=None)
    console.print(status_view(status(training=training)))
    text = console.export_text()
    assert all(len(line) <= 80 for line in text.splitlines())
    flat = " ".join(text.split())
    assert "I/J 3/3, wait 0.017 s, 23.61 steps/window" in flat and "peers supply 180 groups/s" in flat
    assert "trainer idle share 0.0153" in flat and "staleness external {'0': 42, '1': 446, '2': 300}" in flat

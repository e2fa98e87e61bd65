"""scripts/experiments/byzantine_experiment.py: its arms, each node's environment, the victim's
timeline of its dishonest partners, and what a turncoat got merged after it turned."""
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def exp():
    return load_script("scripts/experiments/byzantine_experiment.py")


def test_the_one_on_one_share_and_the_timed_turncoat_and_echo_are_accepted(exp):
    args = exp.parse_args(["--attacks", "turncoat:3@90,echo", "--shares", "1/1", "--baselines", "lone"])
    assert exp.arms(args) == [("lone", None, None), ("turncoat:3@90 1/1", "turncoat:3@90", "1/1"),
                              ("echo 1/1", "echo", "1/1")]
    assert exp.node_bends("echo 1/1", "echo", "1/1") == [None, "echo"]  # the victim and one liar: two daemons
    assert exp.node_bends("echo 2/4", "echo", "2/4") == [None, None, None, "echo", "echo"]
    for bad in (["--attacks", "sign_flip:2@5"], ["--shares", "1/2"]):
        with pytest.raises(SystemExit):
            exp.parse_args(bad)


def test_an_echo_is_told_the_victims_home(exp, tmp_path):
    bends, seeds = [None, "echo", "sign_flip:8"], [1, 2, 3]
    victim, echo, flipper = (exp.node_environment(i, bends, seeds, 40, tmp_path) for i in range(3))
    assert echo["SWARMNODE_ECHO_HOME"] == str(tmp_path / "node0") and echo["SWARMNODE_BEND"] == "echo"
    assert "SWARMNODE_ECHO_HOME" not in flipper and "SWARMNODE_BEND" not in victim
    assert echo["SWARMNODE__TRAINING__MAX_STEPS"] == "400" and "SWARMNODE__TRAINING__MAX_STEPS" not in victim


def rows(merged: int | None, trust: float = 0.5):
    view = {} if merged is None else {"liar": {"merged": merged, "skipped": 1, "judged": merged + 1, "trust": trust}}
    return [{"name": "node0", "peer_id": "victim", "summaries": {"trust": view}},
            {"name": "node1", "peer_id": "liar"}]


def test_the_timeline_keeps_a_point_per_change_and_counts_merges_after_the_turn(exp):
    now = iter(range(100, 200, 10))
    timeline = exp.Timeline([1], clock=lambda: next(now))
    for r in (rows(None), rows(2), rows(2), rows(5), rows(9, 0.1)):  # polls at 100, 110, 120, 130, 140
        timeline(r)
    assert [p["t"] for p in timeline.points] == [100, 110, 130, 140]  # 120 changed nothing
    assert timeline.points[0]["view"] == {"liar": {"merged": None, "skipped": None, "judged": None, "trust": None}}
    assert timeline.points[1]["view"]["liar"] == {"merged": 2, "skipped": 1, "judged": 3, "trust": 0.5}
    turned = exp.turned_at("[dishonest] every summary bent: turncoat:3@90\n[dishonest] turned at 125.500, summary 9\n")
    assert turned == 125.5 and exp.turned_at("[dishonest] every summary bent: echo\n") is None
    assert exp.merged_after_turn(timeline.points, "liar", turned, 11) == 11 - 2  # the last poll before: 2 merged
    assert exp.merged_after_turn(timeline.points, "liar", 105.0, 11) == 11  # not judged before it turned
    assert exp.merged_after_turn(timeline.points, "liar", None, 11) is None


def arm_of(exp, partners, attack="turncoat:3@90"):
    run = {"arm": f"{attack} 1/1", "attack": attack, "share": "1/1", "seed": 0, "curve": [[0, 0.1], [20, 0.2]],
           "initial_accuracy": 0.1, "final_accuracy": 0.2, "merge_share": 0.0, "partners": partners}
    args = exp.parse_args(["--attacks", attack, "--shares", "1/1", "--baselines", "lone"])
    return exp.summarise([run], args)


def partner(**extra):
    return {"node": 1, "bend": "turncoat:3@90", "peer_id": "liar", "trust": 0.2, "judged": 9, "merged": 4,
            "skipped": 5, "harmful": 0, "struck": {}, **extra}


def test_hostile_verdicts_count_only_summaries_made_after_the_turn(exp):
    log = "\n".join([
        "2026-11-28 10:00:00 DEBUG swarmnode.summaries: judged the summary of liar made at 99.000: agreement 0.02, "
        "evidence +0.80, trust 1.00, merged",  # made before it turned: honest, still in flight
        "2026-11-28 10:00:01 DEBUG swarmnode.summaries: judged the summary of liar made at 100.500: agreement -0.02, "
        "evidence -0.20, trust 0.60, merged",
        "2026-11-28 10:00:02 DEBUG swarmnode.summaries: judged the summary of liar made at 101.000: agreement -0.03, "
        "evidence -1.00, trust 0.00, against_direction",
        "2026-11-28 10:00:02 DEBUG swarmnode.summaries: judged the summary of other made at 101.000: agreement 0.03, "
        "evidence +1.00, trust 1.00, merged",
    ])
    assert exp.hostile_verdicts(log, "liar", 100.0) == {"judged": 2, "merged": 1}
    assert exp.hostile_verdicts(log, "liar", None) is None


def test_merged_after_turn_in_the_summary_and_table_and_old_results_still_replot(exp):
    summary = arm_of(exp, [partner(turned_at=125.5, merged_after_turn=3, hostile={"judged": 7, "merged": 1})])
    assert summary["arms"]["turncoat:3@90 1/1"]["dishonest_merged_after_turn"] == 3
    assert summary["arms"]["turncoat:3@90 1/1"]["hostile_merged"] == "1/7"
    assert "1/7" in list(exp.table(summary).columns[7].cells)
    never = arm_of(exp, [partner(turned_at=None, merged_after_turn=None)])
    assert never["arms"]["turncoat:3@90 1/1"]["dishonest_merged_after_turn"] is None
    old = arm_of(exp, [partner()])  # results from before the timeline: no such keys
    del old["arms"]["turncoat:3@90 1/1"]["dishonest_merged_after_turn"]
    assert list(exp.table(old).columns[7].cells) == ["-"]


def test_the_clean_1_baseline_is_the_victim_and_one_honest_partner(exp):
    assert exp.node_bends("clean-1", None, None) == [None, None]
    assert exp.node_bends("clean-2", None, None) == [None] * 3
    assert exp.node_bends("turncoat:3@90 1/1", "turncoat:3@90", "1/1") == [None, "turncoat:3@90"]

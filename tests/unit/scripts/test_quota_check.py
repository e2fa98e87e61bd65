"""scripts/experiments/quota_check.py: its arguments and the lone config its nodes train on."""
import pytest
import yaml

from tests.helpers import load_script


@pytest.fixture(scope="module")
def qc():
    return load_script("scripts/experiments/quota_check.py")


def test_args(qc):
    args = qc.parse_args([])
    assert args.quotas == [0.8, 0.4, 0.2, 0.2] and args.probe == 3 and args.modes == ["quota", "slowdown"]
    assert qc.parse_args(["--quotas", "1,0.5", "--probe", "0"]).probe == 0
    for bad in (["--quotas", "1"], ["--quotas", "1,0"], ["--probe", "4"], ["--modes", "quota,nope"]):
        with pytest.raises(SystemExit):
            qc.parse_args(bad)


def test_nodes_train_alone(qc, tmp_path):
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"training": {"max_steps": 10, "eval_every": 25}, "rollouts": {"share": True}}))
    cfg = yaml.safe_load(qc.lone_config(base, tmp_path / "lone.yaml").read_text())
    assert cfg["rollouts"]["share"] is False and cfg["summaries"]["enabled"] is False
    assert "max_steps" not in cfg["training"] and cfg["training"]["eval_every"] == 1_000_000


def test_probe_ratios_by_hand(qc):
    alone, beside, again = ({"steps_per_s": 1.0, "cores": 0.2}, {"steps_per_s": 1.5, "cores": 0.2},
                            {"steps_per_s": 0.5, "cores": 0.2})
    r = qc.probe_ratios(alone, beside, again)
    assert r["ratio_steps"] == 2.0 and r["ratio_cores"] == 1.0 and r["alone_drift_steps"] == 0.5
    assert qc.probe_ratios({"steps_per_s": 0, "cores": 0}, beside, {"steps_per_s": 0, "cores": 0})["ratio_steps"] is None

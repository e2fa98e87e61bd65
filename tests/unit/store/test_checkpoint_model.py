"""store/checkpoint_model.py: a checkpoint names its model, and another model is refused in one line."""
from dataclasses import replace

import torch

from swarmnode.store.checkpoint_model import (
    CheckpointModel,
    difference,
    mismatch_line,
    parameters_fingerprint,
    read_checkpoint_model,
    saved_parameter_shapes,
)
from swarmnode.store.checkpoints import TrainingState, save_checkpoint

MODEL = CheckpointModel(name_or_path="bundled:tiny-policy", base_fingerprint="a" * 16, base_weights_key="{}",
                        dtype="float32", model_type="qwen2", architecture="b" * 16, parameters="c" * 16)


def saved(tmp_path, model_record=None, width=3):
    model = torch.nn.Sequential(torch.nn.Linear(4, width))
    optimizer = torch.optim.AdamW(model.parameters())
    return save_checkpoint(tmp_path, model.state_dict(), optimizer.state_dict(), TrainingState(1, 1, 0, {}),
                           model_record=model_record)


def test_the_record_written_with_a_checkpoint_is_read_back(tmp_path):
    assert read_checkpoint_model(saved(tmp_path, MODEL.to_json())) == MODEL


def test_a_checkpoint_of_an_earlier_release_has_no_record_but_its_shapes_are_read_from_the_header(tmp_path):
    path = saved(tmp_path)
    assert read_checkpoint_model(path) is None
    assert saved_parameter_shapes(path) == {"0.weight": (3, 4), "0.bias": (3,)}


def test_an_incomplete_or_damaged_record_counts_as_none(tmp_path):
    assert CheckpointModel.from_json({"name_or_path": "x"}) is None
    assert CheckpointModel.from_json("x") is None
    path = saved(tmp_path, MODEL.to_json())
    (path / "state.json").write_text("{not json")
    assert read_checkpoint_model(path) is None


def test_parameters_fingerprint_depends_on_names_and_shapes_not_order():
    assert parameters_fingerprint({"a": (1, 2), "b": (3,)}) == parameters_fingerprint({"b": (3,), "a": (1, 2)})
    assert parameters_fingerprint({"a": (1, 2)}) != parameters_fingerprint({"a": (2, 1)})
    assert parameters_fingerprint({"a": (1, 2)}) != parameters_fingerprint({"b": (1, 2)})


def test_difference_tells_shape_then_base_weights_and_lets_a_dtype_change_of_the_same_model_pass():
    assert difference(MODEL, MODEL) is None
    assert "another shape" in difference(MODEL, replace(MODEL, parameters="d" * 16, base_fingerprint="e" * 16))
    assert "other base weights: " + "e" * 16 in difference(MODEL, replace(MODEL, base_fingerprint="e" * 16))
    assert difference(MODEL, replace(MODEL, dtype="bfloat16", base_fingerprint="e" * 16)) is None
    other = replace(MODEL, name_or_path="bundled:tiny-sum3", dtype="bfloat16", base_fingerprint="e" * 16)
    assert "cannot be compared; if it is the same model, set model.dtype: float32" in difference(MODEL, other)


def test_the_refusal_is_one_line_naming_both_models_and_what_to_do(tmp_path):
    other = replace(MODEL, name_or_path="bundled:tiny-sum3", base_fingerprint="e" * 16)
    line = mismatch_line(tmp_path, "v00000460", MODEL, None, other)
    assert "\n" not in line
    for text in (f"node home {tmp_path}", "bundled:tiny-policy (base fingerprint " + "a" * 16, "v00000460",
                 "model.name_or_path is bundled:tiny-sum3", "other base weights", "use another --home",
                 f"swarmnode reset-training --home {tmp_path}"):
        assert text in line, text
    assert mismatch_line(tmp_path, "v00000460", MODEL, None, MODEL) is None


def test_an_older_checkpoint_is_refused_only_when_its_shapes_differ(tmp_path):
    shapes = {"0.weight": (3, 4), "0.bias": (3,)}
    current = replace(MODEL, parameters=parameters_fingerprint(shapes))
    assert mismatch_line(tmp_path, "v1", None, shapes, current) is None
    line = mismatch_line(tmp_path, "v1", None, {"0.weight": (5, 4), "0.bias": (5,)}, current)
    assert "an older checkpoint" in line and "another shape" in line and "reset-training" in line
    assert mismatch_line(tmp_path, "v1", None, None, current) is None  # unreadable: load_checkpoint says why

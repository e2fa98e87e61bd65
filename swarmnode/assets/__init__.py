"""Files shipped with the package: the bundled tiny policies (built by scripts/dev/build_tiny_policy.py).

Each folder is a HF model folder that `load_policy("bundled:<name>")` loads:

- tiny-policy/: the default policy, a ~1M-parameter Qwen2 that can just about do sum2 and sum3
- tiny-letters/: a letter-counting specialist that has never seen a sum (a diverse swarm's second model)
- tiny-sum3/: a sum3 specialist, weak at sum2 (a mixed swarm's second model)
- tiny-sum3-some-sum2/: tiny-sum3 after a little sum2

`bundled_names` lists them, `bundled_folder` finds one; imports nothing else (no torch), so a
start-time check can look a name up cheaply.
"""
from pathlib import Path

BUNDLED_PREFIX = "bundled:"  # model.name_or_path of a bundled policy: "bundled:<folder name>"


def bundled_folder(name: str) -> Path:
    """The folder of bundled policy `name` (it may not exist)."""
    return Path(__file__).resolve().parent / name


def bundled_names() -> tuple[str, ...]:
    """Every bundled policy (a folder here with a config.json), sorted."""
    return tuple(sorted(p.name for p in Path(__file__).resolve().parent.iterdir() if (p / "config.json").is_file()))

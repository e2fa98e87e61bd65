"""Files shipped with the package: the bundled tiny policies (built by scripts/dev/build_tiny_policy.py).

Each folder is a HF model folder that `load_policy("bundled:<name>")` loads:

- tiny-policy/: the default policy, a ~1M-parameter Qwen2 that can just about do sum2 and sum3
- tiny-letters/: a letter-counting specialist that has never seen a sum (a diverse swarm's second model)
- tiny-sum3/: a sum3 specialist, weak at sum2 (a mixed swarm's second model)
- tiny-sum3-some-sum2/: tiny-sum3 after a little sum2
"""

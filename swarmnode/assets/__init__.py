"""Files shipped with the package: the bundled tiny policy (built by scripts/build_tiny_policy.py)."""

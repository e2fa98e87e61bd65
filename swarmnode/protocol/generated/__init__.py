"""Python generated from protocols/swarmnode/v1/*.proto by scripts/dev/gen_protos.py. Do not edit."""

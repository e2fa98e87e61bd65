"""Configuration: the NodeConfig model and its YAML loader."""
from swarmnode.config.loader import ConfigError, bundled_config_path, default_config_text, load_config
from swarmnode.config.model import NodeConfig

__all__ = ["ConfigError", "NodeConfig", "bundled_config_path", "default_config_text", "load_config"]

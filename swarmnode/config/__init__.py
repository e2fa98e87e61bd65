"""Configuration: the NodeConfig model and its YAML loader.

- model.py: NodeConfig and its sections (SwarmConfig, NetworkConfig, ModelConfig, TrainingConfig,
  RolloutGossipConfig, SummariesConfig, SchedulerConfig, LimitsConfig, StorageConfig, LoggingConfig)
- loader.py: load_config (defaults < YAML < SWARMNODE__* environment < overrides; every mistake
  as one line, ConfigError; load_config_with_sources and ValueSources: where each value came
  from, flag, environment variable or file), default_config_text and bundled_config_path (configs/*.yaml)
"""
from swarmnode.config.loader import (
    ConfigError,
    ValueSources,
    bundled_config_path,
    default_config_text,
    load_config,
    load_config_with_sources,
)
from swarmnode.config.model import NodeConfig

__all__ = ["ConfigError", "NodeConfig", "ValueSources", "bundled_config_path", "default_config_text", "load_config",
           "load_config_with_sources"]

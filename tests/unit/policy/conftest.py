import pytest

from tests.helpers import save_random_tiny_policy


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A random tiny Qwen2 with the byte tokenizer, saved once per test module."""
    return save_random_tiny_policy(tmp_path_factory.mktemp("tiny"))

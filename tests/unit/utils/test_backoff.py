"""utils/backoff.py: retry delays for joining."""
import pytest

from swarmnode.utils.backoff import backoff_delay


def test_backoff_doubles_to_cap():
    assert [backoff_delay(a, 1.0, 10.0) for a in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    with pytest.raises(ValueError):
        backoff_delay(0, 1.0, 10.0)


def test_jitter_spans_half_to_all_of_the_delay():
    from swarmnode.utils.backoff import jittered

    assert [jittered(8.0, d) for d in (0.0, 0.5, 1.0)] == [4.0, 6.0, 8.0]
    with pytest.raises(ValueError):
        jittered(8.0, 1.5)

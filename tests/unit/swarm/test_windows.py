"""swarm/windows.py by hand: window indices and the DHT keys of each window."""
from swarmnode.swarm.windows import peer_records_key, window_index, windows_to_read


def test_window_math_by_hand():
    assert window_index(125.0, 30.0) == 4
    assert window_index(120.0, 30.0) == 4
    assert window_index(119.999, 30.0) == 3
    assert windows_to_read(4) == (4, 3)
    assert peer_records_key("s", 4) == "swarmnode/s/peers/4"

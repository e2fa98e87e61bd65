"""protocol/libp2p_messages.py: the py-libp2p transport's keys, entries and stream answers, with bounds."""
from hypothesis import given
from hypothesis import strategies as st

from swarmnode.protocol import libp2p_messages

KEY = "swarmnode/s/peers/7"
PEER = "12D3KooWA1b2C3"


def test_dht_keys_map_a_key_and_subkey_and_back():
    assert libp2p_messages.dht_key(KEY, PEER) == "/swarmnode/s/peers/7/12D3KooWA1b2C3"
    assert libp2p_messages.provider_key(KEY) == "/swarmnode/s/peers/7"
    assert libp2p_messages.split_dht_key(libp2p_messages.dht_key(KEY, PEER)) == (KEY, PEER)
    for other in ("/pk/abc", "swarmnode/s/peers/7/x", "/swarmnode/", "/swarmnode/x/", "/swarmnode/" + "k" * 500 + "/p"):
        assert libp2p_messages.split_dht_key(other) is None


def test_entries_round_trip_and_out_of_bounds_ones_are_refused():
    entry = libp2p_messages.DhtEntry(KEY, PEER, b"signed bytes", 1_800_000_000.0)
    assert libp2p_messages.decode_entry(libp2p_messages.encode_entry(entry)) == entry
    for bad in (libp2p_messages.DhtEntry("other/s/peers/7", PEER, b"v", 1e9),  # not the swarm's namespace
                libp2p_messages.DhtEntry(KEY, "", b"v", 1e9), libp2p_messages.DhtEntry(KEY, "a/b", b"v", 1e9),
                libp2p_messages.DhtEntry(KEY, PEER, b"v" * (libp2p_messages.MAX_ENTRY_VALUE_BYTES + 1), 1e9),
                libp2p_messages.DhtEntry(KEY, PEER, b"v", float("nan")), libp2p_messages.DhtEntry(KEY, PEER, b"v", 0.0)):
        assert libp2p_messages.decode_entry(libp2p_messages.encode_entry(bad)) is None
    assert libp2p_messages.decode_entry(b"\xff" * 10) is None
    assert libp2p_messages.decode_entry(b"\x00" * (libp2p_messages.MAX_ENTRY_BYTES + 1)) is None


def test_replies_carry_a_payload_or_a_short_error():
    assert libp2p_messages.decode_reply(libp2p_messages.encode_reply(b"answer")) == (b"answer", "")
    assert libp2p_messages.decode_reply(libp2p_messages.encode_reply(error="x" * 500)) == (b"", "x" * libp2p_messages.MAX_ERROR_CHARS)
    assert libp2p_messages.decode_reply(b"\x00" * (libp2p_messages.MAX_REPLY_BYTES + 1)) is None
    assert libp2p_messages.stream_protocol("swarmnode/v1/rollouts") == "/swarmnode/v1/rollouts"


@given(st.binary(max_size=2048))
def test_any_bytes_decode_to_an_entry_within_bounds_or_none(data):
    entry = libp2p_messages.decode_entry(data)
    if entry is not None:
        assert entry.key.startswith("swarmnode/") and 0 < len(entry.subkey) and "/" not in entry.subkey
        assert 0 < entry.expiration < 1e11
    reply = libp2p_messages.decode_reply(data)
    assert reply is None or len(reply[1]) <= libp2p_messages.MAX_ERROR_CHARS



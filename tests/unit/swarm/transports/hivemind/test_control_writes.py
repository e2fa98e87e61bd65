"""swarm/transports/hivemind/control_writes.py: a control message to p2pd in one send, the same
bytes hivemind's bindings frame it with (their own varint writer and reader are the reference)."""
import asyncio
import socket

from hivemind.p2p.p2p_daemon_bindings import control, utils
from hivemind.proto import p2pd_pb2

from swarmnode.swarm.transports.hivemind.control_writes import length_prefixed, varint, write_in_one_send, write_pbmsg


class Writes:
    """A StreamWriter's two calls, recorded: each write's bytes, and the drains."""

    def __init__(self):
        self.sends: list[bytes] = []
        self.drains = 0

    def write(self, data: bytes) -> None:
        self.sends.append(bytes(data))

    async def drain(self) -> None:
        self.drains += 1


def message(size: int) -> p2pd_pb2.PersistentConnectionRequest:
    """A unary call whose body is about `size` bytes, as the control client sends them."""
    return p2pd_pb2.PersistentConnectionRequest(
        callId=b"\x01" * 16, callUnary=p2pd_pb2.CallUnaryRequest(peer=b"\x02" * 38, proto="x", data=b"d" * size))


def test_varint_by_hand():
    assert [varint(n) for n in (0, 1, 127, 128, 300, 16383, 16384)] == [
        b"\x00", b"\x01", b"\x7f", b"\x80\x01", b"\xac\x02", b"\xff\x7f", b"\x80\x80\x01"]
    assert length_prefixed(b"abc") == b"\x03abc"


def test_one_send_of_the_bytes_hiveminds_writer_sends_in_three():
    async def both(msg):
        theirs, ours = Writes(), Writes()
        await utils.write_unsigned_varint(theirs, msg.ByteSize())  # hivemind's own framing, byte by byte
        theirs.write(msg.SerializeToString())
        await write_pbmsg(ours, msg)
        return theirs, ours

    for size in (0, 100, 300, 20_000):
        theirs, ours = asyncio.run(both(message(size)))
        assert b"".join(ours.sends) == b"".join(theirs.sends)
        assert len(ours.sends) == 1 and ours.drains == 1
    assert len(theirs.sends) == 4  # 20 KB: a three-byte length, a send each, then the body


def test_hiveminds_reader_reads_what_it_writes_over_a_real_socket():
    async def round_trip(msgs):
        a, b = socket.socketpair()
        reader, reader_side = await asyncio.open_connection(sock=a)  # both kept: a dropped writer closes its socket
        _, writer = await asyncio.open_connection(sock=b)

        async def read_all():
            got = []
            for _ in msgs:
                out = p2pd_pb2.PersistentConnectionRequest()
                await utils.read_pbmsg_safe(reader, out)
                got.append(out)
            return got

        reading = asyncio.create_task(read_all())
        for msg in msgs:
            await write_pbmsg(writer, msg)
        got = await reading
        writer.close()
        reader_side.close()
        return got

    sent = [message(size) for size in (0, 5, 200, 70_000)]
    assert asyncio.run(round_trip(sent)) == sent


def test_the_control_client_sends_through_it_once_installed():
    write_in_one_send()
    assert control.write_pbmsg is write_pbmsg and utils.write_pbmsg is write_pbmsg

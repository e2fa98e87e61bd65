"""cli/logfile.py: the last lines of a log, and following it as it grows and is rotated by a
real logging.handlers.RotatingFileHandler."""
import io
import logging
import logging.handlers
import threading
import time

import pytest

from swarmnode.cli.logfile import BLOCK, follow, last_lines


@pytest.mark.parametrize("n", [0, 1, 5, 300])
def test_last_lines_reads_back_from_the_end_across_blocks(tmp_path, n):
    path = tmp_path / "node.log"
    lines = [f"line {i:04d} " + "x" * (i % 97) + "\n" for i in range(300)]  # several BLOCKs long
    path.write_text("".join(lines))
    assert path.stat().st_size > 2 * BLOCK
    with open(path, "rb") as f:
        assert last_lines(f, n).decode() == "".join(lines[len(lines) - n:] if n else [])
        assert f.tell() == path.stat().st_size  # left at the end, for a follower


def test_last_lines_of_a_file_without_a_final_newline_or_empty(tmp_path):
    path = tmp_path / "node.log"
    path.write_bytes(b"a\nb\nc")
    with open(path, "rb") as f:
        assert last_lines(f, 2) == b"b\nc"
    path.write_bytes(b"")
    with open(path, "rb") as f:
        assert last_lines(f, 5) == b""


def test_follow_reads_every_line_once_across_rotations(tmp_path):
    path = tmp_path / "node.log"
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=2048, backupCount=50, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("test.follow")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    logger.info("before the follower")
    out, stop = io.StringIO(), threading.Event()
    f = open(path, "rb")
    last_lines(f, 0)
    follower = threading.Thread(target=follow, args=(f, path, out.write), kwargs={"poll_s": 0.01, "keep_going": lambda: not stop.is_set()})
    follower.start()
    try:
        for i in range(400):  # about 28 KiB: about 14 rotations
            logger.info("line %03d with some text after it: é, to cross a block now and then", i)
            if i % 20 == 19:  # at most one rotation before the follower has caught up (see follow's docstring)
                deadline = time.monotonic() + 10
                while f"line {i:03d}" not in out.getvalue() and time.monotonic() < deadline:
                    time.sleep(0.005)
    finally:
        stop.set()
        follower.join()
        logger.removeHandler(handler)
        handler.close()
    assert len(list(tmp_path.glob("node.log.*"))) >= 10
    got = out.getvalue().splitlines()
    assert got == [f"line {i:03d} with some text after it: é, to cross a block now and then" for i in range(400)]

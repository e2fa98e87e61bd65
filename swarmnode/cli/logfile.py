"""`swarmnode logs`: the last lines of the node's log file, and following it as it grows and is
rotated (logging.handlers.RotatingFileHandler renames node.log to node.log.1 and starts anew)."""
from __future__ import annotations

import codecs
import os
import time
from pathlib import Path
from typing import BinaryIO, Callable

BLOCK = 8192


def last_lines(f: BinaryIO, n: int) -> bytes:
    """The last `n` lines of the open file `f` (read from its end, block by block), leaving
    `f` at its end: a follower goes on from there, losing and repeating nothing."""
    end = f.seek(0, os.SEEK_END)
    data, pos = b"", end
    while pos > 0 and data.count(b"\n") <= n:
        step = min(BLOCK, pos)
        pos -= step
        f.seek(pos)
        data = f.read(step) + data
    f.seek(end)
    return b"".join(data.splitlines(keepends=True)[-n:]) if n > 0 else b""


def _same_file(f: BinaryIO, path: Path) -> bool | None:
    """Whether `path` still names the open file `f`; None while nothing is at `path`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    own = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def follow(f: BinaryIO, path: Path, write: Callable[[str], None], *, poll_s: float = 0.5,
           keep_going: Callable[[], bool] = lambda: True) -> None:
    """Write what is appended to `f` (open on `path`) as it comes; once `path` names a new
    file (the log was rotated) and `f` has nothing left, go on with the new file from its start;
    a file cut shorter is read again from its start. Returns when `keep_going()` is false.
    As with `tail -F`, a file rotated twice before the follower has read it to its end is
    skipped: at logging.max_bytes that takes megabytes of log within one poll."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        while keep_going():
            chunk = f.read(BLOCK)
            if chunk:
                write(decoder.decode(chunk))
                continue
            same = _same_file(f, path)
            if same is False:
                f.close()
                try:
                    f = open(path, "rb")
                except FileNotFoundError:  # rotated again meanwhile: look once more next time
                    f = open(os.devnull, "rb")
                continue
            if same and os.fstat(f.fileno()).st_size < f.tell():
                f.seek(0)
                continue
            time.sleep(poll_s)
    finally:
        f.close()

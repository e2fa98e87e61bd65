"""The node's log: the console and `<home>/logs/node.log`, its start line, the record of how the
last run ended, and the periodic progress line.

- `setup_logging`: the console (short times, one line per failure) and the rotating file
  (dated times, rotated by logging.max_bytes, logging.backup_count files kept); a record logged
  with `extra=FILE_ONLY` (a traceback) goes to the file only.
- `log_uncaught_exceptions`: an exception no thread caught lands in the file with its traceback.
- `RecordedRun`: holding the home's DaemonLock, records the run's start and how it ended
  (home.begin_run / end_run), and gives `log_start` (the run's first line) the previous run's end.
- `progress_loop`: every logging.summary_interval_s, one line (status/progress_line.py).
"""
from __future__ import annotations

import asyncio
import logging
import logging.handlers
import os
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Callable

from swarmnode.home import NodeHome, begin_run, end_run
from swarmnode.status.progress_line import progress_line

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FILE_DATEFMT = "%Y-%m-%d %H:%M:%S"  # ISO date and time: a log read days later says when
CONSOLE_DATEFMT = "%H:%M:%S"
FILE_ONLY = {"file_only": True}  # `extra=` of a record for the log file only (a traceback)
log = logging.getLogger("swarmnode")


# Libraries' notices (Python warnings, transformers' deprecations, huggingface_hub's download
# retries): the file keeps them, the console, which a user reads, does not.
LIBRARY_NOISE = ("py.warnings", "transformers", "huggingface_hub")


class _NotFileOnly(logging.Filter):
    """The console's filter: the records marked FILE_ONLY, and libraries' notices, stay out."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "file_only", False) and not record.name.startswith(LIBRARY_NOISE)


def console_handler(level: int) -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt=CONSOLE_DATEFMT))
    handler.addFilter(_NotFileOnly())
    handler.setLevel(level)
    return handler


def file_handler(path: Path, level: int, max_bytes: int, backup_count: int) -> logging.Handler:
    """The rotating log file (its folder made); raises OSError when it cannot be opened."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=max_bytes, backupCount=backup_count,
                                                   encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, datefmt=FILE_DATEFMT))
    handler.setLevel(level)
    return handler


def setup_logging(level: str, log_file: Path | None = None, max_bytes: int = 10 * 2**20, backup_count: int = 5) -> None:
    """The process's logging: the console and, with `log_file`, the rotating file, both at
    `level`. Raises OSError when the file cannot be opened (before anything is replaced)."""
    number = getattr(logging, level.upper(), logging.INFO)
    handlers = [console_handler(number)]
    if log_file is not None:
        handlers.append(file_handler(log_file, number, max_bytes, backup_count))
    logging.basicConfig(level=number, handlers=handlers, force=True)
    logging.captureWarnings(True)  # warnings.warn(...) of libraries become records of "py.warnings"
    # hivemind logs every DHT hiccup at WARNING; the node reports what matters itself.
    for noisy in ("hivemind", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def route_hivemind_logs() -> None:
    """hivemind's errors through this process's handlers (the log file too), not its own stderr handler."""
    from hivemind.utils.logging import use_hivemind_log_handler

    use_hivemind_log_handler("nowhere")
    logging.getLogger("hivemind").setLevel(logging.ERROR)  # "nowhere" resets the level


def route_model_library_logs() -> None:
    """transformers' and huggingface_hub's records through this process's handlers (the file
    keeps them, the console filters them out), not their own stderr handlers, which would print
    each of them raw on the console (huggingface_hub's twice: raw, then through the root)."""
    from huggingface_hub.utils import logging as hub_logging
    from transformers.utils import logging as hf_logging

    hf_logging.disable_default_handler()
    hf_logging.enable_propagation()
    hub_root = hub_logging.get_logger()
    for handler in list(hub_root.handlers):
        hub_root.removeHandler(handler)
    hub_root.propagate = True


def one_line(error: BaseException) -> str:
    """An exception as `Type: first line of its message` (a task group's one error: that error)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300]}" if text else type(error).__name__


def log_crash(error: BaseException, where: str, log_file: Path | None) -> None:
    """One line on the console and in the file (naming the file), the traceback in the file only."""
    see = f" (traceback in {log_file})" if log_file is not None else ""
    log.error("%s crashed: %s%s", where, one_line(error), see)
    log.error("%s crashed", where, exc_info=(type(error), error, error.__traceback__), extra=FILE_ONLY)


def log_uncaught_exceptions(log_file: Path | None) -> None:
    """An exception that ends a thread uncaught is logged (traceback in the file) instead of
    printed to stderr alone."""
    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
            name = args.thread.name if args.thread is not None else "a thread"
            log_crash(args.exc_value, f"thread {name}", log_file)

    threading.excepthook = thread_hook


def previous_run_text(previous: dict[str, Any] | None) -> str:
    """How the previous run of a home ended, from its home.begin_run record."""
    if previous is None:
        return "no earlier run recorded in this home"
    ended = previous.get("ended")
    if ended == "cleanly":
        return "the previous run ended cleanly"
    if ended:
        return f"the previous run stopped on an error ({ended})"
    started = previous.get("started_at")
    when = time.strftime(FILE_DATEFMT, time.localtime(started)) if isinstance(started, (int, float)) else "?"
    return f"the previous run (pid {previous.get('pid', '?')}, started {when}) did not end cleanly (killed or crashed)"


def start_line(version: str, config: str, home: Path, previous: dict[str, Any] | None) -> str:
    return f"swarmnode {version} starting: config {config}; home {home}; {previous_run_text(previous)}"


def log_start(version: str, config: str, home: Path, previous: dict[str, Any] | None) -> None:
    """The run's first line; a WARNING when the previous run did not end cleanly."""
    unclean = previous is not None and previous.get("ended") != "cleanly"
    log.log(logging.WARNING if unclean else logging.INFO, "%s", start_line(version, config, home, previous))


class RecordedRun:
    """`with RecordedRun(home, fatal) as previous:` around a run that holds the home's DaemonLock:
    records the start (`previous` is the last run's record) and, on the way out, how this run
    ended: "cleanly", "failed: <fatal()>" (it stopped itself on an error), or "crashed: <error>".
    A run that is killed never reaches the end: the next start says so."""

    def __init__(self, home: NodeHome, fatal: Callable[[], str | None]):
        self.home = home
        self.fatal = fatal

    def __enter__(self) -> dict[str, Any] | None:
        return begin_run(self.home, os.getpid(), time.time())

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if error is not None:
            ended = f"crashed: {one_line(error)}"
        else:
            fatal = self.fatal()
            ended = "cleanly" if fatal is None else f"failed: {fatal}"
        try:
            end_run(self.home, ended, time.time())
        except OSError as e:  # a home gone read-only: the next start will say "did not end cleanly"
            log.warning("cannot record the end of this run in %s (%s)", self.home.last_run_file, e)


async def progress_loop(snapshot: Callable[[], dict[str, Any]], interval_s: float) -> None:
    """Every `interval_s`, one line of the status document `snapshot()` in the log."""
    while True:
        await asyncio.sleep(interval_s)
        log.info("%s", progress_line(snapshot()))

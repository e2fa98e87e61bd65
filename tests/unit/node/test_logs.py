"""node/logs.py: the rotating, dated log file; tracebacks in the file only; the start line and
the record of how the last run ended; uncaught exceptions; the periodic progress line."""
import asyncio
import logging
import re
import threading

import pytest

from swarmnode.home import NodeHome
from swarmnode.node.logs import (
    FILE_ONLY,
    RecordedRun,
    file_handler,
    log_crash,
    log_start,
    log_uncaught_exceptions,
    one_line,
    previous_run_text,
    route_model_library_logs,
    setup_logging,
    start_line,
    progress_loop,
)
from tests.unit.status.helpers import status

DATED = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} (DEBUG|INFO|WARNING|ERROR) [\w.]+: ")


@pytest.fixture
def restored_logging():
    """setup_logging changes the process's root logger: put it back after the test."""
    root = logging.getLogger()
    handlers, level, hook = root.handlers[:], root.level, threading.excepthook
    yield
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:], threading.excepthook = handlers, hook
    root.setLevel(level)


def test_the_file_is_dated_and_rotated_by_size_keeping_backup_count_files(tmp_path):
    path = tmp_path / "logs" / "node.log"
    handler = file_handler(path, logging.INFO, max_bytes=1024, backup_count=2)
    logger = logging.getLogger("test.rotation")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    try:
        for i in range(100):
            logger.info("line %03d of a node's log, long enough to fill a kilobyte in a few lines", i)
    finally:
        logger.removeHandler(handler)
        handler.close()
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["node.log", "node.log.1", "node.log.2"]  # backup_count 2: older files are deleted
    for name in files:
        text = (path.parent / name).read_text()
        assert len(text.encode()) <= 1024
        assert all(DATED.match(line) for line in text.splitlines()), text
    assert path.read_text().splitlines()[-1].endswith("line 099 of a node's log, long enough to fill a kilobyte in a few lines")
    assert "line 000" not in "".join((path.parent / n).read_text() for n in files)  # rotated away


def test_a_file_only_record_stays_off_the_console(tmp_path, capsys, restored_logging):
    path = tmp_path / "logs" / "node.log"
    setup_logging("INFO", path, max_bytes=2**20, backup_count=1)
    log = logging.getLogger("swarmnode.test")
    try:
        raise RuntimeError("deep inside")
    except RuntimeError:
        log.error("stopping: training failed: RuntimeError: deep inside")
        log.error("training failed", exc_info=True, extra=FILE_ONLY)
    log.debug("not at INFO")
    console = capsys.readouterr().err
    assert console.count("\n") == 1 and "stopping: training failed: RuntimeError: deep inside" in console
    assert re.match(r"^\d{2}:\d{2}:\d{2} ERROR", console)  # the console keeps short times
    text = path.read_text()
    assert "stopping: training failed" in text and "Traceback (most recent call last)" in text
    assert 'raise RuntimeError("deep inside")' in text and "not at INFO" not in text


@pytest.fixture
def restored_library_loggers():
    """route_model_library_logs takes the libraries' own handlers off: put them back after the test."""
    import importlib

    for library in ("huggingface_hub", "transformers"):  # each sets up its logger on import
        importlib.import_module(library)

    loggers = [logging.getLogger(name) for name in ("transformers", "huggingface_hub")]
    saved = [(lg.handlers[:], lg.propagate) for lg in loggers]
    yield
    for lg, (handlers, propagate) in zip(loggers, saved):
        lg.handlers[:], lg.propagate = handlers, propagate


def test_model_libraries_notices_go_to_the_file_once_and_never_to_the_console(
        tmp_path, capfd, restored_logging, restored_library_loggers):
    """huggingface_hub's download retries and transformers' deprecations: the file has each once,
    the console none (their own stderr handlers printed them raw, the hub's a second time)."""
    path = tmp_path / "logs" / "node.log"
    setup_logging("INFO", path, max_bytes=2**20, backup_count=1)
    route_model_library_logs()
    logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")
    logging.getLogger("transformers.utils.generic").warning("`past_key_values` is deprecated")
    logging.getLogger("swarmnode.training").info("loading model owner/name")
    console = capfd.readouterr().err
    assert "Retry" not in console and "deprecated" not in console and "loading model owner/name" in console
    text = path.read_text()
    assert text.count("Retrying in 1s") == 1 and text.count("`past_key_values` is deprecated") == 1


def test_an_uncaught_exception_in_a_thread_lands_in_the_file_with_its_traceback(tmp_path, capsys, restored_logging):
    path = tmp_path / "node.log"
    setup_logging("INFO", path)
    log_uncaught_exceptions(path)

    def worker():
        raise ValueError("a bug in a worker")

    thread = threading.Thread(target=worker, name="gossip-worker")
    thread.start()
    thread.join()
    console = capsys.readouterr().err
    assert console.strip().endswith(f"thread gossip-worker crashed: ValueError: a bug in a worker (traceback in {path})")
    assert "Traceback" not in console
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and 'raise ValueError("a bug in a worker")' in text


def test_a_log_file_that_cannot_be_opened_is_an_oserror_before_anything_changes(tmp_path, restored_logging):
    (tmp_path / "logs").write_text("a file where the folder should be")
    before = logging.getLogger().handlers[:]
    with pytest.raises(OSError):
        setup_logging("INFO", tmp_path / "logs" / "node.log")
    assert logging.getLogger().handlers == before


def test_recorded_run_tells_the_next_start_how_this_one_ended(tmp_path):
    home = NodeHome(tmp_path)
    with RecordedRun(home, lambda: None) as previous:
        assert previous is None
    with RecordedRun(home, lambda: "training failed: boom") as previous:
        assert previous["ended"] == "cleanly"
    with pytest.raises(RuntimeError):
        with RecordedRun(home, lambda: None) as previous:
            assert previous["ended"] == "failed: training failed: boom"
            raise RuntimeError("bug")
    killed = RecordedRun(home, lambda: None)
    assert killed.__enter__()["ended"] == "crashed: RuntimeError: bug"
    # SIGKILLed: __exit__ never runs
    with RecordedRun(home, lambda: None) as previous:
        assert previous["ended"] is None and "did not end cleanly (killed or crashed)" in previous_run_text(previous)


def test_start_line_says_version_config_home_and_how_the_last_run_ended(tmp_path, caplog):
    previous = {"pid": 4242, "started_at": 0.0, "ended": None}
    line = start_line("0.1.0", "/h/config.yaml with --initial-peer", tmp_path, previous)
    assert line.startswith(f"swarmnode 0.1.0 starting: config /h/config.yaml with --initial-peer; home {tmp_path}; ")
    assert re.search(r"the previous run \(pid 4242, started \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\) did not end cleanly "
                     r"\(killed or crashed\)$", line)
    assert previous_run_text(None) == "no earlier run recorded in this home"
    assert previous_run_text({"ended": "cleanly"}) == "the previous run ended cleanly"
    assert previous_run_text({"ended": "failed: x"}) == "the previous run stopped on an error (failed: x)"
    with caplog.at_level(logging.INFO, logger="swarmnode"):
        log_start("0.1.0", "defaults", tmp_path, previous)
        log_start("0.1.0", "defaults", tmp_path, {"ended": "cleanly"})
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.INFO]  # an unclean end stands out


def test_progress_loop_logs_one_line_per_interval(caplog):
    async def a_while():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(progress_loop(lambda: status(), 0.05), timeout=0.28)

    with caplog.at_level(logging.INFO, logger="swarmnode"):
        asyncio.run(a_while())
    lines = [r.getMessage() for r in caplog.records]
    assert 4 <= len(lines) <= 5 and set(lines) == {"summary: state running; no model; peers 0"}


def test_a_crash_is_one_line_on_the_console_naming_the_file_that_has_the_traceback(tmp_path, capsys, restored_logging):
    path = tmp_path / "node.log"
    setup_logging("INFO", path)

    async def loop_that_fails():
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(asyncio.sleep(0))
            tasks.create_task(asyncio.to_thread(int, "not a number"))

    try:
        asyncio.run(loop_that_fails())
    except Exception as e:  # noqa: BLE001 - what run_daemon catches
        assert one_line(e) == "ValueError: invalid literal for int() with base 10: 'not a number'"
        log_crash(e, "the daemon", path)
    console = capsys.readouterr().err.strip()
    assert console.endswith("ERROR swarmnode: the daemon crashed: ValueError: invalid literal for int() with base 10: "
                            f"'not a number' (traceback in {path})") and "\n" not in console
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and "ExceptionGroup: unhandled errors in a TaskGroup" in text

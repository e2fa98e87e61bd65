"""Commands quoted in README.md and docs/ still run: every `swarmnode ...` command's subcommand
answers --help and knows every option the quote uses; every quoted script and `python -m`
module exists and answers --help (the scripts in one child process, so torch is imported once)
and knows the quoted options; every quoted shell script exists and is executable; every
repository path the pages name exists."""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmnode.cli.app import app

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PYTHON_PREFIX = re.compile(r"^(?:\S*/)?python3?\s+")
SCRIPT = re.compile(r"^(?:\./)?(scripts/\S+\.(?:py|sh))(\s.*)?$")
MODULE = re.compile(r"^-m\s+(swarmnode(?:\.\w+)*)(\s.*)?$")


def quoted_lines() -> list[tuple[str, str]]:
    """(page, command line) for every line of a fenced code block (continuations joined, a
    leading `$ ` and trailing comments dropped) and every inline code span."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(ROOT))
        for block in re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, flags=re.MULTILINE | re.DOTALL):
            for line in block.replace("\\\n", " ").splitlines():
                found.append((name, line.strip()))
        prose = re.sub(r"^\s*```[^\n]*\n.*?^\s*```", "", text, flags=re.MULTILINE | re.DOTALL)
        found += [(name, span.strip()) for span in re.findall(r"`([^`\n]+)`", prose)]
    out = []
    for name, line in found:
        line = line.removeprefix("$ ")
        line = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
        if line:
            out.append((name, line))
    return out


def options(args: str) -> set[str]:
    return {a.split("=")[0] for a in shlex.split(args or "") if re.match(r"^--[a-z]", a)}


def commands() -> tuple[dict[tuple[str, ...], set[str]], dict[str, set[str]], set[str]]:
    """swarmnode subcommand paths, scripts and modules (with the options quoted for them), and
    shell scripts."""
    cli: dict[tuple[str, ...], set[str]] = {}
    python: dict[str, set[str]] = {}
    shell: set[str] = set()
    for _, line in quoted_lines():
        words = line.split()
        if words[0] == "source" or "/" in words[0] and not words[0].startswith(("./scripts/", "scripts/", ".venv/")):
            continue
        if words[0] == "swarmnode" and len(words) > 1 and re.match(r"^[a-z]", words[1]):
            path = tuple(w for w in _leading_words(words[1:]))
            cli.setdefault(path, set()).update(options(" ".join(words[1 + len(path):])))
            continue
        rest = PYTHON_PREFIX.sub("", line) if PYTHON_PREFIX.match(line) else line
        if m := SCRIPT.match(rest):
            path = m.group(1)
            if path.endswith(".sh"):
                shell.add(path)
            else:
                python.setdefault(path, set()).update(options(m.group(2)))
        elif PYTHON_PREFIX.match(line) and (m := MODULE.match(rest)):
            python.setdefault("-m " + m.group(1), set()).update(options(m.group(2)))
    return cli, python, shell


def _leading_words(words: list[str]) -> list[str]:
    """The subcommand path: words up to the first option or argument-looking word."""
    path = []
    for w in words:
        if not re.match(r"^[a-z][a-z-]*$", w) or len(path) == 2:
            break
        path.append(w)
    return path


CLI, PYTHON, SHELL = commands()


def test_the_pages_quote_commands():
    assert ("run",) in CLI and ("status",) in CLI and ("swarm", "local") in CLI
    assert "scripts/experiments/sapo_experiment.py" in PYTHON
    assert {"scripts/demo.sh", "scripts/test.sh"} <= SHELL


@pytest.mark.parametrize("path", sorted(CLI), ids=" ".join)
def test_swarmnode_command_answers_help(path):
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    missing = [o for o in sorted(CLI[path]) if o not in result.output]
    assert missing == [], f"swarmnode {' '.join(path)} has no {missing}"


# Runs each script's `--help` as `python script --help` would, in one process: the script's own
# folder first on sys.path (sibling imports), its output captured, SystemExit(0) expected.
DRIVER = r"""
import contextlib, io, json, runpy, sys
results = {}
for target in sys.argv[1:]:
    out = io.StringIO()
    code = 0
    saved = list(sys.path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            if target.startswith("-m "):
                sys.argv = [target[3:], "--help"]
                runpy.run_module(target[3:], run_name="__main__", alter_sys=True)
            else:
                sys.argv = [target, "--help"]
                sys.path.insert(0, target.rsplit("/", 1)[0])
                runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:
        code, _ = 1, out.write(f"{type(e).__name__}: {e}")
    sys.path[:] = saved
    results[target] = [code, out.getvalue()]
print("RESULTS" + json.dumps(results))
"""

RESULTS: dict[str, list] = {}


def help_of(target: str) -> tuple[int, str]:
    if not RESULTS:
        env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               "COLUMNS": "200", "SWARMNODE_BEND": "sign_flip:1"}
        proc = subprocess.run([sys.executable, "-c", DRIVER, *sorted(PYTHON)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=240)
        assert "RESULTS" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
        RESULTS.update(json.loads(proc.stdout.split("RESULTS", 1)[1]))
    code, output = RESULTS[target]
    return code, output


@pytest.mark.parametrize("target", sorted(PYTHON))
def test_script_answers_help(target):
    if not target.startswith("-m "):
        assert (ROOT / target).is_file(), f"{target} does not exist"
    code, output = help_of(target)
    assert code == 0, output[-2000:]
    assert "usage" in output.lower(), output[-2000:]
    missing = [o for o in sorted(PYTHON[target]) if o not in output]
    assert missing == [], f"{target} has no {missing}"


@pytest.mark.parametrize("path", sorted(SHELL))
def test_shell_script_exists(path):
    script = ROOT / path
    assert script.is_file() and os.access(script, os.X_OK), f"{path} is missing or not executable"
    subprocess.run(["bash", "-n", str(script)], check=True)


def named_paths() -> set[tuple[str, str]]:
    """(page, path) for every repository path a page names: scripts/, tests/, swarmnode/,
    configs/, protocols/ and docs/ paths with a file suffix, and links to files."""
    found = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = str(page.relative_to(ROOT))
        for m in re.finditer(r"(?<![\w/.-])((?:scripts|tests|swarmnode|configs|protocols|docs)/[\w./-]*\w\.(?:py|sh|md|yaml|json|jsonl|png|proto))\b", text):
            found.add((name, m.group(1)))
        for m in re.finditer(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            found.add((name, str((page.parent / m.group(1)).resolve().relative_to(ROOT))))
    return found


def test_named_paths_exist():
    missing = sorted(f"{page}: {path}" for page, path in named_paths()
                     if not (ROOT / path).exists() and "*" not in path)
    assert missing == []

